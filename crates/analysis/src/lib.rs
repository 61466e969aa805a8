//! Statistics, summaries, tables and comparisons of quiclab results.
//!
//! The engines append one JSON object per run to `results.jsonl` (`results::store`); this crate
//! turns those runs into numbers with their uncertainty ([`stats`]) and into
//! `summary.csv` and human-readable tables ([`summary`]); compares variants run for run
//! ([`paired`]: `comparisons.csv`) and results directories ([`compare`]) with the tests of
//! [`inference`]. Everything here is deterministic: the
//! output bytes depend only on the input values, never on the order runs finished in.

#![warn(missing_docs)]

pub mod compare;
pub mod ellipse;
pub mod error;
pub mod format;
pub mod harm;
pub mod inference;
pub mod paired;
pub mod parquet;
pub mod stats;
pub mod summary;
pub mod tabular;

#[cfg(test)]
pub(crate) mod testutil;

pub use error::{Error, Result};
pub use stats::{jain_index, linear_fit, median_ci95, summarize, Fit, StatsError, Summary};
pub use summary::{
    flatten_numeric, incomplete_warnings, metrics_from_runs, render_table, summary_rows,
    write_summary_csv, SummaryRow,
};
pub use tabular::{connections_table, flatten, series_table, Column, Table, Values};
