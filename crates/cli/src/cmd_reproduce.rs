//! `quiclab reproduce`: run a seed study's grid of scenarios and tabulate it next to the paper.
//!
//! The study, its tables and its validation section are `studies::reproduce`; this maps the
//! flags, runs the sweep with the terminal's progress and Ctrl-C like `quiclab sim` (always with
//! resume on: a re-run with the same `--out` skips finished runs, and `--full` after the quick
//! default adds repetitions to the same directory) and prints what the library returns.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::Args;
use studies::reproduce::{self as lib, Emulator, Study};

use crate::emu_setup;
use crate::exit::{self, Exit};
use crate::{interrupt, sweep};

/// Which engine `quiclab reproduce` runs the study in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EngineArg {
    /// The deterministic simulator (all cores).
    #[default]
    Sim,
    /// The real-time emulator (root; one run at a time).
    Emu,
}

/// Options of `quiclab reproduce`.
#[derive(Debug, Clone, Args)]
pub struct ReproduceArgs {
    /// Studies to run (default: all).
    #[arg(value_name = "STUDY", value_parser = PossibleValuesParser::new(lib::names()))]
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
    /// Repetitions per point, overriding the quick and full counts (the validation grid is the
    /// quick one, or with `--full` the paper's, whatever this says).
    #[arg(long)]
    pub reps: Option<u32>,
    /// Run only these experiments of the study (repeatable; the validation cases are then
    /// left out).
    #[arg(long, value_name = "EXPERIMENT")]
    pub only: Vec<String>,
    /// Override a key in every scenario of the study, e.g. `--set flow.size=100kB` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Accepted and ignored: reproduce always resumes. The interrupt message of a sweep suggests
    /// re-running with `--resume`, and that command must work.
    #[arg(long, hide = true)]
    pub resume: bool,
    /// Engine: the simulator, or the real-time emulator (root; points it cannot run as
    /// specified are left out and named; default directory `results/reproduce/<study>-emu/`).
    #[arg(long, value_enum, default_value_t)]
    pub engine: EngineArg,
    /// Repetitions until the answer is clear (a study's `--full` may apply its own rule).
    #[command(flatten)]
    pub adaptive: crate::adaptive_args::AdaptiveArgs,
}

