//! Errors of the runner itself (as opposed to one run's [`crate::EngineError`]).

use std::path::PathBuf;

/// Why a sweep could not start, record or finish (a failed run is not one: it is reported in
/// [`crate::SweepOutcome`] and the sweep goes on).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The results directory holds results and resuming was not asked for.
    #[error("{} already holds results; add --resume to complete that sweep, or choose another --out", .dir.display())]
    AlreadyHasResults {
        /// The results directory.
        dir: PathBuf,
    },
    /// Another sweep is writing the results directory (see [`crate::lock`]).
    #[error("{} is in use by another sweep ({}); wait for it to finish or choose another --out", .dir.display(), .holder.map_or_else(|| "process unknown".to_string(), |p| format!("process {p}")))]
    Locked {
        /// The results directory.
        dir: PathBuf,
        /// Process id recorded by the holder, if readable.
        holder: Option<u32>,
    },
    /// Resuming a directory whose manifest records another scenario, seed or sweep.
    #[error("{} holds results of a different scenario, seed or sweep (see {}); resume with the same settings, or choose another --out", .dir.display(), .manifest.display())]
    DifferentSweep {
        /// The results directory.
        dir: PathBuf,
        /// Its manifest file.
        manifest: PathBuf,
    },
    /// A run spec names a sweep point the scenario does not have.
    #[error("run {id} refers to a missing sweep point")]
    MissingPoint {
        /// The run's id.
        id: String,
    },
    /// A shard's results directory holds another shard's runs, or a whole sweep's (see
    /// [`crate::shard`]).
    #[error("{} holds {stored}, not {wanted}; use one directory per shard, or choose another --out", .dir.display())]
    DifferentShard {
        /// The results directory.
        dir: PathBuf,
        /// What the directory holds.
        stored: String,
        /// What this sweep would write.
        wanted: String,
    },
    /// A `shard.json` that does not describe a shard.
    #[error("{}: {why}", .path.display())]
    BadShardRecord {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A task handed to [`crate::distributed::OpenSweep::record`] is not a run of that sweep.
    #[error("task {index} ({id}) is not a run of this sweep: {why}")]
    UnknownTask {
        /// The task's index.
        index: usize,
        /// The task's run id.
        id: String,
        /// What does not match.
        why: String,
    },
    /// Shard directories that cannot be merged (see [`crate::merge`]); the message says why
    /// and what to do.
    #[error("{0}")]
    Merge(String),
    /// A file operation failed.
    #[error("{what} {}: {source}", .path.display())]
    Io {
        /// What was being done ("cannot write", …).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A manifest or result could not be (de)serialised.
    #[error("{what}: {source}")]
    Json {
        /// What was being (de)serialised.
        what: String,
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// The results store failed (append, read, finalise).
    #[error(transparent)]
    Store(#[from] results::store_error::Error),
    /// Writing the summary or the Parquet files failed.
    #[error(transparent)]
    Output(#[from] analysis::Error),
    /// The executor could not execute the runs (e.g. no worker threads, a lost cluster).
    #[error("executor: {0}")]
    Executor(String),
    /// An adaptive-repetition rule that cannot work (`adaptive::RuleError`).
    #[error("{0}")]
    Adaptive(String),
}

impl ExperimentError {
    /// An I/O error on `path` while doing `what`.
    pub(crate) fn io(
        what: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| ExperimentError::Io { what, path, source }
    }
}

/// `e` and its sources joined by ": ", the way `anyhow`'s alternate form prints a chain.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        // Transparent wrappers repeat their source's message; print it once.
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
