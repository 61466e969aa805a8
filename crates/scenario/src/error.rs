//! The one error type of this crate and the positions it points at.

use std::fmt;
use std::sync::Arc;

/// A problem in a scenario file or a command-line override, with where it is.
///
/// Displays as `file:line:col: message; allowed: a, b` (the position and the allowed list
/// only when known).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file name, or the command-line argument (e.g. `--set link.rate=5Mbit`).
    pub file: String,
    /// 1-based line, when the problem is in a file.
    pub line: Option<u32>,
    /// 1-based column (in characters), when the problem is in a file.
    pub column: Option<u32>,
    /// What is wrong.
    pub message: String,
    /// For enumerations and unknown keys: what would have been accepted.
    pub allowed: Vec<String>,
    /// How `allowed` is introduced: `allowed` for values, `allowed keys in [link]` for keys.
    pub allowed_title: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": {}", self.message)?;
        if !self.allowed.is_empty() {
            write!(f, "; {}: {}", self.allowed_title, self.allowed.join(", "))?;
        }
        Ok(())
    }
}

impl ScenarioError {
    /// Adds the list of accepted values.
    pub fn with_allowed<S: AsRef<str>>(self, allowed: &[S]) -> Self {
        self.with_allowed_titled("allowed", allowed)
    }

    /// Adds a list of accepted values or keys, introduced by `title`.
    /// For an unknown key or value, the message also names the nearest accepted one ("did you
    /// mean").
    pub fn with_allowed_titled<S: AsRef<str>>(mut self, title: &str, allowed: &[S]) -> Self {
        self.allowed = allowed.iter().map(|s| s.as_ref().to_string()).collect();
        self.allowed_title = title.to_string();
        if let Some(guess) = did_you_mean(&self.message, &self.allowed) {
            self.message
                .push_str(&format!(" (did you mean {guess:?}?)"));
        }
        self
    }
}

/// The accepted spelling nearest to the quoted name in an "unknown key/value" `message`, with
/// the name's dotted prefix (`link.los` → `link.loss`); None when nothing is close.
fn did_you_mean(message: &str, allowed: &[String]) -> Option<String> {
    if !(message.starts_with("unknown key ") || message.starts_with("unknown value ")) {
        return None;
    }
    let quoted = message.split('"').nth(1)?;
    let (prefix, typed) = match quoted.rsplit_once('.') {
        // Keys are dotted paths; a value may contain a dot ("1.3"): only keys are split.
        Some((p, t)) if message.starts_with("unknown key ") => (format!("{p}."), t),
        _ => (String::new(), quoted),
    };
    let typed = typed.to_ascii_lowercase();
    let best = allowed
        .iter()
        .map(|a| {
            (
                strsim::damerau_levenshtein(&typed, &a.to_ascii_lowercase()),
                a,
            )
        })
        .min_by_key(|(d, _)| *d)?;
    let close = best.0 <= 1 + typed.chars().count() / 4;
    // "bulk-down" for "bulk": the accepted word with something added around it.
    let contains = allowed
        .iter()
        .filter(|a| a.len() >= 3 && (typed.starts_with(a.as_str()) || a.starts_with(&typed)))
        .max_by_key(|a| a.len());
    let pick = if close { Some(best.1) } else { contains }?;
    Some(format!("{prefix}{pick}"))
}

/// Where a value came from: a position in the scenario file, or a command-line argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum At {
    /// 1-based line and column in the scenario file.
    File { line: usize, column: usize },
    /// The full command-line argument, e.g. `--set link.rate=5Mbit`.
    Arg(Arc<str>),
    /// A line of another file (rate traces), 1-based.
    OtherFile { file: Arc<str>, line: usize },
}

/// Turns byte offsets of one text into 1-based line:column (columns count characters).
///
/// Both lookups are binary searches over positions collected once: counting the characters
/// from the start of the line on every lookup made a long line (a 100,000-step rate schedule,
/// a 200,000-value sweep axis, each value of which is looked up) quadratic.
pub(crate) struct LineIndex {
    len: usize,
    line_starts: Vec<usize>,
    /// Byte offsets of UTF-8 continuation bytes (empty for ASCII text): a column is the byte
    /// distance from the line start minus the continuation bytes in between.
    continuation: Vec<usize>,
}

impl LineIndex {
    /// Indexes `text` once so each lookup is a binary search.
    pub(crate) fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let continuation = text
            .bytes()
            .enumerate()
            .filter(|(_, b)| b & 0xC0 == 0x80)
            .map(|(i, _)| i)
            .collect();
        LineIndex {
            len: text.len(),
            line_starts,
            continuation,
        }
    }

    /// The position of byte `offset` (clamped to the text).
    pub(crate) fn at(&self, offset: usize) -> At {
        let offset = offset.min(self.len);
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts[line - 1];
        let below = |o: usize| self.continuation.partition_point(|&c| c < o);
        let column = offset - start - (below(offset) - below(start)) + 1;
        At::File { line, column }
    }
}

/// Builds errors for one scenario source (its file name is needed for file positions).
#[derive(Debug, Clone)]
pub(crate) struct Errors {
    /// Name shown in front of file positions.
    pub file: Arc<str>,
    /// Warnings found while reading (the input is accepted but probably not what was meant),
    /// each once, in the order found.
    pub warnings: std::cell::RefCell<Vec<String>>,
    /// The `[[variant]]` being resolved, if any: errors that depend on a variant's overrides
    /// (a key of another stack) name it.
    pub variant: std::cell::RefCell<Option<Arc<str>>>,
    /// Keys set where they can have no effect, and where they have one, over every sweep point
    /// (see [`Errors::key_use`] and [`Errors::finish_key_uses`]).
    pub uses: std::cell::RefCell<Vec<KeyUse>>,
}

