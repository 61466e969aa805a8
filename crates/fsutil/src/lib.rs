//! Root-safe filesystem operations, for a program that runs as root next to other users.
//!
//! A shared directory such as `/tmp` lets any local user create names in it. A root process
//! that opens a predictable path there (`/tmp/quiclab-emu-<pid>/server-0.err`) follows whatever
//! symlink another user planted and overwrites its target. The rules kept here:
//!
//! - scratch space is a [`PrivateDir`]: a fresh name chosen at random, created atomically with
//!   `mkdir` (an existing path is never reused), mode 0700, removed on drop;
//! - files are created with [`create_new`]: `O_CREAT | O_EXCL | O_NOFOLLOW`, so an existing name
//!   or a link is an error rather than a target;
//! - removal ([`remove_tree`]) never follows links: a link is removed, not what it points to;
//! - a directory a root program keeps state in ([`ensure_private_root_dir`]) must be a real
//!   directory owned by the caller and writable by nobody else, and files in it are opened with
//!   [`open_regular`] (no links, regular files only).
//!
//! Leftovers of killed processes are found with [`owned_dirs`], which lists only real
//! directories owned by the caller with a private mode, so a caller removing them by name pattern
//! never touches another user's files.
//!
//! This crate is the one place quiclab opens files for writing (a test in `tests/lint.rs`
//! keeps `File::create`, `fs::write`, `fs::copy` and `OpenOptions` out of every other crate's
//! non-test code):
//!
//! - whole outputs (results, tables, figures, captures) are replaced atomically with
//!   [`write_atomic`] / [`AtomicFile`]: a temporary file created exclusively under a random
//!   name beside the destination, renamed over it (a link there is replaced, not followed);
//! - logs and the results store are appended with [`open_append`] (no links, regular files);
//! - copies go through [`copy_regular`], which refuses a linked or special source;
//! - output directories are made with [`create_dir_all`], which refuses a link as the last
//!   component;
//! - reads are bounded ([`read_bounded`], [`read_to_string_bounded`]) and never block: a FIFO,
//!   `/dev/zero` or another special file is refused before a byte is read.

mod dir;
mod read;
mod write;

pub use dir::{create_dir_all, ensure_real_dir};
pub use read::{
    open_input, open_read, read_bounded, read_input_bounded, read_input_to_string_bounded,
    read_to_string_bounded,
};
pub use write::{copy_regular, open_append, write_atomic, write_existing, AtomicFile, OUTPUT_MODE};

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// A private temporary directory: random name, mode 0700, created atomically, removed (without
/// following links) when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    dir: tempfile::TempDir,
}

impl PrivateDir {
    /// Creates `<temp dir>/<prefix><random>` (`$TMPDIR`, else `/tmp`).
    pub fn new(prefix: &str) -> io::Result<PrivateDir> {
        PrivateDir::new_in(&std::env::temp_dir(), prefix)
    }

    /// Creates `<parent>/<prefix><random>`. `mkdir` fails on an existing name, so a directory
    /// (or link) planted in advance is never reused: tempfile then tries another random name.
    pub fn new_in(parent: &Path, prefix: &str) -> io::Result<PrivateDir> {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .rand_bytes(8)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(parent)?;
        // The mode passed to mkdir is masked by the umask; 0700 can only lose bits, but make
        // the promise explicit.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        Ok(PrivateDir { dir })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Creates the new file `name` (one path component) inside the directory, see [`create_new`].
    pub fn create_file(&self, name: &str) -> io::Result<File> {
        create_new(&self.join(name)?)
    }

    /// `path()/name` for a single normal component (no `/`, `..` or absolute names).
    pub fn join(&self, name: &str) -> io::Result<PathBuf> {
        let mut parts = Path::new(name).components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(_)), None) => Ok(self.path().join(name)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a plain file name"),
            )),
        }
    }

    /// Keeps the directory (it is no longer removed on drop) and returns its path: for results
    /// meant to outlive the program, still created with a random name and mode 0700.
    pub fn keep(self) -> PathBuf {
        self.dir.keep()
    }

    /// Removes the directory now, reporting a failure (dropping removes it silently).
    pub fn remove(self) -> io::Result<()> {
        self.dir.close()
    }
}

