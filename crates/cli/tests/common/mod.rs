//! Helpers shared by the binary's end-to-end tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory removed on drop: private (mode 0700, random name, created atomically),
/// since the tests run as root and a predictable /tmp name would let another user plant links.
pub struct Scratch(pub PathBuf, fsutil::PrivateDir);

impl Scratch {
    /// A fresh empty directory tagged `name`.
    pub fn new(name: &str) -> Self {
        let dir = fsutil::PrivateDir::new(&format!("quiclab-cli-{name}-")).expect("scratch dir");
        Scratch(dir.path().to_path_buf(), dir)
    }

    /// Writes `text` to `name` inside the directory.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write scenario");
        p
    }

    /// A path inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

/// Runs the built binary in `cwd`.
pub fn quiclab(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quiclab"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run quiclab")
}

/// Lossy UTF-8 of a process's output.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
