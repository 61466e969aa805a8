//! The seam for executors outside this process: a Dask cluster, the shards of a cluster job.
//!
//! A sweep is opened once ([`OpenSweep::open`]: directory, lock, resume and manifest checks);
//! its pending runs come out as self-contained [`Task`]s that serialise to JSON, so a worker on
//! another machine can run one with [`execute_task`] and send back a [`TaskOutcome`] (also
//! JSON). Outcomes are recorded as they arrive, in any order and any number of times
//! ([`OpenSweep::record`] keeps the first outcome of a run), and [`OpenSweep::finish`]
//! finalises the store in run order — so `results.jsonl` is byte-identical to a local
//! [`crate::run_sweep`], which is itself built on this type (one home for open, record and
//! finalise).
//!
//! Identity across machines holds because the simulator is a pure function of point and spec,
//! and because every float crosses JSON exactly: serde_json prints the shortest representation
//! that reads back to the same bits, and the workspace enables its `float_roundtrip` parser.

use results::layout::ResultsLayout;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use results::store::ResultsStore;
use scenario::model::{RunSpec, SweepPoint};
use scenario::LoadedScenario;
use serde::{Deserialize, Serialize};

use crate::error::{chain, ExperimentError};
use crate::files::{create_dir, write_atomic};
use crate::lock::DirLock;
use crate::runner::{Failure, Sweep, SweepOutcome};
use crate::shard::{Shard, ShardManifest};
use crate::{manifest, shard, summary};
use engine::{run_catching, Engine, EngineError, RunOutputs};

/// One job, self-contained and serialisable (serde JSON): what a remote worker needs to run it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Task {
    /// Position of the run in the sweep's run order (`LoadedScenario::runs`).
    pub index: usize,
    /// The scenario as resolved for the run's sweep point.
    pub point: SweepPoint,
    /// Id, point, repetition and seed of the run.
    pub spec: RunSpec,
    /// Trace naming and series recording for the run.
    pub outputs: RunOutputs,
}

/// What a worker sends back (serde JSON).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum TaskOutcome {
    /// The run's result. Its time series travel with it (in JSON under `series`), although
    /// `results::Run` leaves them out of its own JSON (they go to `series/<id>.csv`).
    Done(#[serde(with = "with_series")] Box<results::Run>),
    /// The engine panicked (the panic's message): a bug the same task repeats, so the run gets
    /// an error record and resuming skips it.
    Panicked(String),
    /// The run produced no result (the error with its causes); resuming retries it.
    Failed(String),
}

impl TaskOutcome {
    /// The outcome of an engine's result (`Interrupted` counts as failed: the run is retried).
    pub fn from_result(result: Result<results::Run, EngineError>) -> TaskOutcome {
        match result {
            Ok(run) => TaskOutcome::Done(Box::new(run)),
            Err(EngineError::Panicked(message)) => TaskOutcome::Panicked(message),
            Err(e) => TaskOutcome::Failed(chain(&e)),
        }
    }
}

/// `results::Run` with its series, for [`TaskOutcome::Done`].
mod with_series {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    struct Out<'a> {
        run: &'a results::Run,
        series: &'a [results::SeriesRow],
    }

    #[derive(Deserialize)]
    struct In {
        run: results::Run,
        #[serde(default)]
        series: Vec<results::SeriesRow>,
    }

    pub fn serialize<S: Serializer>(run: &results::Run, s: S) -> Result<S::Ok, S::Error> {
        // (`&Box<Run>` derefs to `&Run` at the call site serde generates.)
        Out {
            run,
            series: &run.series,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Box<results::Run>, D::Error> {
        let In { mut run, series } = In::deserialize(d)?;
        run.series = series;
        Ok(Box::new(run))
    }
}

/// Runs one task with the engine (simulator: pure; same outcome wherever it runs). A panic in
/// the engine comes back as [`TaskOutcome::Panicked`].
pub fn execute_task(engine: &dyn Engine, task: &Task) -> TaskOutcome {
    TaskOutcome::from_result(run_catching(engine, &task.point, &task.spec, &task.outputs))
}

/// A sweep opened for execution: same directory, lock, resume and manifest checks as
/// [`crate::run_sweep`]; results recorded as they arrive; finalised in run order
/// (`results.jsonl` byte-identical to a local `run_sweep` of the same scenario).
///
/// It borrows the scenario ([`OpenSweep::open`]); [`OpenSweep::into_owned`] copies it for a
/// holder that must own everything (a Python object). The directory stays locked until the
/// value is dropped or finished.
#[derive(Debug)]
pub struct OpenSweep<'a> {
    loaded: Cow<'a, LoadedScenario>,
    out: PathBuf,
    /// Per point: whether its runs record time series (all with `Sweep::series`, else the
    /// points a declared series figure draws).
    series: Vec<bool>,
    shard: Option<Shard>,
    /// Every run of the sweep, in run order (all shards).
    runs: Vec<RunSpec>,
    /// Position of each run id in `runs`.
    rank: std::collections::HashMap<String, usize>,
    /// Runs already complete in the store at open (resumed), of this shard.
    resumed: usize,
    store: ResultsStore,
    state: Mutex<State>,
    _lock: DirLock,
}