/// Runs `quiclab reproduce`.
pub fn run(args: &ReproduceArgs) -> anyhow::Result<Exit> {
    let mut chosen: Vec<&'static Study> = Vec::new();
    for name in &args.studies {
        // clap already rejected unknown names (exit 2, listing the allowed ones).
        if let Some(s) = lib::find(name).filter(|s| !chosen.iter().any(|c| c.name == s.name)) {
            chosen.push(s);
        }
    }
    if chosen.is_empty() {
        chosen = lib::STUDIES.iter().collect();
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

/// The emulator's pre-run check, as the library takes it.
fn emu_check(s: &scenario::model::Scenario) -> Result<Vec<String>, String> {
    emu::check_supported(s).map_err(|e| e.to_string())
}

/// Runs one study into its directory, then writes and prints its table.
fn run_study(args: &ReproduceArgs, study: &'static Study) -> anyhow::Result<Exit> {
    let options = lib::Options {
        full: args.full,
        reps: args.reps,
        only: args.only.clone(),
        set: args.set.clone(),
    };
    let emu = args.engine == EngineArg::Emu;
    let emulator = emu.then_some(Emulator {
        check: &emu_check,
        not_applied: emu::NOT_APPLIED,
    });
    let mut prepared = match lib::prepare(study, &options, emulator) {
        Ok(p) => p,
        Err(e @ lib::ReproduceError::UnknownExperiment { .. }) => {
            eprintln!("error: --only: {e}");
            return Ok(exit::BAD_INPUT);
        }
        Err(e @ lib::ReproduceError::Scenario(_)) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
        Err(e) => return Err(e.into()),
    };
    let loaded = &prepared.combined.loaded;
    // Accepted input that is probably not what was meant, as `quiclab sim` prints it.
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    for line in &prepared.screened.skipped {
        eprintln!("not run in the emulator: {line}");
    }
    let out = args.out.clone().unwrap_or_else(|| prepared.default_out());
    let rule = match args.adaptive.rule(loaded) {
        Ok(Some(rule)) => Some(rule),
        Ok(None) => prepared.full_rule(&options),
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    eprintln!(
        "{}: {} points × {} repetitions{} = {} runs into {}",
        study.name,
        loaded.points.len(),
        loaded.reps,
        if rule.is_some() {
            " (then more until the answer is clear)"
        } else {
            ""
        },
        loaded.runs().len(),
        out.display()
    );
    // The emulator runs one run at a time (real time on shared cores).
    let (engine, executor): (Box<dyn experiment::Engine>, Box<dyn experiment::Executor>) = if emu {
        (Box::new(emu_engine()?), Box::new(experiment::Sequential))
    } else {
        (
            Box::new(sim::SimEngine::default()),
            Box::new(experiment::Threads::new(args.jobs.map(usize::from))),
        )
    };
    let sweep = prepared.sweep(&out);
    let (code, point_reps) = match &rule {
        Some(rule) => {
            let (code, reps) = sweep::run_adaptive(
                &sweep,
                rule,
                engine.as_ref(),
                executor.as_ref(),
                interrupt::requested,
                false,
                sweep::OnFailure::RunsOnly,
            )?;
            (code, Some(reps))
        }
        None => (
            sweep::run(
                &sweep,
                engine.as_ref(),
                executor.as_ref(),
                interrupt::requested,
                false,
                sweep::OnFailure::RunsOnly,
            )?,
            None,
        ),
    };
    if code == exit::INTERRUPTED {
        return Ok(code);
    }
    if let Some(reps) = point_reps {
        prepared.set_point_reps(reps);
    }
    finish_study(args, &options, study, &prepared, &out, code)
}

/// Writes and prints the study's tables, figures and report from the runs in `out`; the exit
/// status is the sweep's `code`, or a failure when a validation figure failed.
fn finish_study(
    args: &ReproduceArgs,
    options: &lib::Options,
    study: &'static Study,
    prepared: &lib::Prepared,
    out: &std::path::Path,
    code: Exit,
) -> anyhow::Result<Exit> {
    let tables = prepared.tables(out)?;
    for line in &tables.incomplete {
        eprintln!("warning: {line}");
    }
    let validated = validation_section(args, options, study)?;
    let preface = tables.preface(validated.as_ref());
    let (md, code) = match &validated {
        Some(v) => (
            format!("{}\n{}", tables.markdown, v.markdown),
            if v.passed { code } else { exit::FAILURE },
        ),
        None => (tables.markdown.clone(), code),
    };
    let written = lib::write(
        study,
        out,
        &md,
        &tables.csv,
        &tables.figures,
        validated.as_ref(),
        &preface,
    )?;
    println!("\n{md}");
    eprintln!(
        "table in {} and {}",
        written.markdown.display(),
        written.csv.display()
    );
    eprintln!(
        "{} figure(s) in {}; report in {}",
        written.figures.1,
        written.figures.0.display(),
        written.report.display()
    );
    Ok(code)
}

/// The study's validation section, with the terminal's progress.
fn validation_section(
    args: &ReproduceArgs,
    options: &lib::Options,
    study: &'static Study,
) -> anyhow::Result<Option<lib::Validated>> {
    if study.validation.is_empty() || !args.only.is_empty() {
        return Ok(None);
    }
    eprintln!(
        "{}: validation cases {} ({} grid)",
        study.name,
        study.validation.join(", "),
        if args.full { "full" } else { "quick" }
    );
    let progress = crate::progress::Counter::new("validate");
    let threads = experiment::Threads::new(args.jobs.map(usize::from));
    Ok(lib::validation(study, options, &threads, &progress)?)
}

/// The emulator engine for a study (namespaces need root).
fn emu_engine() -> anyhow::Result<emu::EmuEngine> {
    anyhow::ensure!(
        crate::root::is_root(),
        "--engine emu needs root (network namespaces); the simulator runs without it"
    );
    emu_setup::install_stop_handlers()?;
    emu_setup::engine(emu_setup::Traces::default(), emu::WaitMode::Sleep)
}
