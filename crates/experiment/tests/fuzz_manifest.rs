//! Property tests of the `sweep.json` reader used by `--resume`: a manifest that is truncated,
//! corrupted, arbitrary bytes or valid JSON of another sweep gives an error (or, only when it is
//! byte-for-byte the scenario's own record, success), never a panic.
//!
//! CI runs a small budget; `scripts/fuzz.sh` sets `PROPTEST_CASES` for a long run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use experiment::manifest::{check_and_write, manifest};
use proptest::prelude::*;
use results::layout::MANIFEST_FILE;
use scenario::{parse_str, LoadedScenario};

/// The budget of one property in a normal `cargo test`, unless `PROPTEST_CASES` says otherwise.
fn config(ci_cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = ci_cases;
    }
    c
}

/// A fresh directory under the build's scratch directory, removed on drop (only the files the
/// manifest code writes, then the directory).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "fuzz-manifest-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).expect("a fresh directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for name in [MANIFEST_FILE, "sweep.json.tmp"] {
            let _ = std::fs::remove_file(self.0.join(name));
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn loaded() -> LoadedScenario {
    let text = "[link]\nrate = \"10Mbit\"\n[sweep]\n\"link.delay\" = [\"10ms\", \"20ms\"]\n";
    parse_str(text, "fuzz.toml", Path::new("."), &[], &[]).expect("a valid scenario")
}

/// Writes `bytes` as sweep.json and resumes over it; `Ok(true)` when it was accepted.
fn resume_over(bytes: &[u8]) -> Result<bool, TestCaseError> {
    let dir = Scratch::new();
    std::fs::write(dir.0.join(MANIFEST_FILE), bytes)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let accepted = check_and_write(&dir.0, &loaded(), true).is_ok();
    Ok(accepted)
}

fn own_record() -> Vec<u8> {
    let mut t = serde_json::to_string_pretty(&manifest(&loaded())).expect("json");
    t.push('\n');
    t.into_bytes()
}

proptest! {
    #![proptest_config(config(100))]

    #[test]
    fn arbitrary_bytes_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        prop_assert!(!resume_over(&bytes)?, "arbitrary bytes accepted as this sweep's manifest");
    }

    #[test]
    fn corrupted_manifests_are_refused_unless_unchanged(edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..4), cut in any::<usize>()) {
        let original = own_record();
        let mut bytes = original.clone();
        for (at, b) in edits {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        let accepted = resume_over(&bytes)?;
        // The record is compared byte for byte: only an unchanged file is this sweep's.
        prop_assert_eq!(accepted, bytes == original);
    }
}

#[test]
fn the_own_record_is_accepted() {
    assert!(resume_over(&own_record()).expect("no failure"));
}