/// What has been recorded since the sweep was opened.
#[derive(Debug, Default)]
struct State {
    /// Ids with a line in the store (a result or an error record): later outcomes are ignored.
    complete: BTreeSet<String>,
    /// Runs that failed, by run index (a later success removes the entry).
    failures: BTreeMap<usize, Failure>,
}

impl<'a> OpenSweep<'a> {
    /// Opens `sweep`'s directory for every run of the sweep.
    pub fn open(sweep: &Sweep<'a>) -> Result<OpenSweep<'a>, ExperimentError> {
        OpenSweep::open_shard(sweep, None)
    }

    /// Opens `sweep`'s directory for the runs of `shard` only (all runs with `None`): the
    /// directory records which shard it holds (`shard.json`), and finishing finalises and
    /// summarises that shard's runs.
    pub fn open_shard(
        sweep: &Sweep<'a>,
        shard: Option<Shard>,
    ) -> Result<OpenSweep<'a>, ExperimentError> {
        let runs = sweep.loaded.runs();
        create_dir(sweep.out)?;
        // Held until the value is dropped: one sweep per directory (see `lock`).
        let lock = DirLock::acquire(sweep.out)?;
        let results = ResultsLayout::new(sweep.out).results();
        if !sweep.resume && has_results(&results)? {
            return Err(ExperimentError::AlreadyHasResults {
                dir: sweep.out.to_path_buf(),
            });
        }
        manifest::check_and_write(sweep.out, sweep.loaded, sweep.resume)?;
        manifest::write_declared_figures(sweep.out, sweep.loaded)?;
        let record = shard.map(|s| ShardManifest {
            shard: s.index,
            shards: s.count,
            reps: sweep.loaded.reps,
            runs: runs.len(),
        });
        shard::check_and_write(sweep.out, record.as_ref())?;
        let store = ResultsStore::open(sweep.out)?;
        let complete = store.completed_ids()?;
        let series: Vec<bool> = sweep
            .loaded
            .points
            .iter()
            .map(|p| {
                sweep.series
                    || p.scenario
                        .figures
                        .iter()
                        .any(|f| f.draws_series_of(&p.axes))
            })
            .collect();
        if series.contains(&true) {
            create_dir(&ResultsLayout::new(sweep.out).series_dir())?;
        }
        let resumed = runs
            .iter()
            .enumerate()
            .filter(|(k, r)| shard.is_none_or(|s| s.holds(*k)) && complete.contains(&r.id))
            .count();
        let rank = runs
            .iter()
            .enumerate()
            .map(|(k, r)| (r.id.clone(), k))
            .collect();
        Ok(OpenSweep {
            loaded: Cow::Borrowed(sweep.loaded),
            out: sweep.out.to_path_buf(),
            series,
            shard,
            runs,
            rank,
            resumed,
            store,
            state: Mutex::new(State {
                complete,
                failures: BTreeMap::new(),
            }),
            _lock: lock,
        })
    }

