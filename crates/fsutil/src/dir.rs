//! Creating output directories without following a link someone planted.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

/// Creates `path` and its missing parents (mode 0755 before the umask), like
/// `std::fs::create_dir_all`, but the last component must end up a real directory: an existing
/// symbolic link there (such as `pcap/<run>` planted by another user to point at `/etc`) is an
/// error, not a directory to write into. Parents are the caller's choice and may be links.
pub fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", parent.display())))?;
    }
    match std::fs::DirBuilder::new().mode(0o755).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => ensure_real_dir(path),
        Err(e) => Err(e),
    }
}

/// An error unless `path` itself (not what a link points to) is a directory.
pub fn ensure_real_dir(path: &Path) -> io::Result<()> {
    let kind = std::fs::symlink_metadata(path)?.file_type();
    let why = if kind.is_symlink() {
        "a symbolic link; refusing to follow it"
    } else if !kind.is_dir() {
        "exists and is not a directory"
    } else {
        return Ok(());
    };
    Err(io::Error::new(io::ErrorKind::InvalidInput, why))
}
