//! quiclab's discrete-event simulator.
//!
//! [`run`] executes one [`scenario::model::Scenario`] with one seed and returns a
//! [`results::Run`]; the same inputs always give the same result, byte for byte.

pub mod addr;
mod agents;
mod assemble;
mod capture;
pub mod engine;
mod probes;
mod sim_engine;

pub use self::engine::{RunOptions, SimError};
use results::{Identity, Run};
use scenario::model::{RunSpec, SweepPoint};
pub use sim_engine::SimEngine;

/// Runs one repetition of one sweep point: the engine measures, this attaches the run's identity.
pub fn run(point: &SweepPoint, spec: &RunSpec, opts: &RunOptions) -> Result<Run, SimError> {
    let measured = self::engine::Sim::new(&point.scenario, spec.seed, opts)?.run()?;
    Ok(measured.identify(Identity {
        id: spec.id.clone(),
        point: spec.point,
        rep: spec.rep,
        seed: spec.seed,
        axes: point.axes.iter().cloned().collect(),
        scenario: point.scenario.name.clone(),
    }))
}
