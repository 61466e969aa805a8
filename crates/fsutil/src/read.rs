//! Reading files without trusting them: regular files only, opened without blocking, and never
//! more than a stated number of bytes.
//!
//! A FIFO blocks the opener until a writer appears, and `/dev/zero` never ends; either one
//! planted in a results directory would hang quiclab or exhaust its memory. Every open here
//! passes `O_NONBLOCK` (so opening a FIFO returns at once), checks the type on the opened
//! descriptor (so nothing can be swapped in between the check and the read), and refuses
//! anything but a regular file before reading a byte.
//!
//! Two flavours differ only in links: [`open_read`] and the `read_*bounded` functions refuse a
//! symbolic link in the last component (files inside a directory other users may write to),
//! while [`open_input`] and the `read_input_*` functions follow links (a path the user named,
//! such as a scenario file that links into a data directory).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::explain_link;

/// Opens `path` for reading if it is a regular file, refusing a symbolic link in its last
/// component. The descriptor is blocking again when returned.
pub fn open_read(path: &Path) -> io::Result<File> {
    open_checked(path, libc::O_NOFOLLOW)
}

/// Opens `path` for reading if it is (or links to) a regular file: for paths the user names.
pub fn open_input(path: &Path) -> io::Result<File> {
    open_checked(path, 0)
}

fn open_checked(path: &Path, extra_flags: libc::c_int) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | extra_flags)
        .open(path)
        .map_err(explain_link)?;
    ensure_regular(&file)?;
    clear_nonblock(&file)?;
    Ok(file)
}

/// An error unless the opened `file` is a regular file; the message says what it is.
pub(crate) fn ensure_regular(file: &File) -> io::Result<()> {
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{}, not a regular file; only regular files are used",
            describe(&kind)
        ),
    ))
}

/// What a non-regular file is, for error messages.
pub(crate) fn describe(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// Regular files ignore O_NONBLOCK today, but readers should not depend on that.
fn clear_nonblock(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor owned by `file`; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads at most `max` bytes of `file`; more is an error naming the limit (a file
/// that grows while it is read is caught too, not only one whose size says so).
fn read_at_most(file: File, max: u64) -> io::Result<Vec<u8>> {
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than the limit of {max} bytes"),
        )
    };
    if file.metadata()?.len() > max {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_big());
    }
    Ok(bytes)
}

fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8 text"))
}

/// The whole of a regular file of at most `max` bytes, without following a link.
pub fn read_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_at_most(open_read(path)?, max)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_to_string_bounded(path: &Path, max: u64) -> io::Result<String> {
    utf8(read_bounded(path, max)?)
}

/// The whole of a regular file of at most `max` bytes that the user named (links followed).
pub fn read_input_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_at_most(open_input(path)?, max)
}

/// [`read_input_bounded`] as UTF-8 text.
pub fn read_input_to_string_bounded(path: &Path, max: u64) -> io::Result<String> {
    utf8(read_input_bounded(path, max)?)
}
