//! Writing files a root process keeps: whole files replaced atomically, logs appended, copies.
//!
//! None of these writes through a link: an atomic replacement writes a temporary file created
//! exclusively (`O_CREAT | O_EXCL`, a random name in the destination's directory) and renames
//! it over the destination, and `rename` replaces a link itself, never its target; appending
//! opens with `O_NOFOLLOW` and refuses anything but a regular file.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::explain_link;
use crate::read::{ensure_regular, open_read};

/// Mode of the outputs quiclab keeps (results, tables, figures, captures): readable by all,
/// like a file the user's own `umask` would give.
pub const OUTPUT_MODE: u32 = 0o644;

/// A file being written in place of `dest`: a temporary file in the same directory that
/// [`AtomicFile::commit`] renames over `dest`, so readers see the old file or the whole new
/// one, never a part. Dropped without a commit, the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
}

impl AtomicFile {
    /// Starts replacing `dest` (mode [`OUTPUT_MODE`]); its directory must exist.
    pub fn new(dest: &Path) -> io::Result<AtomicFile> {
        AtomicFile::with_mode(dest, OUTPUT_MODE)
    }

    /// Starts replacing `dest` with a file of `mode`.
    pub fn with_mode(dest: &Path, mode: u32) -> io::Result<AtomicFile> {
        // Checked again when committing; failing here saves writing a file that cannot land.
        existing_regular(dest)?;
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = dest.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} does not name a file", dest.display()),
            )
        })?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        // tempfile creates with O_CREAT | O_EXCL under a random name and retries on a clash,
        // so a name planted in advance is never opened.
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .rand_bytes(8)
            .permissions(Permissions::from_mode(mode))
            .tempfile_in(dir)
            .map_err(|e| annotate(dir, "cannot create a temporary file in", e))?;
        // The umask may have removed bits from `mode`; set exactly what was asked.
        tmp.as_file()
            .set_permissions(Permissions::from_mode(mode))?;
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// The open temporary file.
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// Syncs the data and renames the file over the destination. Only a regular file is
    /// replaced: a symbolic link, a directory or a special file there is an error (a link
    /// could only be replaced, never followed, but one there was planted by someone else).
    pub fn commit(self) -> io::Result<()> {
        self.tmp.as_file().sync_all()?;
        let dest = self.dest;
        existing_regular(&dest)?;
        self.tmp.persist(&dest).map_err(|e| e.error)?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.as_file_mut().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.as_file_mut().flush()
    }
}

fn annotate(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Whether a regular file exists at `path` (itself, not what a link points to); an error for
/// anything else that exists there, naming what it is.
pub(crate) fn existing_regular(path: &Path) -> io::Result<bool> {
    let kind = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    if kind.is_file() {
        return Ok(true);
    }
    let what = if kind.is_symlink() {
        "a symbolic link"
    } else {
        crate::read::describe(&kind)
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file; refusing to replace it"),
    ))
}

/// Replaces `path` with `bytes` atomically (mode [`OUTPUT_MODE`]), see [`AtomicFile`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::new(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Opens the regular file `path` for appending (and reading), creating it with `mode` if
/// absent; a symbolic link in the last component, a FIFO or a device is an error.
pub fn open_append(path: &Path, mode: u32) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(mode)
        // O_NONBLOCK: opening a FIFO must not block before the type check.
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(explain_link)?;
    ensure_regular(&file)?;
    Ok(file)
}

/// Copies the regular file `src` to `dest` atomically (mode [`OUTPUT_MODE`]); a link or a
/// special file at `src` is refused, so a copy never publishes what a link points to.
pub fn copy_regular(src: &Path, dest: &Path) -> io::Result<u64> {
    let mut from = open_read(src)?;
    let mut to = AtomicFile::new(dest)?;
    let n = io::copy(&mut from, &mut to)?;
    to.commit()?;
    Ok(n)
}

/// Overwrites the existing regular file `path` from its start with `bytes`, creating nothing and
/// following no link: for kernel settings such as `/proc/sys/...`, which are written in place.
pub fn write_existing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(explain_link)?;
    ensure_regular(&file)?;
    file.write_all(bytes)
}
