//! quiclab scenario files: from TOML text to resolved [`model::Scenario`]s.
//!
//! `load` reads a file, applies `--set` overrides and sweep axes, checks every key against the
//! [`registry`], resolves human units and defaults, and expands the sweep into points; the
//! [`LoadedScenario::runs`] method multiplies the points by the repetitions and derives seeds.
//! `docs/scenario.md` is generated from the registry by [`render_docs`].

#![warn(missing_docs)]

pub mod builder;
pub mod choices;
mod describe;
mod docs;
mod error;
pub mod figure;
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
mod variant;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bounds;
#[cfg(test)]
mod tests_figures;
#[cfg(test)]
mod tests_mahimahi;
#[cfg(test)]
mod tests_noops;
#[cfg(test)]
mod tests_qdisc;
#[cfg(test)]
mod tests_quiche;
#[cfg(test)]
mod tests_variants;

pub use choice::Choice;
pub use docs::render_docs;
pub use error::ScenarioError;
pub use load::{load, load_with, parse_str, parse_with, run_seed, Inputs, LoadedScenario};
pub use registry::{keys, KeyDoc};
pub use sweep::{MAX_POINTS, MAX_RUNS};
pub use variant::{VariantDef, MAX_VARIANTS, VARIANT_AXIS};

/// The name of a study's published values beside its scenario files
/// (`scenarios/studies/<study>/paper.toml`): data, not a scenario.
pub const PAPER_FILE: &str = "paper.toml";

/// Whether `path` is a scenario file of a scenarios tree: a `.toml` file other than a study's
/// [`PAPER_FILE`].
pub fn is_scenario_file(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "toml")
        && path.file_name().is_some_and(|n| n != PAPER_FILE)
}
