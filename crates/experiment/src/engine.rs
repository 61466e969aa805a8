//! Engines: what turns one run spec into one result.
//!
//! An engine is configured once (where traces go, how the emulator waits) and then executes any
//! number of runs, possibly on several threads at once. A new engine (a third transport model's
//! own simulator, a hardware testbed) is one more implementation of [`Engine`]; the runner,
//! executors, store and summaries need no change.

use std::path::{Path, PathBuf};

use scenario::model::{RunSpec, SweepPoint};
use serde::{Deserialize, Serialize};

use crate::traces;

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
    /// The simulator refused or failed the run.
    #[error(transparent)]
    Sim(#[from] sim::SimError),
    /// The emulator failed the run (its network is removed either way).
    #[error(transparent)]
    Emu(emu::EmuError),
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

impl From<emu::EmuError> for EngineError {
    fn from(e: emu::EmuError) -> Self {
        match e {
            emu::EmuError::Interrupted => EngineError::Interrupted,
            other => EngineError::Emu(other),
        }
    }
}

fn create_dir(dir: &Path) -> Result<(), EngineError> {
    fsutil::create_dir_all(dir).map_err(|source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Creates the parent directory of `file`, if it names one.
fn create_parent(file: &Path) -> Result<(), EngineError> {
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

/// The deterministic simulator (`sim::run`).
#[derive(Debug, Clone, Default)]
pub struct SimEngine {
    /// Write the bottleneck's packets to this pcap file (run id inserted with several runs).
    pub pcap: Option<PathBuf>,
    /// Write one qlog per connection into this directory (`<dir>/<run id>/` with several runs).
    pub qlog: Option<PathBuf>,
}

impl SimEngine {
    /// The simulator's options for one run; creates the directories its traces go to.
    pub fn options(&self, outputs: &RunOutputs) -> Result<sim::RunOptions, EngineError> {
        let id = outputs.trace_id.as_deref();
        let pcap = match &self.pcap {
            Some(file) => {
                let file = traces::file_for(file, id);
                create_parent(&file)?;
                Some(file)
            }
            None => None,
        };
        let qlog_dir = match &self.qlog {
            Some(dir) => {
                let dir = traces::dir_for(dir, id);
                create_dir(&dir)?;
                Some(dir)
            }
            None => None,
        };
        Ok(sim::RunOptions {
            pcap,
            qlog_dir,
            series: outputs.series,
        })
    }
}

impl Engine for SimEngine {
    fn run(
        &self,
        point: &SweepPoint,
        spec: &RunSpec,
        outputs: &RunOutputs,
    ) -> Result<results::Run, EngineError> {
        let opts = self.options(outputs)?;
        Ok(sim::run(point, spec, &opts)?)
    }
}

/// The real-time emulator (`emu::runner::run`): namespaces, the userspace forwarder, `quiclab
/// serve` and `quiclab get`. It needs the machine to itself, so run it with [`crate::Sequential`].
#[derive(Debug, Clone)]
pub struct EmuEngine {
    /// The `quiclab` binary that provides `serve` and `get`.
    pub quiclab: PathBuf,
    /// Capture the bottleneck into this directory (`<dir>/<run id>/` in a results directory).
    pub pcap: Option<PathBuf>,
    /// qlog of every QUIC connection into this directory (`<dir>/<run id>/` in a results
    /// directory).
    pub qlog: Option<PathBuf>,
    /// TLS key log file (run id inserted in a results directory).
    pub keylog: Option<PathBuf>,
    /// Polled during a run; true tears the run down ([`EngineError::Interrupted`]).
    pub stop: Option<fn() -> bool>,
    /// How the forwarder waits for packets and delivery times.
    pub wait: emu::WaitMode,
}

impl EmuEngine {
    /// Scratch directory of one run (endpoint logs and statistics): `<results>/emu/<id>` in a
    /// sweep; `None` for a lone run, which gets a private temporary directory removed when the
    /// run ends (a predictable name in a shared directory would let another user plant links).
    pub fn work_dir(&self, spec: &RunSpec, outputs: &RunOutputs) -> Option<PathBuf> {
        outputs
            .results_dir
            .as_ref()
            .map(|dir| dir.join("emu").join(&spec.id))
    }

    /// The emulator's options for one run; creates the key log's directory.
    pub fn options(
        &self,
        spec: &RunSpec,
        outputs: &RunOutputs,
    ) -> Result<emu::runner::RunOptions, EngineError> {
        // In a results directory every run's traces go per run, even a sweep of one run, like
        // its endpoint logs: `quiclab emu --out` has always laid out captures as <dir>/<id>/.
        let id = outputs
            .trace_id
            .as_deref()
            .or_else(|| outputs.results_dir.is_some().then_some(spec.id.as_str()));
        let keylog = self.keylog.as_deref().map(|f| traces::file_for(f, id));
        if let Some(k) = &keylog {
            create_parent(k)?;
        }
        Ok(emu::runner::RunOptions {
            quiclab: self.quiclab.clone(),
            work_dir: self.work_dir(spec, outputs),
            capture_dir: self.pcap.as_deref().map(|d| traces::dir_for(d, id)),
            keylog,
            qlog_dir: self.qlog.as_deref().map(|d| traces::dir_for(d, id)),
            stop: self.stop,
            wait: self.wait,
        })
    }
}

impl Engine for EmuEngine {
    fn run(
        &self,
        point: &SweepPoint,
        spec: &RunSpec,
        outputs: &RunOutputs,
    ) -> Result<results::Run, EngineError> {
        let opts = self.options(spec, outputs)?;
        let done = emu::runner::run(point, spec, &opts)?;
        // The forwarder's health counters travel inside the run (`results::Forwarder`).
        Ok(done.result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_traces_carry_the_run_id_only_with_several_runs() {
        let tmp = fsutil::PrivateDir::new("quiclab-exp-traces-").expect("temp dir");
        let dir = tmp.path();
        let engine = SimEngine {
            pcap: Some(dir.join("t.pcap")),
            qlog: Some(dir.join("q")),
        };
        let several = RunOutputs {
            trace_id: Some("p0-r1".into()),
            series: true,
            results_dir: None,
        };
        let o = engine.options(&several).expect("options");
        assert_eq!(o.pcap, Some(dir.join("t-p0-r1.pcap")));
        assert_eq!(o.qlog_dir, Some(dir.join("q/p0-r1")));
        assert!(o.series && dir.join("q/p0-r1").is_dir());
        let lone = engine.options(&RunOutputs::default()).expect("options");
        assert_eq!(lone.pcap, Some(dir.join("t.pcap")));
        assert!(!lone.series);
        tmp.remove().expect("clean up");
    }

    #[test]
    fn emu_work_dir_is_under_the_results_directory_in_a_sweep() {
        let engine = EmuEngine {
            quiclab: "quiclab".into(),
            pcap: Some("cap".into()),
            qlog: None,
            keylog: Some("keys.log".into()),
            stop: None,
            wait: emu::WaitMode::Sleep,
        };
        let spec = RunSpec {
            id: "p1-r0".into(),
            point: 1,
            rep: 0,
            seed: 5,
        };
        let outputs = RunOutputs {
            trace_id: Some("p1-r0".into()),
            series: false,
            results_dir: Some("out".into()),
        };
        let o = engine.options(&spec, &outputs).expect("options");
        let lone_in_dir = RunOutputs {
            trace_id: None,
            ..outputs.clone()
        };
        let lone = engine.options(&spec, &lone_in_dir).expect("options");
        assert_eq!(lone.capture_dir, o.capture_dir);
        assert_eq!(o.work_dir.as_deref(), Some(Path::new("out/emu/p1-r0")));
        // A lone run has no predictable scratch path: the emulator makes a private one.
        let alone = engine
            .options(&spec, &RunOutputs::default())
            .expect("options");
        assert_eq!(alone.work_dir, None);
        assert_eq!(o.capture_dir.as_deref(), Some(Path::new("cap/p1-r0")));
        assert_eq!(o.keylog.as_deref(), Some(Path::new("keys-p1-r0.log")));
    }
}
