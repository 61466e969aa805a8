//! Results store, statistics and summaries for quiclab runs.
//!
//! The engines append one JSON object per run to `results.jsonl` through [`store::ResultsStore`];
//! this crate then turns those runs into numbers with their uncertainty ([`stats`]) and into
//! `summary.csv` and human-readable tables ([`summary`]). Everything here is deterministic: the
//! output bytes depend only on the input values, never on the order runs finished in.

#![warn(missing_docs)]

pub mod compare;
pub mod error;
pub mod parquet;
pub mod stats;
pub mod store;
pub mod summary;
pub mod tabular;

#[cfg(test)]
pub(crate) mod testutil;

pub use error::{Error, Result};
pub use stats::{jain_index, linear_fit, median_ci95, summarize, Fit, StatsError, Summary};
pub use store::ResultsStore;
pub use summary::{
    flatten_numeric, incomplete_warnings, metrics_from_runs, render_table, si, summary_rows,
    write_summary_csv, SummaryRow,
};
pub use tabular::{flatten, series_table, Column, Table, Values};
