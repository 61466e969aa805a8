//! `quiclab reproduce`: run a seed study's grid of scenarios and tabulate it next to the paper.
//!
//! A study is one combined sweep (see `reproduce/combine.rs`) run by the experiment library
//! like `quiclab sim`, always with resume on: a re-run with the same `--out` skips finished runs, and
//! `--full` after the quick default adds repetitions to the same directory.

#[path = "reproduce/combine.rs"]
mod combine;
#[path = "reproduce/emu.rs"]
mod emu_engine;
#[path = "reproduce/studies.rs"]
pub(crate) mod studies;
#[path = "reproduce/table.rs"]
mod table;

use std::path::{Path, PathBuf};

use clap::builder::PossibleValuesParser;
use clap::Args;
use experiment::files::write_atomic;
use report::ResultsStore;

use crate::exit::{self, Exit};
use crate::{interrupt, sweep};

/// File names of the study's table inside its results directory.
pub const TABLE_MD: &str = "table.md";
/// See [`TABLE_MD`].
pub const TABLE_CSV: &str = "table.csv";

/// Options of `quiclab reproduce`.
#[derive(Debug, Clone, Args)]
pub struct ReproduceArgs {
    /// Studies to run (default: all).
    #[arg(value_name = "STUDY", value_parser = PossibleValuesParser::new(studies::names()))]
    pub studies: Vec<String>,
    /// Publication-grade repetitions (the study's full count, at least 20 per point) instead of
    /// the quick default.
    #[arg(long)]
    pub full: bool,
    /// Results directory of the study (default: `results/reproduce/<study>/`); one study only.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Parallel runs (default: all cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Repetitions per point, overriding the quick and full counts (for tests and trials).
    #[arg(long, hide = true)]
    pub reps: Option<u32>,
    /// Run only these experiments of the study (repeatable).
    #[arg(long, hide = true, value_name = "EXPERIMENT")]
    pub only: Vec<String>,
    /// Override a key in every scenario of the study, e.g. `--set flow.size=100kB` (repeatable).
    #[arg(long = "set", hide = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Accepted and ignored: reproduce always resumes. The interrupt message of a sweep suggests
    /// re-running with `--resume`, and that command must work.
    #[arg(long, hide = true)]
    pub resume: bool,
    /// Engine: the simulator, or the real-time emulator (root; points it cannot run as
    /// specified are left out and named; default directory `results/reproduce/<study>-emu/`).
    #[arg(long, value_enum, default_value_t)]
    pub engine: emu_engine::EngineArg,
}

/// Runs `quiclab reproduce`.
pub fn run(args: &ReproduceArgs) -> anyhow::Result<Exit> {
    let mut chosen: Vec<&'static studies::Study> = Vec::new();
    for name in &args.studies {
        // clap already rejected unknown names (exit 2, listing the allowed ones).
        if let Some(s) = studies::find(name).filter(|s| !chosen.iter().any(|c| c.name == s.name)) {
            chosen.push(s);
        }
    }
    if chosen.is_empty() {
        chosen = studies::STUDIES.iter().collect();
    }
    if args.out.is_some() && chosen.len() > 1 {
        eprintln!("error: --out names one study's directory; run the studies one at a time");
        return Ok(exit::BAD_INPUT);
    }
    let mut worst = exit::SUCCESS;
    for study in chosen {
        let code = run_study(args, study)?;
        if code == exit::INTERRUPTED || code == exit::BAD_INPUT {
            return Ok(code);
        }
        if code != exit::SUCCESS {
            worst = code;
        }
    }
    Ok(worst)
}

