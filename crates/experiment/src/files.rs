//! Atomic file replacement for the files beside results.jsonl, and for the CLI's own outputs
//! (reproduce's tables).

use std::path::{Path, PathBuf};

use crate::error::ExperimentError;

/// Writes `bytes` to `path` through a temporary file and a rename, so readers (and a resumed
/// sweep after a crash) see either the old file or the whole new one, never half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ExperimentError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(ExperimentError::io("cannot write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(ExperimentError::io("cannot rename into", path))
}

/// `create_dir_all` with the directory in the error.
pub(crate) fn create_dir(dir: &Path) -> Result<(), ExperimentError> {
    std::fs::create_dir_all(dir).map_err(ExperimentError::io("cannot create directory", dir))
}
