//! The engine seam: what turns one run spec into one result.
//!
//! An engine is configured once (where traces go, how the emulator waits) and then executes any
//! number of runs, possibly on several threads at once. The simulator's engine lives in `sim`
//! (`sim::SimEngine`), the emulator's in `emu` (`emu::EmuEngine`); the runner (`experiment`)
//! knows only this trait, so a program that needs only the simulator links no real-time
//! networking. A new engine (a third transport model's own simulator, a hardware testbed) is one
//! more implementation of [`Engine`]; the runner, executors, store and summaries need no change.

#![warn(missing_docs)]

pub mod traces;

use std::path::{Path, PathBuf};

use scenario::model::{RunSpec, SweepPoint};
use serde::{Deserialize, Serialize};

/// Executes one run of one sweep point. Implementations must be deterministic where their
/// medium allows (the simulator is a pure function of point and spec).
pub trait Engine: Sync {
    /// Runs `spec` of `point`, writing the optional outputs `outputs` asks for.
    fn run(
        &self,
        point: &SweepPoint,
        spec: &RunSpec,
        outputs: &RunOutputs,
    ) -> Result<results::Run, EngineError>;
}

/// Per-run output choices the runner makes for the engine; the engine's own configuration says
/// whether traces are wanted at all and where their base paths are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOutputs {
    /// `Some(run id)` when the invocation has several runs: trace names then carry the id so
    /// runs never share a file; `None` for a lone run, whose traces use the names as given.
    pub trace_id: Option<String>,
    /// Record time series (the runner writes them to `series/<id>.csv`).
    pub series: bool,
    /// The results directory of the sweep, if any (the emulator keeps each run's endpoint logs
    /// under it).
    pub results_dir: Option<PathBuf>,
}

/// Why one run produced no result. The sweep goes on; the run is retried on resume.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine refused or failed the run (the simulator's or the emulator's own error; the
    /// emulator removes its network either way).
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// The run was abandoned because a stop was requested; not a failure.
    #[error("interrupted")]
    Interrupted,
    /// The engine panicked (a bug, e.g. inside quinn). The panic is caught so one run cannot
    /// abort the sweep; the run gets an error record, so resuming does not repeat it.
    #[error("the engine panicked: {0}")]
    Panicked(String),
    /// Preparing the run's output files failed.
    #[error("cannot create {}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Creates `dir` and its parents (a trace directory of one run).
pub fn create_dir(dir: &Path) -> Result<(), EngineError> {
    fsutil::create_dir_all(dir).map_err(|source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Creates the parent directory of `file`, if it names one.
pub fn create_parent(file: &Path) -> Result<(), EngineError> {
    match file.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => create_dir(parent),
        None => Ok(()),
    }
}

/// Runs `engine` on one spec, turning a panic into [`EngineError::Panicked`] with the panic's
/// message. The engines own no state shared between runs that a panic could leave half
/// updated (each run builds its own simulator or network), so carrying on is sound.
pub fn run_catching(
    engine: &dyn Engine,
    point: &SweepPoint,
    spec: &RunSpec,
    outputs: &RunOutputs,
) -> Result<results::Run, EngineError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        engine.run(point, spec, outputs)
    }))
    .unwrap_or_else(|payload| Err(EngineError::Panicked(panic_message(payload.as_ref()))))
}

/// The text of a panic payload (`panic!` with a literal or a format string).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}
