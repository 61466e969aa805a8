//! The project's Markdown stays navigable and speaks of the product as it is.
//!
//! - Every relative link and image in every Markdown file of the repository (README.md, docs/,
//!   the crates' and peers' READMEs, …) points at a file or directory that exists, and a
//!   `#fragment` into a Markdown file names one of its headings (GitHub's anchor rules).
//! - README.md and docs/ carry no development history: no "session N" or "issue N" (git holds
//!   history; the docs describe the product).
//!
//! The scenario crate hosts this test because it already owns the generated docs (`docs.rs`,
//! `limits_doc.rs`); the test itself needs nothing from the crate.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this crate is `crates/scenario`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Directories never searched for Markdown: build output, virtual environments, VCS data.
fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

/// Every `*.md` file under `dir`, sorted.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries {
            let entry = entry.expect("directory entry");
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                if !skipped_dir(&name) {
                    stack.push(path);
                }
            } else if kind.is_file() && name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The text outside fenced code blocks and inline code spans, with line breaks kept so that
/// line numbers stay right. Links inside code are examples, not links.
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => {
                fence = Some(m);
                out.push('\n');
            }
            (Some(f), Some(m)) if f == m => {
                fence = None;
                out.push('\n');
            }
            (Some(_), _) => {
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            (None, None) => out.push_str(&strip_code_spans(line)),
        }
    }
    out
}

/// Removes `` `inline code` `` spans (any number of backticks) from one line.
fn strip_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(&closing) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                // An unmatched backtick is literal text.
                out.push_str(&rest[start..start + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// One link found in a Markdown file: its 1-based line and its target as written.
#[derive(Debug, PartialEq)]
struct Link {
    line: usize,
    target: String,
}

/// Inline links and images (`[text](target "title")`, `![alt](target)`) and reference
/// definitions (`[label]: target`) in the prose of a Markdown text.
fn links(text: &str) -> Vec<Link> {
    let text = prose(text);
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            let close = trimmed.find(']').unwrap_or(0);
            if trimmed[close..].starts_with("]:") {
                let target = trimmed[close + 2..].split_whitespace().next().unwrap_or("");
                let target = target.trim_start_matches('<').trim_end_matches('>');
                if !target.is_empty() {
                    found.push(Link {
                        line: line_no,
                        target: target.to_string(),
                    });
                }
                continue;
            }
        }
        let mut rest = line;
        while let Some(pos) = rest.find("](") {
            let after = &rest[pos + 2..];
            let Some(end) = after.find(')') else { break };
            let inner = after[..end].trim();
            let target = inner.split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            if !target.is_empty() {
                found.push(Link {
                    line: line_no,
                    target: target.to_string(),
                });
            }
            rest = &after[end + 1..];
        }
    }
    found
}

/// Links that leave the repository or stay on the page are not checked here.
fn is_external(target: &str) -> bool {
    let scheme_end = target.find(':');
    let path_start = target.find(['/', '#', '?']);
    match (scheme_end, path_start) {
        (Some(c), Some(p)) => c < p,
        (Some(_), None) => true,
        _ => false,
    }
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` removed, spaces
/// turned into `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a Markdown text defines: one per ATX heading (`#` … `######`), with GitHub's
/// `-1`, `-2` … suffixes for repeated headings.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&level) || !trimmed[level..].starts_with(' ') {
            continue;
        }
        // Inline code keeps its text in the anchor; only the backticks go.
        let base = anchor(&trimmed[level..].replace('`', ""));
        let mut name = base.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        seen.insert(name);
    }
    seen
}

/// Checks every relative link of the Markdown file `file` (text `text`); returns one message
/// per broken link, naming file, line and target.
fn broken_links(file: &Path, text: &str, root: &Path) -> Vec<String> {
    let dir = file.parent().expect("a file has a directory");
    let shown = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut broken = Vec::new();
    for link in links(text) {
        if is_external(&link.target) {
            continue;
        }
        let (path, fragment) = match link.target.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (link.target.as_str(), None),
        };
        let path = path.split('?').next().unwrap_or("");
        let resolved = if path.is_empty() {
            file.to_path_buf()
        } else if let Some(from_root) = path.strip_prefix('/') {
            root.join(from_root)
        } else {
            dir.join(path)
        };
        if !path.is_empty() && !resolved.exists() {
            broken.push(format!(
                "{shown}:{}: `{}` does not exist",
                link.line, link.target
            ));
            continue;
        }
        let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
            continue;
        };
        if resolved.extension().is_some_and(|e| e == "md") {
            let target_text = if path.is_empty() {
                text.to_string()
            } else {
                fs::read_to_string(&resolved)
                    .unwrap_or_else(|e| panic!("{}: {e}", resolved.display()))
            };
            if !anchors(&target_text).contains(fragment) {
                broken.push(format!(
                    "{shown}:{}: `{}`: no heading with anchor `#{fragment}`",
                    link.line, link.target
                ));
            }
        }
    }
    broken
}

