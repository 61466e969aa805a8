//! Human units in scenario files and `--set` / `--vary` values: the one parser of the `units`
//! crate (its module doc has the grammar), re-exported so the scenario's readers and the CLI
//! keep one import path.

pub use ::units::*;
