//! Errors of the file-handling parts of the crate (summary CSV and Parquet output).

use std::path::PathBuf;

/// Result alias for operations that touch files.
pub type Result<T> = std::result::Result<T, Error>;

/// A failure while reading or writing results files.
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
    /// Writing a Parquet file failed.
    #[error("cannot write {path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The writer's error.
        #[source]
        source: ::parquet::errors::ParquetError,
    },
    /// Reading the results store failed.
    #[error(transparent)]
    Store(#[from] results::store_error::Error),
}

impl Error {
    /// Wraps an I/O error with the path it concerns, so messages say which file failed.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}
