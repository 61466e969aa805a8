//! Per-run lock files and removal of what a dead run left behind.
//!
//! Every run holds an exclusive `flock` on `/run/quiclab/<run id>.lock` for its whole life,
//! taken *before* its first namespace or log directory exists, and writes its pid into it. The
//! kernel drops the lock when the process dies, however it dies. Something is quiclab's, and may
//! be removed, only when both hold:
//!
//! - its name is exactly what quiclab generates: namespace `ql<id>-r`, `ql<id>-c<n>`,
//!   `ql<id>-s<n>`, `ql<id>-p<n>` (flow n's PEP), log directory `quiclab-emu-<id>-<random>` (`<id>` 6 lowercase hex digits);
//! - the lock file `<id>.lock` exists (the ownership record) and nobody holds its lock.
//!
//! A namespace such as `qlmine-x`, or `ql0a1b2c-c0` without a lock file, belongs to someone
//! else and is never touched. The lock directory must be a real directory owned by root and
//! writable by nobody else; lock files are opened without following links and must be regular.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::EmuError;
use crate::netns;

/// Directory of the lock files.
pub const LOCK_DIR: &str = "/run/quiclab";

/// Prefix of every namespace quiclab creates.
pub const NS_PREFIX: &str = "ql";

/// Prefix of a lone run's private log directory (`quiclab-emu-<run id>-<random>`).
pub const LOG_DIR_PREFIX: &str = "quiclab-emu-";

/// Length of a run id (lowercase hex digits).
pub const RUN_ID_LEN: usize = 6;

/// What [`cleanup_stale`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Namespaces deleted.
    pub namespaces: Vec<String>,
    /// Processes killed inside them.
    pub processes: usize,
    /// Stale lock files removed.
    pub lock_files: usize,
    /// Log directories of dead runs removed.
    pub log_dirs: Vec<PathBuf>,
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

/// Creates (or checks) the lock directory: root's, not a link, writable by root only.
fn lock_dir() -> Result<(), EmuError> {
    fsutil::ensure_private_root_dir(Path::new(LOCK_DIR), 0o755)
        .map_err(|e| EmuError::io(format!("unsafe or unusable lock directory {LOCK_DIR}"), e))
}

