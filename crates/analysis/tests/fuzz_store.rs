//! Property tests of the results reader: a `results.jsonl` that is truncated, corrupted, or
//! arbitrary bytes opens, reads, appends and finalises without a panic; what it returns is only
//! the valid lines; and summaries of whatever it returns never panic either (`summary_rows`,
//! `render_table`, `summary_csv` over hostile values: huge, tiny, NaN-free JSON numbers, deep or
//! wrong-typed fields).
//!
//! CI runs a small budget; `scripts/fuzz.sh` sets `PROPTEST_CASES` for a long run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use analysis::summary::{render_table, summary_csv, summary_rows};
use proptest::prelude::*;
use results::layout::RESULTS_FILE;
use results::store::ResultsStore;
use serde_json::{json, Value};

/// The budget of one property in a normal `cargo test`, unless `PROPTEST_CASES` says otherwise.
fn config(ci_cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = ci_cases;
    }
    c
}

/// A fresh directory of this test process under the build's scratch directory, removed on drop
/// (only the files the store writes there, then the directory itself).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "fuzz-store-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        // create_dir (not _all): a fresh name; fails rather than reuse someone else's directory.
        std::fs::create_dir(&dir).expect("a fresh directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for name in [RESULTS_FILE, "results.jsonl.tmp"] {
            let _ = std::fs::remove_file(self.0.join(name));
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A plausible run line: id, axes, nested metrics of every JSON type.
fn run_line() -> impl Strategy<Value = Value> {
    (
        "p[0-9]{1,2}-r[0-9]",
        prop::collection::vec(("[a-z]{1,6}", prop_oneof![
            any::<f64>().prop_filter("JSON numbers are finite", |v| v.is_finite()).prop_map(|v| json!(v)),
            any::<i64>().prop_map(|v| json!(v)),
            any::<u64>().prop_map(|v| json!(v)),
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            ".{0,10}".prop_map(Value::String),
        ]), 0..6),
        prop::collection::vec(any::<f64>().prop_filter("finite", |v| v.is_finite()), 0..4),
    )
        .prop_map(|(id, fields, flows)| {
            let mut m = serde_json::Map::new();
            for (k, v) in fields {
                m.insert(k, v);
            }
            json!({
                "id": id,
                "metrics": m,
                "flows": flows.iter().map(|g| json!({"goodput_bps": g, "name": "f"})).collect::<Vec<_>>(),
            })
        })
}

fn lines_bytes(lines: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend(serde_json::to_vec(l).expect("serialisable"));
        out.push(b'\n');
    }
    out
}

/// Opens a store over `bytes` and exercises every operation; returns the ids it reported.
fn exercise(bytes: &[u8], order: &[String]) -> Result<(), TestCaseError> {
    let dir = Scratch::new();
    std::fs::write(dir.0.join(RESULTS_FILE), bytes)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let store =
        ResultsStore::open(&dir.0).map_err(|e| TestCaseError::fail(format!("open: {e}")))?;
    let ids = store
        .completed_ids()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let loaded = store
        .load()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    // Only complete JSON objects with a string id come back.
    for v in &loaded {
        prop_assert!(v
            .get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| ids.contains(id)));
    }
    // A fresh line appended after any tail is read back.
    store
        .append(&json!({"id": "fuzz-appended", "x": 1}))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let ids = store
        .completed_ids()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(
        ids.contains("fuzz-appended"),
        "an append after a corrupted tail was lost"
    );
    store
        .finalize(order)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    // After finalize: only valid lines, one per id, all ids kept.
    let text =
        std::fs::read(dir.0.join(RESULTS_FILE)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut seen = BTreeSet::new();
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line)
            .map_err(|e| TestCaseError::fail(format!("finalize kept a bad line: {e}")))?;
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| TestCaseError::fail("a line without id"))?;
        prop_assert!(
            seen.insert(id.to_string()),
            "id {} twice after finalize",
            id
        );
    }
    prop_assert_eq!(seen, ids);
    // Summaries of whatever was read: never a panic.
    let runs = store
        .load()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let rows = summary_rows(0, &[("link.rate".into(), "10Mbit".into())], &runs);
    let _ = summary_csv(&rows);
    let _ = render_table(&rows, &["goodput_bps", "metrics.x", "nope"]);
    Ok(())
}

proptest! {
    // Each case syncs files to disk (append, finalize): a smaller CI budget than the pure parsers.
    #![proptest_config(config(60))]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        exercise(&bytes, &[])?;
    }

    #[test]
    fn truncated_and_corrupted_files(lines in prop::collection::vec(run_line(), 1..12),
                                     edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..5),
                                     cut in any::<usize>(),
                                     order in prop::collection::vec("p[0-9]{1,2}-r[0-9]", 0..10)) {
        let mut bytes = lines_bytes(&lines);
        for (at, b) in edits {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        exercise(&bytes, &order)?;
    }

    #[test]
    fn junk_lines_between_valid_ones(lines in prop::collection::vec(prop_oneof![
            3 => run_line().prop_map(|v| serde_json::to_string(&v).expect("json")),
            1 => prop::sample::select(vec!["", "{", "}", "[]", "null", "{\"id\": 5}", "{\"id\": null}", "\"id\"",
                                           "{\"id\": \"x\"", "\u{0}", "{\"id\":\"dup\"}", "{\"id\":\"dup\",\"v\":2}"]).prop_map(String::from),
            1 => any::<String>().prop_map(|s| s.replace('\n', " ")),
        ], 0..20)) {
        let text = lines.join("\n");
        exercise(text.as_bytes(), &["dup".to_string()])?;
    }
}

#[test]
fn deeply_nested_lines_are_skipped_not_overflowing() {
    let deep = format!(
        "{{\"id\":\"d\",\"x\":{}1{}}}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let ok = format!("{}\n", json!({"id": "ok"}));
    let bytes = format!("{deep}{ok}");
    exercise(bytes.as_bytes(), &[]).unwrap_or_else(|e| panic!("{e}"));
}