/// Creates a new file for writing, mode 0600: fails if anything — a file, a directory, a
/// symlink (even a dangling one) — already has that name, so it never writes through a link.
pub fn create_new(path: &Path) -> io::Result<File> {
    create_new_with_mode(path, 0o600)
}

/// [`create_new`] with the given mode (before the umask).
pub fn create_new_with_mode(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Replaces the file at `path` with a new, empty one of `mode`, for files written as they go
/// (traces, logs, records) rather than whole ([`write_atomic`]). An existing regular file is
/// unlinked first (other hard links to it keep their content), then [`create_new_with_mode`]
/// creates the file, so a name planted between the two steps is an error rather than a target.
/// A symbolic link, a directory or a special file at `path` is an error: nothing quiclab
/// writes is anything but a regular file, and a link there was put by someone else.
pub fn create_replacing(path: &Path, mode: u32) -> io::Result<File> {
    if write::existing_regular(path)? {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    create_new_with_mode(path, mode).map_err(explain_link)
}

/// Opens a regular file for reading and writing without following a link in its last
/// component; with `create`, creates it (mode 0600) if absent. Anything but a regular file is an
/// error (a FIFO would block, a device would be written to).
pub fn open_regular(path: &Path, create: bool) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .mode(0o600)
        // O_NONBLOCK: opening a FIFO must not block before the type check below.
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(explain_link)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

/// ELOOP from O_NOFOLLOW means "the last component is a symlink": say so. Like std's errors,
/// the messages of this crate do not repeat the path; callers name it.
pub(crate) fn explain_link(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a symbolic link; refusing to follow it",
        )
    } else {
        e
    }
}

/// Removes `path` without ever following a link: a symlink is unlinked itself, a directory is
/// removed with its contents (links inside are removed, never followed), a file is unlinked.
/// A missing path is not an error.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let result = if meta.file_type().is_dir() {
        // std's remove_dir_all walks with openat(O_NOFOLLOW) and unlinkat (the fix of
        // CVE-2022-21658), so it never leaves the tree through a link.
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Makes sure `path` is a directory the caller can keep state in safely: created with `mode` if
/// absent; if present it must be a real directory (not a link), owned by the effective user and
/// not writable by group or others. Anything else is an error naming what is wrong.
pub fn ensure_private_root_dir(path: &Path, mode: u32) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => {
            // The umask may have removed bits; it never adds any, so the result stays safe.
            return check_private_dir(path);
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private_dir(path)
}

