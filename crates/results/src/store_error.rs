//! Errors of the results store.

use std::path::PathBuf;

/// Result alias for store operations.
pub type Result<T> = std::result::Result<T, Error>;

/// A failure while reading or writing `results.jsonl`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system call on `path` failed.
    #[error("{path}: {source}")]
    Io {
        /// File or directory the operation was about.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A value could not be serialised to JSON.
    #[error("cannot serialise result line: {0}")]
    Json(#[from] serde_json::Error),
    /// A result line lacks the string `"id"` field that resumption relies on.
    #[error("result line has no string \"id\" field")]
    MissingId,
}

impl Error {
    /// Wraps an I/O error with the path it concerns, so messages say which file failed.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}