/// How a key the user set fared over the sweep points: where it had no effect (and why), and
/// at how many points it had one.
#[derive(Debug, Clone)]
pub(crate) struct KeyUse {
    /// The key as the user would write it (`flow.0.zero_rtt`).
    key: String,
    /// Where it was set and why it has no effect, at the first point where it had none.
    noop: Option<(At, String)>,
    /// Points where it had no effect.
    noop_points: usize,
    /// Points where it had one.
    effective_points: usize,
}

impl Errors {
    /// Errors for the source named `file`.
    pub(crate) fn new(file: &str) -> Self {
        Errors {
            file: file.into(),
            warnings: Default::default(),
            variant: Default::default(),
            uses: Default::default(),
        }
    }

    /// Records that `key`, set by the user at this sweep point, has an effect (`noop` is
    /// `None`) or has none: `noop` = where it is set and the message saying why and what to
    /// set instead.
    pub(crate) fn key_use(&self, key: &str, noop: Option<(&At, String)>) {
        let mut uses = self.uses.borrow_mut();
        let i = match uses.iter().position(|u| u.key == key) {
            Some(i) => i,
            None => {
                uses.push(KeyUse {
                    key: key.to_string(),
                    noop: None,
                    noop_points: 0,
                    effective_points: 0,
                });
                uses.len() - 1
            }
        };
        let u = &mut uses[i];
        match noop {
            None => u.effective_points += 1,
            Some((at, why)) => {
                u.noop_points += 1;
                if u.noop.is_none() {
                    let why = match self.variant.borrow().as_deref() {
                        Some(v) => format!("{why} (in variant {v:?})"),
                        None => why,
                    };
                    u.noop = Some((at.clone(), why));
                }
            }
        }
    }

    /// After every point is resolved: a key that had no effect at any point where it was set
    /// is an error (it asks for something the scenario never does); one that had no effect at
    /// only some points (a sweep or variant makes it matter elsewhere) is a warning, once.
    pub(crate) fn finish_key_uses(&self) -> Result<(), ScenarioError> {
        let uses = self.uses.take();
        for u in &uses {
            let Some((at, why)) = &u.noop else { continue };
            if u.effective_points == 0 {
                return Err(self.at(at, why.clone()));
            }
        }
        for u in &uses {
            if let Some((at, why)) = &u.noop {
                let all = u.noop_points + u.effective_points;
                self.warn(
                    at,
                    format!(
                        "{why}; it has no effect at {} of the {all} sweep points that set it",
                        u.noop_points
                    ),
                );
            }
        }
        Ok(())
    }

    /// An error at `at`.
    pub(crate) fn at(&self, at: &At, message: impl Into<String>) -> ScenarioError {
        let n = |v: usize| Some(u32::try_from(v).unwrap_or(u32::MAX));
        let (file, line, column) = match at {
            At::File { line, column } => (self.file.to_string(), n(*line), n(*column)),
            At::Arg(arg) => (arg.to_string(), None, None),
            At::OtherFile { file, line } => (file.to_string(), n(*line), Some(1)),
        };
        ScenarioError {
            file,
            line,
            column,
            message: message.into(),
            allowed: Vec::new(),
            allowed_title: String::new(),
        }
    }

    /// Records a warning at `at` (once per place and text).
    pub(crate) fn warn(&self, at: &At, message: impl Into<String>) {
        let text = self.at(at, message).to_string();
        let mut w = self.warnings.borrow_mut();
        if !w.contains(&text) {
            w.push(text);
        }
    }

    /// An error about the whole file (no position).
    pub(crate) fn whole(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: None,
            column: None,
            message: message.into(),
            allowed: Vec::new(),
            allowed_title: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_counts_from_one_in_characters() {
        let idx = LineIndex::new("ab\nµcd\n");
        assert_eq!(idx.at(0), At::File { line: 1, column: 1 });
        assert_eq!(idx.at(3), At::File { line: 2, column: 1 });
        // 'µ' is two bytes but one column.
        assert_eq!(idx.at(5), At::File { line: 2, column: 2 });
        assert_eq!(idx.at(100), At::File { line: 3, column: 1 });
    }

    #[test]
    fn lookups_on_one_long_line_do_not_rescan_it() {
        // A 2 MB line looked up at 200,000 offsets, like a 200,000-value sweep axis: counting
        // characters from the line start each time is ~2·10^11 steps (minutes); binary
        // searches take milliseconds. The bound is loose enough for a loaded machine.
        let text = format!("a = [{}]", "\"µs\", ".repeat(200_000));
        let idx = LineIndex::new(&text);
        let started = std::time::Instant::now();
        let mut last = 0;
        for i in 0..200_000 {
            let At::File { column, .. } = idx.at(5 + i * 7) else {
                unreachable!()
            };
            last = column;
        }
        // Each value `"µs", ` is 6 characters in 7 bytes.
        assert_eq!(last, 6 + 199_999 * 6);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn display_has_position_and_allowed() {
        let e = Errors::new("bulk.toml")
            .at(
                &At::File {
                    line: 12,
                    column: 9,
                },
                "unknown value \"cubik\" for flow.cc",
            )
            .with_allowed(&["newreno", "cubic"]);
        assert_eq!(
            e.to_string(),
            "bulk.toml:12:9: unknown value \"cubik\" for flow.cc (did you mean \"cubic\"?); allowed: newreno, cubic"
        );
        let e = Errors::new("x").at(&At::Arg("--set link.rate=5".into()), "bad");
        assert_eq!(e.to_string(), "--set link.rate=5: bad");
    }
}