fn check_private_dir(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    let bad = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}; refusing to use it", path.display()),
        ))
    };
    if meta.file_type().is_symlink() {
        return bad("is a symbolic link");
    }
    if !meta.file_type().is_dir() {
        return bad("is not a directory");
    }
    if meta.uid() != euid() {
        return bad(&format!("is owned by uid {}, not {}", meta.uid(), euid()));
    }
    if meta.mode() & 0o022 != 0 {
        return bad(&format!(
            "is writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// An entry found by [`owned_dirs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedDir {
    /// File name inside the parent.
    pub name: String,
    /// Full path.
    pub path: PathBuf,
}

/// Directories in `parent` whose name starts with `prefix` and that provably belong to the
/// caller: real directories (links are skipped), owned by the effective user, mode without any
/// group or other bits (as [`PrivateDir`] creates them). A missing `parent` yields nothing.
///
/// Removing what this returns is safe in a sticky shared directory such as `/tmp`: other users
/// cannot rename or replace an entry the caller owns there.
pub fn owned_dirs(parent: &Path, prefix: &str) -> io::Result<Vec<OwnedDir>> {
    let entries = match std::fs::read_dir(parent) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let me = euid();
    let mut found = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        // symlink_metadata: the entry itself, never what a link points to.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_dir() && meta.uid() == me && meta.mode() & 0o077 == 0 {
            found.push(OwnedDir { name, path });
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::symlink;

    #[test]
    fn private_dirs_are_fresh_0700_and_removed_on_drop() {
        let a = PrivateDir::new("fsutil-test-").expect("create");
        let b = PrivateDir::new("fsutil-test-").expect("create");
        assert_ne!(a.path(), b.path());
        let meta = std::fs::symlink_metadata(a.path()).expect("stat");
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        let path = a.path().to_path_buf();
        let mut f = a.create_file("x.log").expect("file");
        f.write_all(b"hi").expect("write");
        drop(a);
        assert!(!path.exists());
        let kept = b.keep();
        assert!(kept.is_dir());
        remove_tree(&kept).expect("remove");
    }

    #[test]
    fn create_new_refuses_links_and_existing_names() {
        let dir = PrivateDir::new("fsutil-test-").expect("create");
        let target = dir.path().join("target");
        std::fs::write(&target, "precious").expect("write");
        let link = dir.path().join("link");
        symlink(&target, &link).expect("symlink");
        assert!(create_new(&link).is_err());
        assert!(dir.create_file("link").is_err());
        assert!(dir.create_file("target").is_err());
        let dangling = dir.path().join("dangling");
        symlink(dir.path().join("nowhere"), &dangling).expect("symlink");
        assert!(create_new(&dangling).is_err());
        assert!(!dir.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        let err = create_replacing(&link, 0o600).expect_err("a link is refused");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        let mut f = create_replacing(&target, 0o600).expect("replace a file");
        f.write_all(b"new").expect("write");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        create_replacing(&dir.path().join("fresh"), 0o644).expect("create");
        assert!(create_replacing(dir.path(), 0o600).is_err());
        assert!(dir.create_file("../escape").is_err());
        assert!(dir.create_file("/abs").is_err());
    }

    #[test]
    fn open_regular_refuses_links_and_fifos() {
        let dir = PrivateDir::new("fsutil-test-").expect("create");
        let target = dir.path().join("target");
        std::fs::write(&target, "precious").expect("write");
        let link = dir.path().join("link");
        symlink(&target, &link).expect("symlink");
        let err = open_regular(&link, true).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = open_regular(&fifo, false).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        open_regular(&dir.path().join("new.lock"), true).expect("create");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }

    #[test]
    fn remove_tree_never_follows_links() {
        let outside = PrivateDir::new("fsutil-test-").expect("create");
        std::fs::write(outside.path().join("keep"), "x").expect("write");
        let dir = PrivateDir::new("fsutil-test-").expect("create");
        symlink(outside.path(), dir.path().join("link-to-dir")).expect("symlink");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        symlink(outside.path().join("keep"), dir.path().join("sub/link")).expect("symlink");
        let top_link = outside.path().join("top-link");
        let victim = PrivateDir::new("fsutil-test-").expect("create");
        symlink(victim.path(), &top_link).expect("symlink");
        remove_tree(dir.path()).expect("remove");
        assert!(!dir.path().exists());
        assert!(outside.path().join("keep").exists());
        // A link given as the path itself: the link goes, its target stays.
        remove_tree(&top_link).expect("remove link");
        assert!(std::fs::symlink_metadata(&top_link).is_err());
        assert!(victim.path().is_dir());
        remove_tree(&outside.path().join("missing")).expect("missing is fine");
    }

    #[test]
    fn private_root_dirs_reject_links_and_loose_modes() {
        let base = PrivateDir::new("fsutil-test-").expect("create");
        let good = base.path().join("state");
        ensure_private_root_dir(&good, 0o755).expect("create");
        ensure_private_root_dir(&good, 0o755).expect("reuse");
        let link = base.path().join("link");
        symlink(&good, &link).expect("symlink");
        let err = ensure_private_root_dir(&link, 0o755).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let loose = base.path().join("loose");
        std::fs::create_dir(&loose).expect("mkdir");
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = ensure_private_root_dir(&loose, 0o755).unwrap_err();
        assert!(err.to_string().contains("writable"), "{err}");
    }

    #[test]
    fn owned_dirs_lists_only_private_real_directories() {
        let base = PrivateDir::new("fsutil-test-").expect("create");
        let mine = PrivateDir::new_in(base.path(), "app-").expect("create");
        let open = base.path().join("app-open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        symlink(mine.path(), base.path().join("app-link")).expect("symlink");
        std::fs::write(base.path().join("app-file"), "x").expect("write");
        let found = owned_dirs(base.path(), "app-").expect("list");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, mine.path());
        assert!(owned_dirs(&base.path().join("none"), "app-")
            .expect("missing")
            .is_empty());
    }
}
