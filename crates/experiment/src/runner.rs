//! The runner: a scenario into a results directory, a list of jobs into memory, or one run.
//!
//! Layout of a results directory: `results.jsonl` (one line per run, in run order once
//! finished), `series/<id>.csv`, `summary.csv`, `results.parquet` and `series.parquet` (the
//! same results as typed columns, see `analysis::tabular`), `sweep.json` (what the results were
//! computed from) and, for one shard of a sweep, `shard.json`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use analysis::SummaryRow;
use scenario::model::{RunSpec, SweepPoint};
use scenario::LoadedScenario;

use crate::distributed::{OpenSweep, TaskOutcome};
use crate::error::{chain, ExperimentError};
use crate::executor::{Executor, Job, Stop};
use crate::progress::Progress;
use crate::shard::Shard;
use engine::{run_catching, Engine, EngineError, RunOutputs};

/// Runs one spec of one point with `engine`: one run spec in, one result out (a panic in the
/// engine comes back as [`EngineError::Panicked`]). With the
/// simulator this is a pure function of `point` and `spec` (and writes only the traces the
/// engine was configured for).
pub fn execute_one(
    engine: &dyn Engine,
    point: &SweepPoint,
    spec: &RunSpec,
    outputs: &RunOutputs,
) -> Result<results::Run, EngineError> {
    run_catching(engine, point, spec, outputs)
}

/// Runs `jobs` with `engine` on `executor` without any directory; the results come back in job
/// order whatever order the executor ran them in. For callers that analyse results themselves
/// (`validate`, `bench`, a Python session).
pub fn run_in_memory(
    engine: &dyn Engine,
    jobs: &[Job<'_>],
    executor: &dyn Executor,
    progress: &dyn Progress,
) -> Result<Vec<Result<results::Run, EngineError>>, ExperimentError> {
    progress.begin(jobs.len(), 0);
    let slots: Mutex<Vec<Option<Result<results::Run, EngineError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let done = |i: usize, result: Result<results::Run, EngineError>| {
        let error = result.as_ref().err().map(|e| chain(e));
        if let Some(job) = jobs.get(i) {
            progress.finished(&job.spec.id, error.as_deref());
        }
        let mut slots = slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = slots.get_mut(i) {
            *slot = Some(result);
        }
    };
    executor.execute(engine, jobs, &|| false, &done)?;
    progress.end();
    Ok(slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        // Nothing asked this executor to stop, so a job it never reported was abandoned.
        .map(|slot| slot.unwrap_or(Err(EngineError::Interrupted)))
        .collect())
}

/// A sweep into a results directory.
#[derive(Debug, Clone, Copy)]
pub struct Sweep<'a> {
    /// The scenario with its sweep points; its runs are `loaded.runs()`.
    pub loaded: &'a LoadedScenario,
    /// The results directory.
    pub out: &'a Path,
    /// Skip runs already complete in `out`; without it, a directory holding results is refused.
    pub resume: bool,
    /// Record time series into `out/series/<id>.csv`.
    pub series: bool,
}

/// A run that produced no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The run's id.
    pub id: String,
    /// Why, with the error's causes.
    pub message: String,
    /// The run has an error record in `results.jsonl` (the engine panicked): resuming skips it.
    /// Otherwise the run has no line at all and resuming retries it.
    pub recorded: bool,
}

/// How a sweep ended.
#[derive(Debug, Clone)]
pub enum SweepOutcome {
    /// Every run was attempted; the store is finalised and `summary.csv` written.
    Finished {
        /// Runs of the sweep.
        total: usize,
        /// Runs that failed, in run order.
        failures: Vec<Failure>,
        /// The summary rows written to `summary.csv`.
        rows: Vec<SummaryRow>,
    },
    /// A stop was requested: no new runs started; every completed one is in the store, which
    /// is left unfinalised (resuming completes and finalises it).
    Interrupted {
        /// Runs of the sweep.
        total: usize,
        /// Runs of this sweep complete in the store.
        complete: usize,
        /// Path of `results.jsonl`.
        results: PathBuf,
    },
}

/// Runs `sweep` with `engine` on `executor`: opens the directory (refusing or resuming earlier
/// results, checking the manifest), executes the runs not yet done, appends each result as it
/// arrives, then finalises the store in run order and writes `summary.csv`. `stop` is polled
/// before each run starts.
pub fn run_sweep(
    sweep: &Sweep<'_>,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: &Stop<'_>,
    progress: &dyn Progress,
) -> Result<SweepOutcome, ExperimentError> {
    run_sweep_shard(sweep, None, engine, executor, stop, progress)
}

/// [`run_sweep`] for the runs of one shard only (`quiclab sim --shard i/n`; see
/// [`crate::shard`]); `None` runs the whole sweep. The directory is opened, recorded and
/// finalised by [`OpenSweep`], the same code a remote executor uses.
pub fn run_sweep_shard(
    sweep: &Sweep<'_>,
    shard: Option<Shard>,
    engine: &dyn Engine,
    executor: &dyn Executor,
    stop: &Stop<'_>,
    progress: &dyn Progress,
) -> Result<SweepOutcome, ExperimentError> {
    let open = OpenSweep::open_shard(sweep, shard)?;
    progress.begin(open.total(), open.resumed());
    let todo = open.pending_indices(None);
    let jobs = todo
        .iter()
        .map(|&k| {
            let (point, spec) = open
                .job_parts(k)
                .ok_or_else(|| ExperimentError::MissingPoint {
                    id: format!("run {k}"),
                })?;
            Ok(Job {
                point,
                spec,
                outputs: open.outputs(spec),
            })
        })
        .collect::<Result<Vec<_>, ExperimentError>>()?;

    let interrupted = AtomicBool::new(false);
    let done = |i: usize, result: Result<results::Run, EngineError>| {
        let (Some(job), Some(&k)) = (jobs.get(i), todo.get(i)) else {
            return;
        };
        if matches!(result, Err(EngineError::Interrupted)) {
            // Abandoned, not failed: no record, and the sweep ends resumable.
            interrupted.store(true, Ordering::SeqCst);
            return;
        }
        let (message, _) = open.record_at(k, TaskOutcome::from_result(result));
        progress.finished(&job.spec.id, message.as_deref());
    };
    executor.execute(engine, &jobs, stop, &done)?;
    progress.end();
    drop(jobs);
    let stopped = stop() || interrupted.load(Ordering::SeqCst);
    open.close(!stopped)
}

#[cfg(test)]
mod tests;
