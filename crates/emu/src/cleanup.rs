//! Per-run lock files and removal of what a dead run left behind.
//!
//! Every run holds an exclusive `flock` on `/run/quiclab/<run id>.lock` for its whole life,
//! taken *before* its first namespace exists. The kernel drops the lock when the process dies,
//! however it dies, so "namespace `ql<id>-*` exists and nobody holds `<id>.lock`" means the run
//! that made it is dead and its leftovers may go, while a live run's set is never touched.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::EmuError;
use crate::netns;

/// Directory of the lock files.
pub const LOCK_DIR: &str = "/run/quiclab";

/// Prefix of every namespace quiclab creates.
pub const NS_PREFIX: &str = "ql";

/// What [`cleanup_stale`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Namespaces deleted.
    pub namespaces: Vec<String>,
    /// Processes killed inside them.
    pub processes: usize,
    /// Stale lock files removed.
    pub lock_files: usize,
    /// Namespaces left alone because their run is alive.
    pub live_skipped: Vec<String>,
}

/// The held lock of one live run.
#[derive(Debug)]
pub struct RunLock {
    file: Option<File>,
    path: PathBuf,
}

fn lock_path(run_id: &str) -> PathBuf {
    Path::new(LOCK_DIR).join(format!("{run_id}.lock"))
}

/// Tries an exclusive non-blocking flock; `Ok(false)` if another holder has it.
fn try_flock(file: &File) -> Result<bool, EmuError> {
    // SAFETY: flock on a valid fd.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(EmuError::io("flock", err))
    }
}

impl RunLock {
    /// Takes the lock of `run_id`; fails if another process holds it.
    pub fn acquire(run_id: &str) -> Result<RunLock, EmuError> {
        std::fs::create_dir_all(LOCK_DIR)
            .map_err(|e| EmuError::io(format!("cannot create {LOCK_DIR}"), e))?;
        let path = lock_path(run_id);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| EmuError::io(format!("cannot open {}", path.display()), e))?;
        if !try_flock(&file)? {
            return Err(EmuError::Unsupported(format!(
                "run id {run_id} is already in use by a live run"
            )));
        }
        let _ = file.set_len(0);
        let _ = writeln!(file, "{}", std::process::id());
        Ok(RunLock {
            file: Some(file),
            path,
        })
    }

    /// Removes the lock file and releases the lock (end of a run).
    pub fn release(mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.file = None;
    }

    /// Releases the lock but leaves the file, as a killed process would (tests of cleanup).
    pub fn abandon(mut self) {
        self.file = None;
        self.path = PathBuf::new();
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        if self.file.is_some() && !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Run id of a quiclab namespace name (`ql<id>-c0` → `<id>`), `None` for other names.
pub fn run_id_of(ns: &str) -> Option<&str> {
    let rest = ns.strip_prefix(NS_PREFIX)?;
    let id = rest.split('-').next().unwrap_or(rest);
    (!id.is_empty()).then_some(id)
}

/// Whether a live process holds the lock of `run_id`.
pub fn is_live(run_id: &str) -> Result<bool, EmuError> {
    let path = lock_path(run_id);
    let file = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(EmuError::io(format!("cannot open {}", path.display()), e)),
    };
    // Taking the lock proves nobody else holds it; it is released when `file` closes.
    Ok(!try_flock(&file)?)
}

/// The `ql*` namespaces whose run is dead: what [`cleanup_stale`] would remove.
pub fn stale_namespaces() -> Result<Vec<String>, EmuError> {
    let mut stale = Vec::new();
    for ns in netns::list()? {
        if let Some(id) = run_id_of(&ns) {
            if !is_live(id)? {
                stale.push(ns);
            }
        }
    }
    Ok(stale)
}

/// Removes every `ql*` namespace (killing its processes) and lock file whose run is dead.
pub fn cleanup_stale() -> Result<CleanupReport, EmuError> {
    if !netns::is_root() {
        return Err(EmuError::NotRoot);
    }
    let mut report = CleanupReport::default();
    for ns in netns::list()? {
        let Some(id) = run_id_of(&ns) else { continue };
        if is_live(id)? {
            report.live_skipped.push(ns);
            continue;
        }
        report.processes += netns::pids(&ns).len();
        netns::destroy(&ns)?;
        report.namespaces.push(ns);
    }
    let entries = match std::fs::read_dir(LOCK_DIR) {
        Ok(d) => d.filter_map(|e| e.ok()).collect::<Vec<_>>(),
        Err(_) => Vec::new(),
    };
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".lock") else {
            continue;
        };
        if !is_live(id)? && std::fs::remove_file(entry.path()).is_ok() {
            report.lock_files += 1;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_come_from_quiclab_names_only() {
        assert_eq!(run_id_of("qlab12f-c0"), Some("ab12f"));
        assert_eq!(run_id_of("qlab12f-r"), Some("ab12f"));
        assert_eq!(run_id_of("qlx"), Some("x"));
        assert_eq!(run_id_of("ql-c0"), None);
        assert_eq!(run_id_of("other"), None);
    }
}