/// "session N" / "issue N" (any case, any whitespace or hyphens between word and number:
/// "Session 11", "issue\n16", "session-5"), with line numbers: development history, which belongs in git, not in the product's docs.
fn history_wording(text: &str) -> Vec<(usize, String)> {
    let lower = text.to_lowercase();
    let mut hits = Vec::new();
    for word in ["session", "issue"] {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(word) {
            let start = from + pos;
            let after = &lower[start + word.len()..];
            let spaces = after.len()
                - after
                    .trim_start_matches(|c: char| c.is_whitespace() || c == '-')
                    .len();
            let starts_word = start == 0
                || !lower[..start]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_alphanumeric);
            if starts_word
                && spaces > 0
                && after[spaces..].starts_with(|c: char| c.is_ascii_digit())
            {
                let line = lower[..start].matches('\n').count() + 1;
                let digits = after[spaces..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .count();
                let end = start + word.len() + spaces + digits;
                let snippet = text.get(start..end).unwrap_or(word).replace('\n', " ");
                hits.push((line, snippet));
            }
            from = start + word.len();
        }
    }
    hits.sort();
    hits
}

#[test]
fn every_relative_link_in_the_markdown_resolves() {
    let root = repo_root();
    let files = markdown_files(&root);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")) && files.len() > 10,
        "found too few Markdown files under {}: {files:?}",
        root.display()
    );
    let mut broken = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        broken.extend(broken_links(file, &text, &root));
    }
    assert!(
        broken.is_empty(),
        "{} broken link(s):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn readme_and_docs_carry_no_development_history() {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    files.extend(markdown_files(&root.join("docs")));
    let mut found = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, snippet) in history_wording(&text) {
            found.push(format!("{shown}:{line}: \"{snippet}\""));
        }
    }
    assert!(
        found.is_empty(),
        "README.md and docs/ describe the product as it is; git holds its history. \
         Rewrite these as statements about the product:\n{}",
        found.join("\n")
    );
}

// The checkers themselves: they must find what they are for, or the two tests above could
// pass on anything.

#[test]
fn a_missing_file_and_a_missing_heading_are_reported() {
    // A page that does not exist on disk, placed in docs/: its links resolve against docs/ and
    // reach the repository's own files, and its own headings are read from `text`.
    let root = repo_root();
    let page = root.join("docs").join("doc-links-checker-test.md");
    let text = "# Page\n\
                See [the README](../README.md), [its title](../README.md#quiclab), [top](#page)\n\
                and [docs](../docs/).\n\
                A [typo](architecure.md) and a [lost anchor](../README.md#no-such-heading).\n\
                ![figure](figures/missing.svg) and [self](#nowhere)\n\
                [ref]: ./gone/\n\
                `[code](not-a-link.md)` and [web](https://example.org/x.md).\n\
                ```\n[in a fence](nowhere.md)\n```\n";
    let broken = broken_links(&page, text, &root);
    assert_eq!(broken.len(), 5, "{broken:#?}");
    assert!(
        broken[0].contains(":4: `architecure.md` does not exist"),
        "{broken:#?}"
    );
    assert!(
        broken[1].contains(":4: `../README.md#no-such-heading`: no heading"),
        "{broken:#?}"
    );
    assert!(
        broken[2].contains(":5: `figures/missing.svg` does not exist"),
        "{broken:#?}"
    );
    assert!(
        broken[3].contains(":5: `#nowhere`: no heading"),
        "{broken:#?}"
    );
    assert!(
        broken[4].contains(":6: `./gone/` does not exist"),
        "{broken:#?}"
    );
}

#[test]
fn anchors_follow_githubs_rules() {
    let a = anchors(
        "# Title\n## 0-RTT and address-validation tokens\n## `attack`\n\
         ## Through the emulator: `--via SCENARIO`\n## Title\n```\n# not a heading\n```\n",
    );
    let want: BTreeSet<String> = [
        "title",
        "0-rtt-and-address-validation-tokens",
        "attack",
        "through-the-emulator---via-scenario",
        "title-1",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(a, want);
}

#[test]
fn history_wording_is_found_in_any_case_and_across_a_line_break() {
    let hits = history_wording(
        "Measured in Session 11.\nSince issue\n16 it holds.\nA session of 3 s is fine: \
         session-based, sessions, issue tracker.\nreissue 4\nthe session-5 figure\n",
    );
    let lines: Vec<usize> = hits.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![1, 2, 6], "{hits:?}");
}
