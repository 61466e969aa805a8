//! The simulator as an [`engine::Engine`]: what the runner (`experiment`), validation and the
//! Python binding call to turn one run spec into one result in virtual time.

use std::path::PathBuf;

use engine::{traces, Engine, EngineError, RunOutputs};
use scenario::model::{RunSpec, SweepPoint};

use crate::RunOptions;

/// The deterministic simulator ([`crate::run`]).
#[derive(Debug, Clone, Default)]
pub struct SimEngine {
    /// Write the bottleneck's packets to this pcap file (run id inserted with several runs).
    pub pcap: Option<PathBuf>,
    /// Write one qlog per connection into this directory (`<dir>/<run id>/` with several runs).
    pub qlog: Option<PathBuf>,
}

impl SimEngine {
    /// The simulator's options for one run; creates the directories its traces go to.
    pub fn options(&self, outputs: &RunOutputs) -> Result<RunOptions, EngineError> {
        let id = outputs.trace_id.as_deref();
        let pcap = match &self.pcap {
            Some(file) => {
                let file = traces::file_for(file, id);
                engine::create_parent(&file)?;
                Some(file)
            }
            None => None,
        };
        let qlog_dir = match &self.qlog {
            Some(dir) => {
                let dir = traces::dir_for(dir, id);
                engine::create_dir(&dir)?;
                Some(dir)
            }
            None => None,
        };
        Ok(RunOptions {
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
        crate::run(point, spec, &opts).map_err(|e| EngineError::Failed(Box::new(e)))
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
}
