//! quiclab scenario files: from TOML text to resolved [`model::Scenario`]s.
//!
//! `load` reads a file, applies `--set` overrides and sweep axes, checks every key against the
//! [`registry`], resolves human units and defaults, and expands the sweep into points; the
//! [`LoadedScenario::runs`] method multiplies the points by the repetitions and derives seeds.
//! `docs/scenario.md` is generated from the registry by [`render_docs`].

#![warn(missing_docs)]

pub mod builder;
mod docs;
mod error;
mod input;
pub mod limits;
mod load;
pub mod model;
pub mod names;
mod paths;
mod queue;
mod read;
pub mod registry;
mod resolve;
mod sweep;
mod tree;
pub mod units;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bounds;

pub use docs::render_docs;
pub use error::ScenarioError;
pub use load::{load, parse_str, run_seed, LoadedScenario};
pub use registry::{keys, KeyDoc};
pub use sweep::{MAX_POINTS, MAX_RUNS};
