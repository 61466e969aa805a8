//! Executors: where and in what order jobs run.
//!
//! The runner hands an executor a list of [`Job`]s and a callback; the executor runs each job
//! (here on a thread pool or the calling thread; elsewhere on a Dask cluster, or only the jobs of
//! one shard of a cluster job) and reports each result through the callback as it arrives, in
//! any order. Results are recorded as they arrive (so a crash loses nothing finished) and the
//! store is finalised in run order afterwards, so what an executor does with order and placement
//! never shows in `results.jsonl`.

use rayon::prelude::*;
use scenario::model::{RunSpec, SweepPoint};

use crate::error::ExperimentError;
use engine::{run_catching, Engine, EngineError, RunOutputs};

/// One unit of work: a run spec, its sweep point and its output choices.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// The scenario as resolved for this sweep point.
    pub point: &'a SweepPoint,
    /// Id, repetition and seed of the run.
    pub spec: &'a RunSpec,
    /// Trace naming and series recording for this run.
    pub outputs: RunOutputs,
}

impl Job<'_> {
    /// Runs this job with `engine`, a panic becoming [`EngineError::Panicked`] (what a local executor does; a remote one ships the point,
    /// spec and outputs, which all serialise, to a worker that does the same).
    pub fn run(&self, engine: &dyn Engine) -> Result<results::Run, EngineError> {
        run_catching(engine, self.point, self.spec, &self.outputs)
    }
}

/// Callback receiving `(index into jobs, result)` once per executed job.
pub type Done<'a> = dyn Fn(usize, Result<results::Run, EngineError>) + Sync + 'a;

/// Stop condition polled before each job starts.
pub type Stop<'a> = dyn Fn() -> bool + Sync + 'a;

/// Runs jobs and reports their results. This is the seam for distributed execution.
pub trait Executor: Sync {
    /// Executes `jobs` with `engine`, calling `done(i, result)` for every job it ran (`i`
    /// indexes `jobs`), in any order, from any thread. It checks `stop` before starting a job
    /// and starts no more once it is true; jobs never started are not reported. Returns when
    /// every started job has been reported.
    fn execute(
        &self,
        engine: &dyn Engine,
        jobs: &[Job<'_>],
        stop: &Stop<'_>,
        done: &Done<'_>,
    ) -> Result<(), ExperimentError>;
}

/// A pool of worker threads, one job per task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Threads {
    /// Number of threads; `None` = one per core.
    pub threads: Option<usize>,
}

impl Threads {
    /// A pool of `threads` threads (`None` = one per core).
    pub fn new(threads: Option<usize>) -> Self {
        Threads { threads }
    }
}

impl Executor for Threads {
    fn execute(
        &self,
        engine: &dyn Engine,
        jobs: &[Job<'_>],
        stop: &Stop<'_>,
        done: &Done<'_>,
    ) -> Result<(), ExperimentError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads.unwrap_or(0)) // 0 = one per core
            .build()
            .map_err(|e| {
                ExperimentError::Executor(format!("cannot start the worker threads: {e}"))
            })?;
        pool.install(|| {
            // One job per task: runs are long and uneven, so rayon's default batching would
            // leave threads idle near the end.
            jobs.par_iter()
                .enumerate()
                .with_max_len(1)
                .for_each(|(i, job)| {
                    if !stop() {
                        done(i, job.run(engine));
                    }
                });
        });
        Ok(())
    }
}

/// Runs jobs one after another, in order, on the calling thread (the emulator: parallel
/// real-time runs would disturb each other).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sequential;

impl Executor for Sequential {
    fn execute(
        &self,
        engine: &dyn Engine,
        jobs: &[Job<'_>],
        stop: &Stop<'_>,
        done: &Done<'_>,
    ) -> Result<(), ExperimentError> {
        for (i, job) in jobs.iter().enumerate() {
            if stop() {
                break;
            }
            let result = job.run(engine);
            let interrupted = matches!(result, Err(EngineError::Interrupted));
            done(i, result);
            if interrupted {
                break;
            }
        }
        Ok(())
    }
}
