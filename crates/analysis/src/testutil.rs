//! Scratch directories for tests, unique per test and removed when dropped.

use std::path::Path;

/// A fresh empty private directory (random name, mode 0700) under the system temp dir, deleted
/// on drop.
pub(crate) struct TempDir(fsutil::PrivateDir);

impl TempDir {
    /// Creates a directory whose name cannot collide with parallel tests or processes, nor reuse
    /// a path another user created in advance.
    pub(crate) fn new(tag: &str) -> TempDir {
        TempDir(
            fsutil::PrivateDir::new(&format!("quiclab-report-{tag}-")).expect("create test dir"),
        )
    }

    /// The directory's path.
    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }
}
