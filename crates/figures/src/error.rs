//! Why figures or a report could not be made.

use std::path::{Path, PathBuf};

use crate::chart::ChartError;

/// A figure or report failure, naming the file involved.
#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    /// The directory has no `results.jsonl`.
    #[error("{0}: no results.jsonl here (pass a results directory written by `quiclab sim`, `quiclab emu` or `quiclab reproduce`)")]
    NotResults(PathBuf),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A JSON file did not parse.
    #[error("{path}:{line}: not valid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A series CSV did not parse.
    #[error("{path}: {message}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// A `--metric`, `--x` or `--run` named something the directory does not have.
    #[error("{what} {given:?} is not in these results; {available}")]
    Unknown {
        /// The option (`--metric`, `--x`, `--run`).
        what: &'static str,
        /// What the user gave.
        given: String,
        /// What exists, comma-separated (shortened when long).
        available: String,
    },
    /// Drawing failed.
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// Converting a figure to PDF or PNG failed.
    #[error("{0}")]
    Export(String),
}

impl FigureError {
    /// A closure turning an `io::Error` on `path` into a [`FigureError::Io`].
    pub fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FigureError + '_ {
        move |source| FigureError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
