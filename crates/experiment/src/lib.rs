//! quiclab's experiment library: one runner for every way quiclab executes runs.
//!
//! A scenario expands into run specs (`LoadedScenario::runs`); an [`Engine`] turns one spec into
//! one [`results::Run`]; an [`Executor`] decides where and in what order the specs execute (a
//! thread pool here; a Dask cluster or one shard of a cluster job elsewhere); the runner appends
//! each finished run to the results store, finalises it in run order (so `results.jsonl` is
//! byte-identical whatever the executor did) and writes `summary.csv`.
//!
//! Entry points:
//! - [`execute_one`]: one spec in, one result out — pure and deterministic for the simulator.
//! - [`run_in_memory`]: a list of [`Job`]s in, their results out in job order, no directory.
//! - [`run_sweep`]: a scenario into a results directory, with resume, stop and progress
//!   ([`run_sweep_shard`]: one shard of it).
//! - [`OpenSweep`]: the same directory handling for executors outside this process (Dask, a
//!   cluster's shards): pending runs out as serialisable [`Task`]s, [`TaskOutcome`]s in.
//!
//! Nothing here parses command lines or prints: the caller maps its flags onto [`Sweep`], an
//! [`Engine`] (`sim::SimEngine`, `emu::EmuEngine`, or its own) and an executor, and renders the
//! returned [`SweepOutcome`]. The runner knows engines only through the trait (crate `engine`),
//! so it links neither engine.

#![warn(missing_docs)]

pub mod adaptive;
pub mod distributed;
pub mod error;
pub mod executor;
pub mod files;
pub mod flow_errors;
pub mod interrupt;
pub mod lock;
pub mod manifest;
pub mod merge;
pub mod progress;
pub mod runner;
pub mod shard;
pub mod summary;

pub use distributed::{execute_task, OpenSweep, Task, TaskOutcome};
pub use engine::{run_catching, traces, Engine, EngineError, RunOutputs};
pub use error::ExperimentError;
pub use executor::{Executor, Job, Sequential, Threads};
pub use interrupt::StopFlag;
pub use progress::Progress;
pub use runner::{
    execute_one, run_in_memory, run_sweep, run_sweep_shard, Failure, Sweep, SweepOutcome,
};
pub use shard::Shard;