/// Tries a non-blocking flock (`libc::LOCK_EX` or `LOCK_SH`); `Ok(false)` if a conflicting holder
/// has it.
fn try_flock(file: &File, mode: libc::c_int) -> Result<bool, EmuError> {
    // SAFETY: flock on a valid fd.
    let rc = unsafe { libc::flock(file.as_raw_fd(), mode | libc::LOCK_NB) };
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
        if !is_run_id(run_id) {
            return Err(EmuError::Unsupported(format!("invalid run id {run_id:?}")));
        }
        lock_dir()?;
        let path = lock_path(run_id);
        let mut file = fsutil::open_regular(&path, true)
            .map_err(|e| EmuError::io(format!("cannot open {}", path.display()), e))?;
        if !try_flock(&file, libc::LOCK_EX)? {
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

/// Whether `id` has the shape of the run ids quiclab makes (6 lowercase hex digits).
pub fn is_run_id(id: &str) -> bool {
    id.len() == RUN_ID_LEN && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Run id of a namespace name quiclab generates (`ql<id>-r`, `ql<id>-c<n>`, `ql<id>-s<n>`,
/// `ql<id>-p<n>` with `<n>` a decimal index without leading zeros), `None` for any other name.
pub fn run_id_of(ns: &str) -> Option<&str> {
    let rest = ns.strip_prefix(NS_PREFIX)?;
    let (id, role) = rest.split_once('-')?;
    if !is_run_id(id) {
        return None;
    }
    let ok = match role.as_bytes() {
        [b'r'] => true,
        [b'c' | b's' | b'p', digits @ ..] => {
            !digits.is_empty()
                && digits.len() <= 3
                && digits.iter().all(u8::is_ascii_digit)
                && (digits.len() == 1 || digits[0] != b'0')
        }
        _ => false,
    };
    ok.then_some(id)
}

/// Run id of a lone run's log directory name (`quiclab-emu-<id>-<8 alphanumerics>`).
pub fn run_id_of_log_dir(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(LOG_DIR_PREFIX)?;
    let (id, random) = rest.split_once('-')?;
    (is_run_id(id) && random.len() == 8 && random.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then_some(id)
}

/// Who owns a run id, according to its lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A live process holds the lock.
    Live,
    /// The lock file exists and nobody holds it: the run died.
    Dead,
    /// No lock file: nothing proves the name is quiclab's.
    Unknown,
}

/// Who owns `run_id` (see [`Owner`]).
pub fn owner(run_id: &str) -> Result<Owner, EmuError> {
    if !is_run_id(run_id) {
        return Ok(Owner::Unknown);
    }
    let path = lock_path(run_id);
    let file = match fsutil::open_regular(&path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Owner::Unknown),
        Err(e) => return Err(EmuError::io(format!("cannot open {}", path.display()), e)),
    };
    // A shared lock is granted unless the run holds its exclusive one, so two cleanups probing
    // the same file at once both see a dead run (an exclusive probe would make each see the
    // other as the live owner). It is released when `file` closes.
    Ok(if try_flock(&file, libc::LOCK_SH)? {
        Owner::Dead
    } else {
        Owner::Live
    })
}

/// The namespaces of dead quiclab runs: what [`cleanup_stale`] would remove.
pub fn stale_namespaces() -> Result<Vec<String>, EmuError> {
    let mut stale = Vec::new();
    for ns in netns::list()? {
        if let Some(id) = run_id_of(&ns) {
            if owner(id)? == Owner::Dead {
                stale.push(ns);
            }
        }
    }
    Ok(stale)
}

/// Where lone runs' log directories may be: `$TMPDIR` (else `/tmp`), and `/tmp` itself.
fn log_dir_parents() -> Vec<PathBuf> {
    let mut parents = vec![std::env::temp_dir()];
    if parents[0] != Path::new("/tmp") {
        parents.push(PathBuf::from("/tmp"));
    }
    parents
}

/// Log directories of dead runs: named exactly as quiclab names them, real directories owned by
/// us with a private mode (never links), and their run's lock file exists with nobody holding it.
pub fn stale_log_dirs() -> Result<Vec<PathBuf>, EmuError> {
    let mut stale = Vec::new();
    for parent in log_dir_parents() {
        let dirs = fsutil::owned_dirs(&parent, LOG_DIR_PREFIX)
            .map_err(|e| EmuError::io(format!("cannot list {}", parent.display()), e))?;
        for d in dirs {
            if let Some(id) = run_id_of_log_dir(&d.name) {
                if owner(id)? == Owner::Dead {
                    stale.push(d.path);
                }
            }
        }
    }
    Ok(stale)
}

/// Removes the namespaces (killing their processes), log directories and lock files of dead
/// quiclab runs; anything without a dead run's lock record is left alone.
pub fn cleanup_stale() -> Result<CleanupReport, EmuError> {
    if !netns::is_root() {
        return Err(EmuError::NotRoot);
    }
    lock_dir()?;
    let mut report = CleanupReport::default();
    for ns in netns::list()? {
        let Some(id) = run_id_of(&ns) else { continue };
        match owner(id)? {
            Owner::Live => report.live_skipped.push(ns),
            Owner::Unknown => {}
            Owner::Dead => {
                report.processes += netns::pids(&ns).len();
                netns::destroy(&ns)?;
                report.namespaces.push(ns);
            }
        }
    }
    for dir in stale_log_dirs()? {
        fsutil::remove_tree(&dir)
            .map_err(|e| EmuError::io(format!("cannot remove {}", dir.display()), e))?;
        report.log_dirs.push(dir);
    }
    // Lock records go last: they are what proves the namespaces and directories above ours.
    let entries = match std::fs::read_dir(LOCK_DIR) {
        Ok(d) => d.filter_map(|e| e.ok()).collect::<Vec<_>>(),
        Err(_) => Vec::new(),
    };
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".lock") else {
            continue;
        };
        // Keep a record while something of its run is still there (a failed removal): the
        // next cleanup needs it as proof.
        let leftovers = netns::list()?.iter().any(|ns| run_id_of(ns) == Some(id));
        if !leftovers && owner(id)? == Owner::Dead && std::fs::remove_file(entry.path()).is_ok() {
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
        assert_eq!(run_id_of("qlab12f0-c0"), Some("ab12f0"));
        assert_eq!(run_id_of("qlab12f0-s12"), Some("ab12f0"));
        assert_eq!(run_id_of("qlab12f0-r"), Some("ab12f0"));
        assert_eq!(run_id_of("qlab12f0-p3"), Some("ab12f0"));
        // Names of other people that merely start with `ql`.
        for name in [
            "qlx",
            "qlmine-x",
            "ql-c0",
            "qlab12f-c0",
            "qlAB12F0-c0",
            "qlab12f0-c",
            "qlab12f0-c01",
            "qlab12f0-c0x",
            "qlab12f0-x0",
            "qlab12f0-p",
            "qlab12f0-p01",
            "qlab12f0-pep",
            "qlab12f0-r1",
            "qlab12f0-c1234",
            "qlab12f0",
            "other",
        ] {
            assert_eq!(run_id_of(name), None, "{name}");
        }
    }

    #[test]
    fn log_dir_names_are_matched_exactly() {
        assert_eq!(
            run_id_of_log_dir("quiclab-emu-ab12f0-Xy3z9QaB"),
            Some("ab12f0")
        );
        for name in [
            "quiclab-emu-1234",
            "quiclab-emu-ab12f0-short",
            "quiclab-emu-ab12f0-Xy3z9Qa/",
            "quiclab-emu-ab12f0-Xy3z9QaBc",
            "quiclab-emu-AB12F0-Xy3z9QaB",
            "quiclab-emu-pcap-1234",
        ] {
            assert_eq!(run_id_of_log_dir(name), None, "{name}");
        }
    }
}
