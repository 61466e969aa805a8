//! The runner: a scenario into a results directory, a list of jobs into memory, or one run.
//!
//! Layout of a results directory: `results.jsonl` (one line per run, in run order once
//! finished), `series/<id>.csv`, `summary.csv` and `sweep.json` (what the results were computed
//! from).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use report::{ResultsStore, SummaryRow};
use scenario::model::{RunSpec, SweepPoint};
use scenario::LoadedScenario;

use crate::engine::{run_catching, Engine, EngineError, RunOutputs};
use crate::error::{chain, ExperimentError};
use crate::executor::{Executor, Job, Stop};
use crate::files::{create_dir, write_atomic};
use crate::lock::DirLock;
use crate::progress::Progress;
use crate::{manifest, summary};

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
    let runs = sweep.loaded.runs();
    // Held until this function returns: one sweep per directory (see `lock`).
    create_dir(sweep.out)?;
    let _lock = DirLock::acquire(sweep.out)?;
    let begun = begin(sweep, &runs)?;
    progress.begin(runs.len(), begun.skipped);
    let series_dir = sweep.series.then(|| sweep.out.join("series"));
    if let Some(dir) = &series_dir {
        create_dir(dir)?;
    }
    let several = runs.len() > 1;
    let jobs = begun
        .todo
        .iter()
        .map(|spec| {
            let point = sweep.loaded.points.get(spec.point).ok_or_else(|| {
                ExperimentError::MissingPoint {
                    id: spec.id.clone(),
                }
            })?;
            Ok(Job {
                point,
                spec,
                outputs: RunOutputs {
                    trace_id: several.then(|| spec.id.clone()),
                    series: sweep.series,
                    results_dir: Some(sweep.out.to_path_buf()),
                },
            })
        })
        .collect::<Result<Vec<_>, ExperimentError>>()?;

    let store = &begun.store;
    let failures = Mutex::new(Vec::new());
    let interrupted = std::sync::atomic::AtomicBool::new(false);
    let done = |i: usize, result: Result<results::Run, EngineError>| {
        let Some(job) = jobs.get(i) else { return };
        let error = match result {
            Ok(r) => record(store, series_dir.as_deref(), &r)
                .err()
                .map(|e| chain(&e)),
            Err(EngineError::Interrupted) => {
                interrupted.store(true, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            // A panic is a bug that the same spec repeats (the simulator is deterministic):
            // record it so the sweep's file says what happened and resuming skips the run.
            Err(e @ EngineError::Panicked(_)) => {
                let message = chain(&e);
                match record_error(store, job.spec, &message) {
                    Ok(()) => Some(message),
                    Err(r) => Some(format!("{message}; recording it failed: {}", chain(&r))),
                }
            }
            Err(e) => Some(chain(&e)),
        };
        progress.finished(&job.spec.id, error.as_deref());
        if let Some(message) = error {
            failures.lock().unwrap_or_else(|p| p.into_inner()).push((
                i,
                Failure {
                    id: job.spec.id.clone(),
                    recorded: store
                        .errors()
                        .is_ok_and(|e| e.iter().any(|(id, _)| *id == job.spec.id)),
                    message,
                },
            ));
        }
    };
    executor.execute(engine, &jobs, stop, &done)?;
    progress.end();

    if stop() || interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        let ids: BTreeSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        let complete = store
            .completed_ids()?
            .iter()
            .filter(|id| ids.contains(id.as_str()))
            .count();
        return Ok(SweepOutcome::Interrupted {
            total: runs.len(),
            complete,
            results: store.path().to_path_buf(),
        });
    }
    // Run order, not finish order, so the file is the same for any executor.
    let order: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    store.finalize(&order)?;
    let rows = summary::write(sweep.out, sweep.loaded, &runs, store)?;
    let mut failures: Vec<Failure> = failures
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|(_, f)| f)
        .collect();
    // Runs skipped on resume because of an earlier error record still failed: say so.
    for (id, message) in store.errors()? {
        if order.contains(&id) && !failures.iter().any(|f| f.id == id) {
            failures.push(Failure {
                id,
                message,
                recorded: true,
            });
        }
    }
    let rank: std::collections::BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    failures.sort_by_key(|f| rank.get(f.id.as_str()).copied().unwrap_or(usize::MAX));
    Ok(SweepOutcome::Finished {
        total: runs.len(),
        failures,
        rows,
    })
}

/// Records one result: series first, then the results line, so a run that counts as complete
/// (its line exists) always has its series too.
fn record(
    store: &ResultsStore,
    series_dir: Option<&Path>,
    record: &results::Run,
) -> Result<(), ExperimentError> {
    if let Some(dir) = series_dir {
        write_atomic(
            &dir.join(format!("{}.csv", record.id)),
            record.series_csv().as_bytes(),
        )?;
    }
    let line = serde_json::to_value(record).map_err(|source| ExperimentError::Json {
        what: "cannot serialise the result".into(),
        source,
    })?;
    store.append(&line)?;
    Ok(())
}

/// Records that `spec` failed for good: a line with its identity and `message` under
/// [`report::store::ERROR_FIELD`] instead of measurements.
fn record_error(
    store: &ResultsStore,
    spec: &RunSpec,
    message: &str,
) -> Result<(), ExperimentError> {
    store.append(&serde_json::json!({
        "id": spec.id,
        "point": spec.point,
        "rep": spec.rep,
        "seed": spec.seed,
        (report::store::ERROR_FIELD): message,
    }))?;
    Ok(())
}

/// A results directory opened for a sweep.
struct Begun<'a> {
    store: ResultsStore,
    /// Runs not yet in the store, in run order.
    todo: Vec<&'a RunSpec>,
    /// Runs found complete (resumed).
    skipped: usize,
}

/// Opens the directory: refuses to mix with earlier results unless resuming, checks or writes
/// the manifest, and lists what is left to run.
fn begin<'a>(sweep: &Sweep<'_>, runs: &'a [RunSpec]) -> Result<Begun<'a>, ExperimentError> {
    let results = sweep.out.join(report::store::RESULTS_FILE);
    if !sweep.resume && has_results(&results)? {
        return Err(ExperimentError::AlreadyHasResults {
            dir: sweep.out.to_path_buf(),
        });
    }
    manifest::check_and_write(sweep.out, sweep.loaded, sweep.resume)?;
    let store = ResultsStore::open(sweep.out)?;
    let done = store.completed_ids()?;
    let todo: Vec<&RunSpec> = runs.iter().filter(|r| !done.contains(&r.id)).collect();
    let skipped = runs.len() - todo.len();
    Ok(Begun {
        store,
        todo,
        skipped,
    })
}

/// Whether `results.jsonl` exists and is not empty.
fn has_results(path: &Path) -> Result<bool, ExperimentError> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.len() > 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ExperimentError::io("cannot inspect", path)(e)),
    }
}

#[cfg(test)]
mod tests;
