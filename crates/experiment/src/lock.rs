//! One sweep per results directory at a time.
//!
//! Two sweeps writing one directory lose results: each appends to `results.jsonl`, and the
//! first to finish renames a sorted copy over it, so the other keeps appending to the replaced
//! file. [`DirLock`] holds an exclusive `flock` on `<dir>/.lock` for the whole sweep; a second
//! sweep fails at once, naming the directory and the process that holds it (waiting would
//! make the second sweep redo, after the first, whatever the first left undone, and could hang
//! a scripted run for hours; failing lets the user decide).
//!
//! The lock file is opened with `O_NOFOLLOW` (a link planted in a shared results directory
//! must not make root create or truncate another file) and never removed: removing it would
//! let a third process lock a fresh inode while the second still waits on the old one. The
//! kernel releases the lock when the process exits, however it exits, so a crash never leaves
//! a stale lock.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::ExperimentError;
use results::layout::LOCK_FILE;

/// An exclusive lock on a results directory, released on drop (or when the process exits).
#[derive(Debug)]
pub struct DirLock {
    /// Holding the descriptor holds the lock.
    _file: File,
    path: PathBuf,
}

impl DirLock {
    /// Locks `dir` (which must exist) or fails at once with [`ExperimentError::Locked`] when
    /// another sweep holds it. Records this process's id in the lock file for that message.
    pub fn acquire(dir: &Path) -> Result<DirLock, ExperimentError> {
        let path = dir.join(LOCK_FILE);
        let mut file = fsutil::open_regular(&path, true)
            .map_err(ExperimentError::io("cannot open the lock file", &path))?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut text = String::new();
                // The holder wrote its pid right after locking; a read racing that write
                // finds nothing, and the message then says the holder is unknown.
                let _ = Read::by_ref(&mut file).take(64).read_to_string(&mut text);
                return Err(ExperimentError::Locked {
                    dir: dir.to_path_buf(),
                    holder: text.trim().parse().ok(),
                });
            }
            return Err(ExperimentError::io("cannot lock", &path)(err));
        }
        let pid = std::process::id();
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{pid}"))
            .map_err(ExperimentError::io("cannot write", &path))?;
        Ok(DirLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_fails_naming_the_holder_and_a_dropped_lock_frees_the_dir() {
        let tmp = fsutil::PrivateDir::new("quiclab-lock-").expect("dir");
        let dir = tmp.path();
        let first = DirLock::acquire(dir).expect("first lock");
        // flock locks belong to the open file description, so a second open in the same
        // process conflicts exactly like another process would.
        let e = DirLock::acquire(dir).expect_err("second lock");
        let text = e.to_string();
        assert!(
            text.contains(&dir.display().to_string())
                && text.contains(&format!("process {}", std::process::id())),
            "{text}"
        );
        drop(first);
        let again = DirLock::acquire(dir).expect("free after drop");
        assert_eq!(again.path(), dir.join(LOCK_FILE));
        drop(again);
        tmp.remove().expect("clean up");
    }

    #[test]
    fn a_planted_link_is_not_followed() {
        let tmp = fsutil::PrivateDir::new("quiclab-lock-link-").expect("dir");
        let dir = tmp.path();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep me").expect("victim");
        std::os::unix::fs::symlink(&victim, dir.join(LOCK_FILE)).expect("plant link");
        DirLock::acquire(dir).expect_err("a link is refused");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep me");
        tmp.remove().expect("clean up");
    }
}