/// Runs one study into its directory, then writes and prints its table.
fn run_study(args: &ReproduceArgs, study: &'static studies::Study) -> anyhow::Result<Exit> {
    let Some(experiments) = select(study, &args.only) else {
        let allowed: Vec<&str> = study.experiments.iter().map(|e| e.name).collect();
        eprintln!(
            "error: --only: unknown experiment of {}; allowed: {}",
            study.name,
            allowed.join(", ")
        );
        return Ok(exit::BAD_INPUT);
    };
    let reps = args.reps.or_else(|| args.full.then_some(study.full_reps));
    let mut combined = match combine::combine(study, &experiments, &args.set, reps) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    // Accepted input that is probably not what was meant, as `quiclab sim` prints it.
    for w in &combined.loaded.warnings {
        eprintln!("warning: {w}");
    }
    let emu = args.engine == emu_engine::EngineArg::Emu;
    let screened = if emu {
        emu_engine::keep_runnable(&mut combined)
    } else {
        emu_engine::Screened::default()
    };
    for line in &screened.skipped {
        eprintln!("not run in the emulator: {line}");
    }
    let dir = if emu {
        format!("{}-emu", study.name)
    } else {
        study.name.to_string()
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results").join("reproduce").join(&dir));
    let runs = combined.loaded.runs();
    eprintln!(
        "{}: {} points × {} repetitions = {} runs into {}",
        study.name,
        combined.loaded.points.len(),
        combined.loaded.reps,
        runs.len(),
        out.display()
    );
    let sweep = experiment::Sweep {
        loaded: &combined.loaded,
        out: &out,
        resume: true,
        // Hundreds of runs' time series would cost disk and the table does not use them.
        series: false,
    };
    let code = if emu {
        let engine = emu_engine::engine()?;
        sweep::run(
            &sweep,
            &engine,
            &experiment::Sequential,
            interrupt::requested,
            false,
        )?
    } else {
        let threads = experiment::Threads::new(args.jobs.map(usize::from));
        let engine = experiment::SimEngine::default();
        sweep::run(&sweep, &engine, &threads, interrupt::requested, false)?
    };
    if code == exit::INTERRUPTED {
        return Ok(code);
    }
    // A run that failed is absent from results.jsonl; the table still shows the others, with
    // their count in the `runs` column.
    let stored = ResultsStore::open(&out)?.load()?;
    let summary = experiment::summary::rows(&combined.loaded, &runs, &stored);
    let reps = combined.loaded.reps;
    let (md, csv, incomplete) = if experiments.iter().any(|e| !e.columns.is_empty()) {
        let rows = table::metric_rows(&combined.info, &summary, &experiments);
        let md = format!(
            "## {} — {}\n\n{} repetitions per point; mean and 95% Student-t CI half-width over \
             the runs (a ratio column is the ratio of the means, without a CI); n/N = runs that \
             measured every column / runs attempted.\n\n{}",
            dir,
            study.title,
            reps,
            table::metric_markdown(&experiments, &rows, reps)
        );
        let incomplete = table::metric_incomplete(&rows, reps);
        (md, table::metric_csv(&experiments, &rows), incomplete)
    } else {
        let rows = table::rows(&combined.info, &summary);
        let md = format!(
            "## {} — {}\n\n{} repetitions per point; download time of the measured connection \
             (0-RTT: the second, resumed one), mean and 95% Student-t CI half-width over the n \
             runs that completed; n/N = runs that completed / runs attempted.\n\n{}",
            dir,
            study.title,
            reps,
            table::markdown(&rows, reps)
        );
        let incomplete = table::incomplete(&rows, reps);
        (md, table::csv(&rows), incomplete)
    };
    // Runs that did not complete are named, not silently left out of the means.
    for line in &incomplete {
        eprintln!("warning: {line}");
    }
    let md = md
        + &incomplete
            .iter()
            .map(|l| format!("\nWarning: {l}\n"))
            .collect::<String>();
    // What the emulator left out or only approximated, under the table.
    let md = md
        + &screened
            .skipped
            .iter()
            .map(|l| format!("\nNot run in the emulator: {l}\n"))
            .chain(
                screened
                    .approximated
                    .iter()
                    .map(|l| format!("\nApproximated in the emulator: {l}\n")),
            )
            .collect::<String>();
    let (md, code) = match validation_section(args, study)? {
        Some((text, passed)) => (
            format!("{md}\n{text}"),
            if passed { code } else { exit::FAILURE },
        ),
        None => (md, code),
    };
    write_atomic(&out.join(TABLE_MD), md.as_bytes())?;
    write_atomic(&out.join(TABLE_CSV), csv.as_bytes())?;
    println!("\n{md}");
    eprintln!(
        "table in {} and {}",
        out.join(TABLE_MD).display(),
        out.join(TABLE_CSV).display()
    );
    write_figures_and_report(&out)?;
    Ok(code)
}

/// Writes the study's figures (`figures/*.svg`) and `report.html` next to its table.
fn write_figures_and_report(out: &Path) -> anyhow::Result<()> {
    let d = figures::ResultsDir::open(out)?;
    let figs = figures::figures(&d, &figures::PlotOptions::default())?;
    let dir = out.join(figures::FIGURES_DIR);
    figures::write_figures(&dir, &figs)?;
    let report = figures::write_report(out)?;
    eprintln!(
        "{} figure(s) in {}; report in {}",
        figs.len(),
        dir.display(),
        report.display()
    );
    Ok(())
}

/// The study's validation cases (the paper's validation figures), run on the quick grid or with
/// `--full` the full one, as a Markdown section and whether every point passed; `None` when the
/// study has none or `--only` picked experiments.
fn validation_section(
    args: &ReproduceArgs,
    study: &'static studies::Study,
) -> anyhow::Result<Option<(String, bool)>> {
    if study.validation.is_empty() || !args.only.is_empty() {
        return Ok(None);
    }
    let grid = if args.full {
        validate::Grid::Full
    } else {
        validate::Grid::Quick
    };
    let cases: Vec<String> = study.validation.iter().map(|c| (*c).to_string()).collect();
    eprintln!(
        "{}: validation cases {} ({} grid)",
        study.name,
        cases.join(", "),
        if args.full { "full" } else { "quick" }
    );
    let progress = crate::progress::Counter::new("validate");
    let threads = experiment::Threads::new(args.jobs.map(usize::from));
    let report = validate::run(grid, &cases, &threads, &progress)?;
    let text = format!(
        "### Validation figures (`quiclab validate{} --case {}`)\n\n```\n{}```\n",
        if args.full { "" } else { " --quick" },
        cases.join(" --case "),
        report.render()
    );
    Ok(Some((text, report.passed())))
}

/// The experiments named by `only` (all when empty), in study order; `None` if a name is unknown.
fn select(
    study: &'static studies::Study,
    only: &[String],
) -> Option<Vec<&'static studies::Experiment>> {
    if only
        .iter()
        .any(|o| !study.experiments.iter().any(|e| e.name == o))
    {
        return None;
    }
    Some(
        study
            .experiments
            .iter()
            .filter(|e| only.is_empty() || only.iter().any(|o| o == e.name))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_keeps_study_order_and_rejects_unknown_names() {
        let s = studies::find("seed003").expect("registered");
        let got = select(s, &["shared".into(), "bernoulli".into()]).expect("known names");
        let names: Vec<&str> = got.iter().map(|e| e.name).collect();
        assert_eq!(names, ["bernoulli", "shared"]);
        assert_eq!(select(s, &[]).map(|v| v.len()), Some(s.experiments.len()));
        assert!(select(s, &["nope".into()]).is_none());
    }
}
