//! The emulator as an [`engine::Engine`]: what the runner (`experiment`) calls to run one run
//! spec in real time.

use std::path::PathBuf;

use engine::{traces, Engine, EngineError, RunOutputs};
use scenario::model::{RunSpec, SweepPoint};

use crate::runner::RunOptions;
use crate::{EmuError, WaitMode};

/// The real-time emulator ([`crate::runner::run`]): namespaces, the userspace forwarder,
/// `quiclab serve` and `quiclab get`. It needs the machine to itself, so run it with the
/// runner's sequential executor.
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
    pub wait: WaitMode,
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
    pub fn options(&self, spec: &RunSpec, outputs: &RunOutputs) -> Result<RunOptions, EngineError> {
        // In a results directory every run's traces go per run, even a sweep of one run, like
        // its endpoint logs: `quiclab emu --out` lays out captures as <dir>/<id>/.
        let id = outputs
            .trace_id
            .as_deref()
            .or_else(|| outputs.results_dir.is_some().then_some(spec.id.as_str()));
        let keylog = self.keylog.as_deref().map(|f| traces::file_for(f, id));
        if let Some(k) = &keylog {
            engine::create_parent(k)?;
        }
        Ok(RunOptions {
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
        match crate::runner::run(point, spec, &opts) {
            // The forwarder's health counters travel inside the run (`results::Forwarder`).
            Ok(done) => Ok(done.result),
            Err(EmuError::Interrupted) => Err(EngineError::Interrupted),
            Err(other) => Err(EngineError::Failed(Box::new(other))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn emu_work_dir_is_under_the_results_directory_in_a_sweep() {
        let engine = EmuEngine {
            quiclab: "quiclab".into(),
            pcap: Some("cap".into()),
            qlog: None,
            keylog: Some("keys.log".into()),
            stop: None,
            wait: WaitMode::Sleep,
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
