//! Names that become path components (`run.name` → `results/<name>/`, flow names → qlog file
//! names): names, never paths.
//!
//! A name such as `"/etc"` or `"../../x"` would make `quiclab sim` (often run as root for the
//! emulator) write `results.jsonl`, `summary.csv` and `series/` anywhere on the machine, so a
//! name is one plain path component: no separators, no leading dot (no `.`, `..` or hidden
//! files), no leading `-` (it would read as a flag in a shell command line).

use crate::error::{At, Errors, ScenarioError};

/// Longest accepted name, in characters: well under any file system's 255-byte component limit
/// even with the suffixes quiclab adds (`-client-12.sqlog`, `.{copy}`).
pub const MAX_NAME_LEN: usize = 100;

/// The characters a name may use, for messages and docs.
pub const NAME_CHARS: &str =
    "ASCII letters, digits, '-', '_' and '.', starting with a letter or digit, at most 100 characters";

/// Checks that `name` is a plain name (see the module doc); the message says what is wrong.
pub fn check_name(name: &str) -> Result<(), String> {
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let chars_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if name.is_empty() {
        return Err("a name cannot be empty".into());
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err(format!("{name:?} is longer than {MAX_NAME_LEN} characters"));
    }
    if !chars_ok || !first_ok {
        return Err(format!(
            "{name:?} is not a plain name (names become file and directory names, never paths)"
        ));
    }
    Ok(())
}

/// [`check_name`] as a positioned scenario error about `key`, listing the allowed characters.
pub(crate) fn check_key_name(
    name: &str,
    key: &str,
    at: &At,
    errors: &Errors,
) -> Result<(), ScenarioError> {
    check_name(name).map_err(|m| {
        errors
            .at(at, format!("{key}: {m}"))
            .with_allowed(&[NAME_CHARS])
    })
}

/// A default name derived from a file name (`run.name` unset): the file stem is one path
/// component already, so only the components that mean "here" or "up" are refused.
pub(crate) fn check_default_name(name: &str, errors: &Errors) -> Result<(), ScenarioError> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(errors
            .whole(format!(
                "the file name gives the scenario the name {name:?}, which cannot be a results directory; set run.name"
            ))
            .with_allowed(&[NAME_CHARS]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_not_names() {
        for bad in [
            "",
            "/abs/path",
            "../../../x",
            "..",
            ".",
            "a/b",
            ".hidden",
            "-flag",
            "a b",
            "a\\b",
            "x\0y",
            "é",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name(&"a".repeat(MAX_NAME_LEN + 1)).is_err());
        for good in [
            "bulk",
            "bench-tcp-1gbit",
            "flow0",
            "download.3",
            "a_b",
            "9x",
        ] {
            assert_eq!(check_name(good), Ok(()), "{good:?}");
        }
    }
}
