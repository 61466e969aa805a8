//! quiclab's discrete-event simulator.
//!
//! [`run`] executes one [`scenario::model::Scenario`] with one seed and returns a
//! [`results::Run`]; the same inputs always give the same result, byte for byte.

pub mod addr;
mod agents;
mod capture;
pub mod engine;

use std::collections::BTreeMap;

pub use engine::{RunOptions, SimError};
pub use results::Run as RunResult;
use scenario::model::{RunSpec, SweepPoint};

/// Runs one repetition of one sweep point.
pub fn run(point: &SweepPoint, spec: &RunSpec, opts: &RunOptions) -> Result<RunResult, SimError> {
    let sim = engine::Sim::new(&point.scenario, spec.seed, opts)?;
    let axes: BTreeMap<String, String> = point.axes.iter().cloned().collect();
    sim.run(
        spec.id.clone(),
        spec.point,
        spec.rep,
        spec.seed,
        axes,
        point.scenario.name.clone(),
    )
}
