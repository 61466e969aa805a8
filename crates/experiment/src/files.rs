//! Atomic file replacement for the files beside results.jsonl, and for the CLI's own outputs
//! (reproduce's tables).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::ExperimentError;

/// Writes `bytes` to `path` through a temporary file and a rename, so readers (and a resumed
/// sweep after a crash) see either the old file or the whole new one, never half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ExperimentError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    create_fresh(&tmp)?
        .write_all(bytes)
        .map_err(ExperimentError::io("cannot write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(ExperimentError::io("cannot rename into", path))
}

/// Creates `path` as a new file, never through a link: a leftover (a crash's temporary file,
/// or a link planted in a shared results directory) is removed first (removing a link removes
/// the link, not its target), then the file is created exclusively without following links.
pub(crate) fn create_fresh(path: &Path) -> Result<File, ExperimentError> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(ExperimentError::io("cannot remove", path)(e)),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(ExperimentError::io("cannot create", path))
}

/// `create_dir_all` with the directory in the error.
pub(crate) fn create_dir(dir: &Path) -> Result<(), ExperimentError> {
    std::fs::create_dir_all(dir).map_err(ExperimentError::io("cannot create directory", dir))
}