    /// The same open sweep owning a copy of its scenario.
    pub fn into_owned(self) -> OpenSweep<'static> {
        OpenSweep {
            loaded: Cow::Owned(self.loaded.into_owned()),
            out: self.out,
            series: self.series,
            shard: self.shard,
            runs: self.runs,
            rank: self.rank,
            resumed: self.resumed,
            store: self.store,
            state: self.state,
            _lock: self._lock,
        }
    }

    /// The results directory.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Runs of this sweep (of its shard, if opened for one).
    pub fn total(&self) -> usize {
        self.indices().count()
    }

    /// Runs of this sweep (or shard) that were already complete when it was opened.
    pub fn resumed(&self) -> usize {
        self.resumed
    }

    /// Tasks not yet complete in the store, in run order (optionally only shard i of n, on top
    /// of the shard the sweep was opened for).
    pub fn pending(&self, shard: Option<(usize, usize)>) -> Vec<Task> {
        self.pending_indices(shard.and_then(|(i, n)| Shard::new(i, n)))
            .into_iter()
            .filter_map(|k| self.task(k))
            .collect()
    }

    /// The task of run `index` (position in run order), whether or not it is complete.
    pub fn task(&self, index: usize) -> Option<Task> {
        let spec = self.runs.get(index)?;
        let point = self.loaded.points.get(spec.point)?;
        Some(Task {
            index,
            point: point.clone(),
            spec: spec.clone(),
            outputs: self.outputs(spec),
        })
    }

    /// Records one outcome (idempotent per run id: a retried task recorded twice keeps one
    /// line; the first outcome that made a line wins). A task that is not a run of this sweep
    /// is refused; a failure to write is returned and also counts as the run's failure.
    pub fn record(&self, outcome_of: &Task, outcome: TaskOutcome) -> Result<(), ExperimentError> {
        let spec = self.runs.get(outcome_of.index);
        let why = match spec {
            None => Some(format!("the sweep has {} runs", self.runs.len())),
            Some(s) if *s != outcome_of.spec => {
                Some(format!("run {} is {}", outcome_of.index, s.id))
            }
            Some(_) if self.shard.is_some_and(|sh| !sh.holds(outcome_of.index)) => Some(format!(
                "it belongs to another shard than {}",
                self.shard.map_or_else(String::new, |s| s.to_string())
            )),
            Some(s) => match &outcome {
                // A worker that mixed up its results must not put one run's line under another.
                TaskOutcome::Done(run) if run.id != s.id => {
                    Some(format!("the outcome is run {}'s result", run.id))
                }
                _ => None,
            },
        };
        if let Some(why) = why {
            return Err(ExperimentError::UnknownTask {
                index: outcome_of.index,
                id: outcome_of.spec.id.clone(),
                why,
            });
        }
        self.record_at(outcome_of.index, outcome).1
    }

    /// Whether the runs of `point` record their time series.
    fn records_series(&self, point: usize) -> bool {
        self.series.get(point).copied().unwrap_or(false)
    }

    /// Records a results line as another directory of the same sweep stored it (a shard's,
    /// when merging), with the run's `series/<id>.csv` bytes if it has them: copied as they
    /// are (error records included), so the merged store equals a local sweep's. Idempotent
    /// per run id like [`OpenSweep::record`]; a line whose id is not a run of this sweep (or
    /// shard) is refused.
    pub fn record_stored(
        &self,
        line: &serde_json::Value,
        series_csv: Option<&[u8]>,
    ) -> Result<(), ExperimentError> {
        let id = line
            .get("id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        let index = self.rank.get(id).copied();
        let Some(index) = index.filter(|&k| self.shard.is_none_or(|s| s.holds(k))) else {
            return Err(ExperimentError::UnknownTask {
                index: index.unwrap_or(usize::MAX),
                id: id.to_string(),
                why: "no run of this sweep has that id".into(),
            });
        };
        let mut state = self.lock_state();
        if state.complete.contains(id) {
            return Ok(());
        }
        if let (true, Some(csv)) = (self.records_series(self.runs[index].point), series_csv) {
            write_atomic(&ResultsLayout::new(&self.out).series(id), csv)?;
        }
        self.store.append(line)?;
        state.complete.insert(id.to_string());
        state.failures.remove(&index);
        Ok(())
    }

    /// Finalises (every task of the sweep has an outcome) or leaves the store resumable (some
    /// have none: [`SweepOutcome::Interrupted`]) — as [`crate::run_sweep`].
    pub fn finish(self) -> Result<SweepOutcome, ExperimentError> {
        let attempted = {
            let state = self.lock_state();
            self.indices().all(|k| {
                state.failures.contains_key(&k) || state.complete.contains(&self.runs[k].id)
            })
        };
        self.close(attempted)
    }

    /// Indices of this sweep's (or shard's) runs, in run order.
    fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.runs.len()).filter(|&k| self.shard.is_none_or(|s| s.holds(k)))
    }

    /// Indices of runs without a line in the store, in run order, within `extra` too.
    pub(crate) fn pending_indices(&self, extra: Option<Shard>) -> Vec<usize> {
        let state = self.lock_state();
        self.indices()
            .filter(|&k| extra.is_none_or(|s| s.holds(k)))
            .filter(|&k| !state.complete.contains(&self.runs[k].id))
            .collect()
    }

    /// The spec and point of run `index` (for a local executor's borrowed jobs).
    pub(crate) fn job_parts(&self, index: usize) -> Option<(&SweepPoint, &RunSpec)> {
        let spec = self.runs.get(index)?;
        Some((self.loaded.points.get(spec.point)?, spec))
    }

    /// The outputs of one run: trace names carry the id when the sweep has several runs (all
    /// shards counted, so a shard names its traces as the whole sweep would).
    pub(crate) fn outputs(&self, spec: &RunSpec) -> RunOutputs {
        RunOutputs {
            trace_id: (self.runs.len() > 1).then(|| spec.id.clone()),
            series: self.records_series(spec.point),
            results_dir: Some(self.out.clone()),
        }
    }

    /// Records run `index`'s outcome. Returns the run's failure message (for progress), if it
    /// failed, and whether recording itself worked.
    pub(crate) fn record_at(
        &self,
        index: usize,
        outcome: TaskOutcome,
    ) -> (Option<String>, Result<(), ExperimentError>) {
        let Some(spec) = self.runs.get(index) else {
            return (None, Ok(()));
        };
        let mut state = self.lock_state();
        if state.complete.contains(&spec.id) {
            // A retry of a run already recorded (the same result, the simulator being pure).
            return (None, Ok(()));
        }
        let (message, recorded, result) = match outcome {
            TaskOutcome::Done(run) => match self.append(&run) {
                Ok(()) => {
                    state.complete.insert(spec.id.clone());
                    state.failures.remove(&index);
                    return (None, Ok(()));
                }
                Err(e) => (chain(&e), false, Err(e)),
            },
            // A panic is a bug that the same spec repeats (the simulator is deterministic):
            // record it so the sweep's file says what happened and resuming skips the run.
            TaskOutcome::Panicked(panic) => {
                let message = chain(&EngineError::Panicked(panic));
                match record_error(&self.store, spec, &message) {
                    Ok(()) => {
                        state.complete.insert(spec.id.clone());
                        (message, true, Ok(()))
                    }
                    Err(e) => (
                        format!("{message}; recording it failed: {}", chain(&e)),
                        false,
                        Err(e),
                    ),
                }
            }
            TaskOutcome::Failed(message) => (message, false, Ok(())),
        };
        state.failures.insert(
            index,
            Failure {
                id: spec.id.clone(),
                message: message.clone(),
                recorded,
            },
        );
        (Some(message), result)
    }

    /// Series first, then the results line, so a run that counts as complete (its line
    /// exists) always has its series too.
    fn append(&self, run: &results::Run) -> Result<(), ExperimentError> {
        if self.records_series(run.point) {
            write_atomic(
                &ResultsLayout::new(&self.out).series(&run.id),
                run.series_csv().as_bytes(),
            )?;
        }
        let line = serde_json::to_value(run).map_err(|source| ExperimentError::Json {
            what: "cannot serialise the result".into(),
            source,
        })?;
        self.store.append(&line)?;
        Ok(())
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the sets half updated (each update is one insert).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Finalises the store and writes the summary and the Parquet files (`finalise`), or
    /// leaves it resumable.
    pub(crate) fn close(self, finalise: bool) -> Result<SweepOutcome, ExperimentError> {
        let mine: Vec<&RunSpec> = self.indices().map(|k| &self.runs[k]).collect();
        if !finalise {
            let ids: BTreeSet<&str> = mine.iter().map(|r| r.id.as_str()).collect();
            let complete = self
                .store
                .completed_ids()?
                .iter()
                .filter(|id| ids.contains(id.as_str()))
                .count();
            return Ok(SweepOutcome::Interrupted {
                total: mine.len(),
                complete,
                results: self.store.path().to_path_buf(),
            });
        }
        // Run order, not finish order, so the file is the same for any executor.
        let order: Vec<String> = mine.iter().map(|r| r.id.clone()).collect();
        self.store.finalize(&order)?;
        let specs: Vec<RunSpec> = mine.iter().map(|r| (*r).clone()).collect();
        let rows = summary::write(&self.out, &self.loaded, &specs, &self.store)?;
        analysis::parquet::write_dir(&self.out, &self.store)?;
        let state = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut failures = state.failures;
        // Runs skipped on resume because of an earlier error record still failed: say so.
        for (id, message) in self.store.errors()? {
            let Some(&k) = self.rank.get(id.as_str()) else {
                continue;
            };
            if self.shard.is_none_or(|s| s.holds(k)) {
                failures.entry(k).or_insert(Failure {
                    id,
                    message,
                    recorded: true,
                });
            }
        }
        Ok(SweepOutcome::Finished {
            total: mine.len(),
            failures: failures.into_values().collect(),
            rows,
        })
    }
}

/// Records that `spec` failed for good: a line with its identity and `message` under
/// [`results::store::ERROR_FIELD`] instead of measurements.
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
        (results::store::ERROR_FIELD): message,
    }))?;
    Ok(())
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
