//! `quiclab load paper`: a load-testing study's `paper.toml` beside the tables its sweeps wrote.
//!
//! A simulated study's tables come from `quiclab reproduce`, which compares them with the paper
//! itself. A load-testing study (seed 004) runs `quiclab load sweep` once per server instead, so
//! this command joins those tables to the paper's values: each `paper.toml` experiment `E` is
//! read from `DIR/E/table.csv` (a sweep: x = the rate, protocol = the HTTP version, metrics =
//! the titles of `table.md`'s columns, the mean latency with its batch-means interval) or from
//! `DIR/E.csv` (any table whose first column is x and second the protocol; its other column
//! headers are the metrics, without intervals). The comparison and its verdicts are
//! `studies::reproduce::paper`'s, as in every study report.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use studies::reproduce::paper::{self, Rows};

use crate::exit::{self, Exit};

/// The file the comparison is written to, in the results directory.
pub const PAPER_MD: &str = "paper.md";

/// The largest paper file or table read (a sweep's table is a few kB).
const MAX_TABLE_BYTES: u64 = 16 << 20;

/// Options of `quiclab load paper`.
#[derive(Debug, Clone, Args)]
pub struct PaperArgs {
    /// The study's `paper.toml` (e.g. `scenarios/studies/seed004/paper.toml`).
    paper: PathBuf,
    /// The directory the study's sweeps wrote: `E/table.csv` or `E.csv` per experiment `E`.
    dir: PathBuf,
}

/// The sweep table's columns as `paper.toml` metrics: its titles, the mean latency with the
/// column of its interval.
fn sweep_metrics() -> Vec<(&'static str, &'static str, Option<&'static str>)> {
    load::sweep::COLUMNS
        .iter()
        .filter(|(column, _)| !matches!(*column, "rate_per_s" | "http" | "mean_latency_ci95_ms"))
        .map(|(column, title)| {
            let ci = (*column == "mean_latency_ms").then_some("mean_latency_ci95_ms");
            (*title, *column, ci)
        })
        .collect()
}

/// The rows of experiment `name` found under `dir`, and the file they came from.
fn experiment_rows(dir: &std::path::Path, name: &str) -> anyhow::Result<Option<(Rows, PathBuf)>> {
    let read = |path: &std::path::Path| {
        fsutil::read_input_to_string_bounded(path, MAX_TABLE_BYTES)
            .with_context(|| format!("cannot read {}", path.display()))
    };
    let sweep = dir.join(name).join(load::sweep::TABLE_CSV);
    if sweep.is_file() {
        let csv = read(&sweep)?;
        let metrics = sweep_metrics();
        let rows = Rows::from_wide_csv(&csv, name, "rate_per_s", "http", &metrics);
        return Ok(Some((rows, sweep)));
    }
    let table = dir.join(format!("{name}.csv"));
    if table.is_file() {
        let csv = read(&table)?;
        let header = Rows::csv_header(&csv);
        if header.len() < 3 {
            anyhow::bail!(
                "{}: needs an x column, a protocol column and at least one metric",
                table.display()
            );
        }
        let metrics: Vec<(&str, &str, Option<&str>)> = header[2..]
            .iter()
            .map(|h| (h.as_str(), h.as_str(), None))
            .collect();
        let rows = Rows::from_wide_csv(&csv, name, &header[0], &header[1], &metrics);
        return Ok(Some((rows, table)));
    }
    Ok(None)
}

/// Runs `quiclab load paper`.
pub fn run(args: &PaperArgs) -> anyhow::Result<Exit> {
    let text = fsutil::read_input_to_string_bounded(&args.paper, MAX_TABLE_BYTES)
        .with_context(|| format!("cannot read {}", args.paper.display()))?;
    let file = match paper::parse(&text, &args.paper.display().to_string()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let mut experiments: Vec<&str> = Vec::new();
    for v in &file.values {
        if !experiments.contains(&v.experiment.as_str()) {
            experiments.push(&v.experiment);
        }
    }
    let mut rows = Rows::default();
    let mut ran = Vec::new();
    for name in &experiments {
        match experiment_rows(&args.dir, name)? {
            Some((r, from)) => {
                eprintln!("{name}: {}", from.display());
                rows.extend(r);
                ran.push(*name);
            }
            None => eprintln!(
                "warning: experiment {name}: neither {} nor {} exists; its values are left out",
                args.dir.join(name).join(load::sweep::TABLE_CSV).display(),
                args.dir.join(format!("{name}.csv")).display()
            ),
        }
    }
    if ran.is_empty() {
        eprintln!(
            "error: {} holds no table of the paper's experiments ({})",
            args.dir.display(),
            experiments.join(", ")
        );
        return Ok(exit::BAD_INPUT);
    }
    let compared = paper::compare(&file, &ran, &rows, &|_| None);
    let md = format!(
        "{}\nThe sweeps run each rate once: the mean latency's interval is over one-second \
         batches of that attack (batch means), and the other columns have none.\n",
        paper::markdown(&file, &compared)
    );
    let out = args.dir.join(PAPER_MD);
    fsutil::write_atomic(&out, md.as_bytes())
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("{md}");
    eprintln!("comparison in {}", out.display());
    Ok(exit::SUCCESS)
}
