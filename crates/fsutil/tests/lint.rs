//! Every file quiclab writes goes through `fsutil`: this test fails if a crate's non-test code
//! opens a file for writing, copies one or creates directories any other way.
//!
//! The rule, precisely: in `crates/*/src/**/*.rs` except `crates/fsutil`, no line of code may
//! contain one of [`FORBIDDEN`] as a whole path (not preceded by a letter, digit or `_`, so
//! `QlogFile::create` and `fsutil::create_dir_all` are fine), and no `use std::fs::...` line may
//! import `write`, `copy` or `create_dir_all` (which would hide the call's origin). Not code,
//! and so not scanned:
//! - files named `tests.rs`, `*_tests.rs` or `tests_*.rs`, and files inside a `tests/`
//!   directory under `src`;
//! - files a `#[cfg(test)] mod name;` declaration brings in (`name.rs` or `name/mod.rs` beside
//!   the declaring module);
//! - the body of an item marked `#[cfg(test)]` (from the attribute to the brace closing the
//!   item);
//! - comments (`//` to the end of the line).
//!
//! Tests may write however they like: they run in private temporary directories.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Calls that write or create files and directories without the checks `fsutil` makes.
const FORBIDDEN: &[&str] = &[
    "File::create",
    "File::options",
    "fs::write",
    "fs::copy",
    "OpenOptions",
    "fs::create_dir_all",
];

/// Functions of `std::fs` that may not be imported by name.
const FORBIDDEN_IMPORTS: &[&str] = &["write", "copy", "create_dir_all"];

/// The forbidden uses on one line of code.
fn offences_in(line: &str) -> Vec<&'static str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found: Vec<&'static str> = FORBIDDEN
        .iter()
        .copied()
        .filter(|bad| {
            line.match_indices(bad)
                .any(|(at, _)| !line[..at].chars().next_back().is_some_and(ident))
        })
        .collect();
    let trimmed = line.trim_start();
    if trimmed.starts_with("use std::fs::") || trimmed.starts_with("pub use std::fs::") {
        let words: Vec<&str> = trimmed.split(|c: char| !ident(c)).collect();
        found.extend(
            FORBIDDEN_IMPORTS
                .iter()
                .copied()
                .filter(|name| words.contains(name)),
        );
    }
    found
}

fn workspace_crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    name == "tests"
        || name.ends_with("_tests")
        || name.starts_with("tests_")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// A `#[cfg(test)]` item being skipped: its brace depth, and whether its body has opened.
struct Skip {
    depth: i64,
    opened: bool,
}

impl Skip {
    /// Takes one more line of the item; true when the item ends with it.
    fn take(&mut self, line: &str) -> bool {
        for c in line.chars() {
            match c {
                '{' => {
                    self.depth += 1;
                    self.opened = true;
                }
                '}' => self.depth -= 1,
                _ => {}
            }
        }
        (self.opened && self.depth <= 0) || (!self.opened && line.trim_end().ends_with(';'))
    }
}

/// Lines of `text` that are code outside `#[cfg(test)]` items, with their numbers (from 1),
/// comments removed; plus the modules declared `#[cfg(test)] mod name;`.
fn code_lines(text: &str) -> (Vec<(usize, String)>, Vec<String>) {
    let mut code = Vec::new();
    let mut test_mods = Vec::new();
    let mut skipping: Option<Skip> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.find("//").map_or(raw, |at| &raw[..at]);
        let mut item = line.trim();
        if skipping.is_none() {
            let Some(rest) = item.strip_prefix("#[cfg(test)]") else {
                code.push((i + 1, line.to_string()));
                continue;
            };
            skipping = Some(Skip {
                depth: 0,
                opened: false,
            });
            item = rest.trim();
        }
        let declared = ["mod ", "pub mod ", "pub(crate) mod "]
            .iter()
            .find_map(|p| item.strip_prefix(p)?.strip_suffix(';'));
        if let Some(name) = declared {
            test_mods.push(name.trim().to_string());
        }
        if skipping.as_mut().is_some_and(|s| s.take(item)) {
            skipping = None;
        }
    }
    (code, test_mods)
}

#[test]
fn no_file_writes_outside_fsutil() {
    let crates = workspace_crates();
    let mut offences = Vec::new();
    let mut scanned = 0;
    let mut dirs: Vec<_> = std::fs::read_dir(&crates)
        .expect("crates/")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    for krate in dirs {
        let src = krate.join("src");
        if krate.ends_with("fsutil") || !src.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut test_files = BTreeSet::new();
        let mut texts = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("read source");
            let (code, mods) = code_lines(&text);
            // `mod name;` in a.rs or mod.rs/lib.rs/main.rs: name.rs beside a.rs's module dir.
            let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let dir = file.parent().expect("parent");
            let base = if matches!(stem, "mod" | "lib" | "main") {
                dir.to_path_buf()
            } else {
                dir.join(stem)
            };
            for m in mods {
                test_files.insert(base.join(format!("{m}.rs")));
                test_files.insert(base.join(&m).join("mod.rs"));
                // A module of a non-mod file may also sit beside it (path attributes aside).
                test_files.insert(dir.join(format!("{m}.rs")));
            }
            texts.push((file.clone(), code));
        }
        for (file, code) in texts {
            let relative = file.strip_prefix(&src).expect("under src");
            if is_test_file(relative) || test_files.contains(&file) {
                continue;
            }
            scanned += 1;
            for (n, line) in code {
                for bad in offences_in(&line) {
                    offences.push(format!("{}:{n}: {bad}: {}", file.display(), line.trim()));
                }
            }
        }
    }
    assert!(scanned > 50, "only {scanned} source files found");
    assert!(
        offences.is_empty(),
        "files must be written through fsutil (create-new / atomic / no-follow), found:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_scanner_skips_tests_and_comments_only() {
    let text = "fn a() { std::fs::write(p, b) }\n\
                // File::create in a comment\n\
                #[cfg(test)]\n\
                mod tests {\n    fn b() { std::fs::write(p, b) }\n    fn c() {}\n}\n\
                #[cfg(test)] mod more_tests;\n\
                #[cfg(test)]\n\
                fn helper()\n{\n    File::create(p);\n}\n\
                fn d() { OpenOptions::new() }\n";
    let (code, mods) = code_lines(text);
    let lines: Vec<usize> = code
        .iter()
        .filter(|(_, l)| !offences_in(l).is_empty())
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(lines, vec![1, 14]);
    assert!(offences_in("QlogFile::create(p)").is_empty());
    assert!(offences_in("fsutil::create_dir_all(d)").is_empty());
    assert_eq!(
        offences_in("std::fs::create_dir_all(d)"),
        ["fs::create_dir_all"]
    );
    assert_eq!(offences_in("let f = File::create(p);"), ["File::create"]);
    assert_eq!(offences_in("use std::fs::{read, write};"), ["write"]);
    assert!(offences_in("use std::fs::{File, read_dir};").is_empty());
    assert_eq!(mods, vec!["more_tests".to_string()]);
    assert!(is_test_file(Path::new("runner/tests.rs")));
    assert!(is_test_file(Path::new("namespace_tests.rs")));
    assert!(is_test_file(Path::new("tests_bounds.rs")));
    assert!(!is_test_file(Path::new("store.rs")));
}
