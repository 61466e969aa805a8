//! `quiclab emu`: run a scenario (or a sweep of it) in real time — namespaces, the userspace
//! link emulator, `quiclab serve` and `quiclab get` — into the same results store as `sim`.
//!
//! Runs are sequential (real time on shared cores: parallel runs would disturb each other).
//! Every invocation first removes what killed runs left behind; Ctrl-C or SIGTERM tear the
//! current run down and keep the finished ones (`--resume` completes the sweep).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use scenario::model::RunSpec;
use scenario::LoadedScenario;
use serde_json::Value;

use crate::exit::{self, Exit};
use crate::progress::Progress;
use crate::{interrupt, output, summary, sweep, traces};

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
    /// qlog of every QUIC connection into DIR (per run and endpoint subdirectories).
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
}

/// `--wait` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitArg {
    /// ppoll with SCHED_FIFO (measured best on shared cores).
    Sleep,
    /// Busy-poll on a pinned core (needs a core to itself).
    Spin,
}

fn stop_requested() -> bool {
    interrupt::requested() || emu::term_requested()
}

/// Runs `quiclab emu`.
pub fn run(args: &EmuArgs) -> anyhow::Result<Exit> {
    let cleaned = emu::cleanup_stale().context("cannot clean up after earlier runs")?;
    if !cleaned.namespaces.is_empty() || cleaned.lock_files > 0 {
        eprintln!(
            "removed leftovers of killed runs: {} namespaces ({}), {} processes, {} lock files",
            cleaned.namespaces.len(),
            cleaned.namespaces.join(", "),
            cleaned.processes,
            cleaned.lock_files
        );
    } else if args.cleanup {
        eprintln!("nothing to clean up");
    }
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
    interrupt::install()?;
    emu::install_term_handler();
    let runs = loaded.runs();
    if runs.len() == 1 && args.out.is_none() {
        return single(args, &loaded, &runs[0]);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(format!("{}-emu", loaded.name)));
    sweep(args, &loaded, &runs, &out)
}

/// Engine options of one run; `work` holds the endpoints' logs and statistics.
fn run_options(
    args: &EmuArgs,
    run_id: Option<&str>,
    work: PathBuf,
) -> anyhow::Result<emu::runner::RunOptions> {
    let per_run = |dir: &PathBuf| match run_id {
        Some(id) => dir.join(id),
        None => dir.clone(),
    };
    let keylog = match (&args.keylog, run_id) {
        (Some(f), Some(id)) => Some(traces::with_run_id(f, id)),
        (k, _) => k.clone(),
    };
    if let Some(parent) = keylog
        .as_ref()
        .and_then(|k| k.parent())
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    Ok(emu::runner::RunOptions {
        quiclab: std::env::current_exe().context("cannot locate the quiclab binary")?,
        work_dir: work,
        capture_dir: args.pcap.as_ref().map(per_run),
        keylog,
        qlog_dir: args.qlog.as_ref().map(per_run),
        stop: Some(stop_requested),
        wait: match args.wait {
            WaitArg::Sleep => emu::WaitMode::Sleep,
            WaitArg::Spin => emu::WaitMode::Spin,
        },
    })
}

/// The line stored in results.jsonl: the simulator's shape plus an `emu` object with the
/// forwarder's own counters.
fn result_line(run: &emu::runner::EmuRun) -> anyhow::Result<Value> {
    let mut line = serde_json::to_value(&run.result).context("cannot serialise the result")?;
    let fwd = &run.forwarder;
    if let Some(obj) = line.as_object_mut() {
        obj.insert(
            "emu".into(),
            serde_json::json!({
                "rx_frames": fwd.rx_frames,
                "malformed_frames": fwd.malformed_frames,
                "oversized_frames": fwd.oversized_frames,
                "non_ip_frames": fwd.non_ip_frames,
                "unroutable_frames": fwd.unroutable_frames,
                "tx_dropped": fwd.tx_dropped,
                "corrupt_delivered": fwd.corrupt_delivered,
                "capture_files": fwd.capture_files,
            }),
        );
    }
    Ok(line)
}

fn single(args: &EmuArgs, loaded: &LoadedScenario, spec: &RunSpec) -> anyhow::Result<Exit> {
    let point = loaded
        .points
        .get(spec.point)
        .with_context(|| format!("run {} refers to a missing sweep point", spec.id))?;
    let work = std::env::temp_dir().join(format!("quiclab-emu-{}", std::process::id()));
    let opts = run_options(args, None, work.clone())?;
    match emu::runner::run(point, spec, &opts) {
        Ok(run) => {
            if args.json {
                println!("{}", serde_json::to_string(&result_line(&run)?)?);
            } else {
                print!("{}", output::run_summary(&run.result));
            }
            let failed = run.result.flows.iter().any(|f| f.error.is_some());
            if failed {
                eprintln!("endpoint logs are in {}", work.display());
                return Ok(exit::FAILURE);
            }
            let _ = std::fs::remove_dir_all(&work);
            Ok(exit::SUCCESS)
        }
        Err(emu::EmuError::Interrupted) => {
            eprintln!("interrupted; the emulated network was removed");
            Ok(exit::INTERRUPTED)
        }
        Err(e) => {
            eprintln!(
                "error: run {} failed: {e} (endpoint logs in {})",
                spec.id,
                work.display()
            );
            Ok(exit::FAILURE)
        }
    }
}

fn sweep(
    args: &EmuArgs,
    loaded: &LoadedScenario,
    runs: &[RunSpec],
    out: &Path,
) -> anyhow::Result<Exit> {
    let sweep::Begun {
        store,
        todo,
        skipped,
    } = sweep::begin(out, loaded, runs, args.resume)?;
    let progress = Progress::new(runs.len(), skipped);
    let mut failures = Vec::new();
    for spec in todo {
        if stop_requested() {
            break;
        }
        let point = loaded
            .points
            .get(spec.point)
            .with_context(|| format!("run {} refers to a missing sweep point", spec.id))?;
        let opts = run_options(args, Some(&spec.id), out.join("emu").join(&spec.id))?;
        match emu::runner::run(point, spec, &opts) {
            Ok(run) => store.append(&result_line(&run)?)?,
            Err(emu::EmuError::Interrupted) => break,
            Err(e) => {
                progress.message(&format!("run {} failed: {e}", spec.id));
                failures.push(spec.id.clone());
            }
        }
        progress.finished();
    }
    progress.finish();
    if stop_requested() {
        let complete = store.completed_ids()?.len();
        eprintln!(
            "interrupted: {complete} of {} runs are in {}; add --resume to finish",
            runs.len(),
            store.path().display()
        );
        return Ok(exit::INTERRUPTED);
    }
    let order: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    store.finalize(&order)?;
    summary::write_and_print(out, loaded, runs, &store, args.json)?;
    eprintln!("results in {}", out.display());
    if failures.is_empty() {
        Ok(exit::SUCCESS)
    } else {
        eprintln!(
            "{} of {} runs failed ({}); they are not in results.jsonl, so --resume retries them",
            failures.len(),
            runs.len(),
            failures.join(", ")
        );
        Ok(exit::FAILURE)
    }
}
