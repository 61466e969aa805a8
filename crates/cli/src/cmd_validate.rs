//! `quiclab validate`: seed 001's analytic validation cases; non-zero exit on any failure.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::exit::{self, Exit};
use crate::progress::Counter;

/// Options of `quiclab validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Run the reduced grid of the test suite instead of the full one.
    #[arg(long)]
    quick: bool,
    /// Only these cases (quinn: link-bandwidth, mathis, …; TCP model: tcp-…; QUIC research model:
    /// model-…, model-vs-quic); repeatable.
    #[arg(long = "case", value_parser = clap::builder::PossibleValuesParser::new(studies::validate::CASES))]
    cases: Vec<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the table as Markdown to this file.
    #[arg(long)]
    markdown: Option<PathBuf>,
}

/// Runs the suite and returns 0 when every point is inside its tolerance, 1 otherwise.
pub fn run(args: &ValidateArgs) -> anyhow::Result<Exit> {
    if let Some(j) = args.jobs {
        anyhow::ensure!(j >= 1, "--jobs must be at least 1");
    }
    let grid = if args.quick {
        studies::validate::Grid::Quick
    } else {
        studies::validate::Grid::Full
    };
    let progress = Counter::new("validate");
    let report = studies::validate::run(
        grid,
        &args.cases,
        &experiment::Threads::new(args.jobs),
        &progress,
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.render());
    }
    if let Some(path) = &args.markdown {
        let body = format!("```\n{}```\n", report.render());
        fsutil::write_atomic(path, body.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(if report.passed() {
        exit::SUCCESS
    } else {
        exit::FAILURE
    })
}
