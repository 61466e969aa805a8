//! `quiclab emu`: run a scenario (or a sweep of it) in real time — namespaces, the userspace
//! link emulator, `quiclab serve` and `quiclab get` — into the same results store as `sim`.
//!
//! Runs are sequential (real time on shared cores: parallel runs would disturb each other).
//! Every invocation first removes what killed runs left behind (only what a dead run's lock
//! record proves quiclab's); Ctrl-C or SIGTERM tear the current run down and keep the finished
//! ones (`--resume` completes the sweep); the exit code is 130 after Ctrl-C, 143 after SIGTERM.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use experiment::Engine;
use scenario::model::RunSpec;
use scenario::LoadedScenario;

use crate::emu_setup;
use crate::exit::{self, Exit};
use crate::{interrupt, output, sweep};

/// Options of `quiclab emu`.
#[derive(Debug, Clone, Args)]
pub struct EmuArgs {
    /// Scenario file (TOML); optional with `--cleanup`.
    #[arg(required_unless_present = "cleanup")]
    pub scenario: Option<PathBuf>,
    /// `--set`, `--vary`, `--reps`, `--seed` (the seed drives the link models).
    #[command(flatten)]
    pub knobs: crate::cmd_sim::ScenarioKnobs,
    /// Results directory (default for a sweep: `results/<scenario name>-emu/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Skip runs already complete in DIR/results.jsonl.
    #[arg(long)]
    pub resume: bool,
    /// Machine-readable output on stdout: the run's JSON, or the summary rows of a sweep.
    #[arg(long)]
    pub json: bool,
    /// Capture the bottleneck into DIR (`client-side.pcap`, `server-side.pcap`; DIR/<run id>/
    /// with several runs).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// qlog (`.sqlog`, JSON-SEQ) of every QUIC connection into DIR (per run and endpoint
    /// subdirectories).
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// TLS key log for decrypting the captures (run id inserted with several runs).
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// Remove namespaces, interfaces and processes left by killed runs, then exit (unless a
    /// scenario is given too).
    #[arg(long)]
    pub cleanup: bool,
    /// How the forwarder waits for packets and delivery times.
    #[arg(long, value_enum, default_value = "sleep")]
    pub wait: WaitArg,
    /// Exit 0 even if some runs failed (a run without a result, or a flow that reported an
    /// error); they are still listed.
    #[arg(long)]
    pub allow_failures: bool,
    /// Repetitions until the answer is clear.
    #[command(flatten)]
    pub adaptive: crate::adaptive_args::AdaptiveArgs,
}

/// `--wait` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitArg {
    /// ppoll with SCHED_FIFO (measured best on shared cores).
    Sleep,
    /// Busy-poll on a pinned core (needs a core to itself).
    Spin,
}

/// Runs `quiclab emu`.
pub fn run(args: &EmuArgs) -> anyhow::Result<Exit> {
    emu_setup::clean_up_leftovers(!args.cleanup)?;
    let Some(file) = &args.scenario else {
        return Ok(exit::SUCCESS);
    };
    let loaded = match args.knobs.load(file) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let mut warned = std::collections::BTreeSet::new();
    for point in &loaded.points {
        match emu::check_supported(&point.scenario) {
            Ok(warnings) => {
                for w in warnings {
                    if warned.insert(w.clone()) {
                        eprintln!("warning: {w}");
                    }
                }
            }
            Err(e) => {
                eprintln!("error: {}: {e}", file.display());
                return Ok(exit::BAD_INPUT);
            }
        }
    }
    let rule = match args.adaptive.rule(&loaded) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    emu_setup::install_stop_handlers()?;
    let runs = loaded.runs();
    if runs.len() == 1 && args.out.is_none() && rule.is_none() {
        return single(args, &loaded, &runs[0]);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(format!("{}-emu", loaded.name)));
    sweep(args, &loaded, &out, rule.as_ref())
}

/// The emulator engine these options describe.
fn engine(args: &EmuArgs) -> anyhow::Result<emu::EmuEngine> {
    let traces = emu_setup::Traces {
        pcap: args.pcap.clone(),
        qlog: args.qlog.clone(),
        keylog: args.keylog.clone(),
    };
    let wait = match args.wait {
        WaitArg::Sleep => emu::WaitMode::Sleep,
        WaitArg::Spin => emu::WaitMode::Spin,
    };
    emu_setup::engine(traces, wait)
}

fn single(args: &EmuArgs, loaded: &LoadedScenario, spec: &RunSpec) -> anyhow::Result<Exit> {
    let point = loaded
        .points
        .get(spec.point)
        .with_context(|| format!("run {} refers to a missing sweep point", spec.id))?;
    let engine = engine(args)?;
    let outputs = experiment::RunOutputs::default();
    // A lone run's endpoint logs live in a private directory the emulator removes when the run
    // ends, whatever the outcome; `--out DIR` keeps them in DIR/emu/<run id>/.
    let keep_logs = "endpoint logs are removed with the run; rerun with --out DIR to keep them \
                     in DIR/emu/<run id>/";
    match engine.run(point, spec, &outputs) {
        Ok(record) => {
            if args.json {
                println!("{}", serde_json::to_string(&record)?);
            } else {
                print!(
                    "{}",
                    output::run_summary(&record, &output::Window::of(&point.scenario))
                );
            }
            let failed = record.flows.iter().any(|f| f.error.is_some());
            if failed {
                eprintln!("{keep_logs}");
                if args.allow_failures {
                    eprintln!(
                        "warning: run {} failed; exit status 0 (--allow-failures)",
                        spec.id
                    );
                    return Ok(exit::SUCCESS);
                }
                return Ok(exit::FAILURE);
            }
            Ok(exit::SUCCESS)
        }
        Err(experiment::EngineError::Interrupted) => {
            eprintln!(
                "{}; the emulated network and the run's files were removed",
                interrupt::stop_cause()
            );
            Ok(exit::stopped())
        }
        Err(e) => {
            eprintln!("error: run {} failed: {e} ({keep_logs})", spec.id);
            Ok(if args.allow_failures {
                exit::SUCCESS
            } else {
                exit::FAILURE
            })
        }
    }
}

/// A sweep: one run at a time (real time on shared cores), into `out`.
fn sweep(
    args: &EmuArgs,
    loaded: &LoadedScenario,
    out: &Path,
    rule: Option<&experiment::adaptive::Rule>,
) -> anyhow::Result<Exit> {
    let sweep = experiment::Sweep {
        loaded,
        out,
        resume: args.resume,
        // The emulator records no time series.
        series: false,
    };
    if let Some(rule) = rule {
        let (code, _) = sweep::run_adaptive(
            &sweep,
            rule,
            &engine(args)?,
            &experiment::Sequential,
            emu_setup::stop_requested,
            args.json,
            sweep::OnFailure::from_flag(args.allow_failures),
        )?;
        return Ok(code);
    }
    sweep::run(
        &sweep,
        &engine(args)?,
        &experiment::Sequential,
        emu_setup::stop_requested,
        args.json,
        sweep::OnFailure::from_flag(args.allow_failures),
    )
}
