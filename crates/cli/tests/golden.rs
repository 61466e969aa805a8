//! Simulated numbers do not drift: every metric of every example scenario, of the quick study
//! grids and of the quick validation grid is compared with values recorded from an earlier build.
//!
//! The recorded values live in `tests/golden/<case>.json.gz`: one JSON object mapping a flat path
//! (`<run id>/flows.0.goodput_bps`, `series/<run id>/<row>/cwnd_bytes`, `validate/<case>/<label>/
//! measured`) to the value. A refactoring must reproduce every recorded value; a field that was
//! renamed is listed in [`RENAMED`], one that was removed on purpose in [`DROPPED`], with the
//! reason. New fields are allowed.
//!
//! A change that is *meant* to move numbers (a model fix) re-records them, and says so in its
//! commit: `QUICLAB_GOLDEN_RECORD=1 cargo test -p quiclab --test golden`. To record with another
//! build (e.g. the commit before a refactoring), also set `QUICLAB_GOLDEN_BIN=/path/to/quiclab`.
//! `QUICLAB_GOLDEN_FULL=1` adds the full validation grid (about 2 minutes in a release build).

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{text, Scratch};
use serde_json::Value;

/// Paths renamed since the values were recorded: (old pattern, new pattern); `*` stands for one
/// path segment and is carried over.
const RENAMED: &[(&str, &str)] = &[
    // The results crate has its own link type: durations are plain seconds, named with their
    // unit (was netem's `busy_time` Duration flattened into the link as `{secs, nanos}`).
    ("*/links.*.busy_time", "*/links.*.busy_time_s"),
];

/// Paths removed on purpose since the values were recorded: (pattern, why).
const DROPPED: &[(&str, &str)] = &[];

/// Repetitions per point of the example scenarios (their own counts go up to 100).
const EXAMPLE_REPS: &str = "3";

type Flat = BTreeMap<String, Value>;

fn bin() -> PathBuf {
    std::env::var_os("QUICLAB_GOLDEN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_quiclab")))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> String {
    let out = Command::new(bin())
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run quiclab");
    assert!(
        out.status.success(),
        "quiclab {args:?} failed:\n{}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Flattens `v` into `out` under `prefix`. `{secs, nanos}` durations become seconds, so a change
/// of representation is not a change of value; nulls (not measured) are left out.
fn flatten(prefix: &str, v: &Value, out: &mut Flat) {
    match v {
        Value::Null => {}
        Value::Object(m) if m.len() == 2 && m.contains_key("secs") && m.contains_key("nanos") => {
            let s = m["secs"].as_f64().unwrap_or(0.0) + m["nanos"].as_f64().unwrap_or(0.0) * 1e-9;
            out.insert(prefix.to_string(), Value::from(s));
        }
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&join(prefix, k), x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&join(prefix, &i.to_string()), x, out);
            }
        }
        leaf => {
            out.insert(prefix.to_string(), leaf.clone());
        }
    }
}

fn join(prefix: &str, k: &str) -> String {
    if prefix.is_empty() {
        k.to_string()
    } else if prefix.ends_with('/') {
        format!("{prefix}{k}")
    } else {
        format!("{prefix}.{k}")
    }
}

/// Every run of a results directory: `<id>/<path>` for results.jsonl, `series/<id>/<row>/<col>`
/// for the time series.
fn results_dir(dir: &Path, out: &mut Flat) {
    let lines = std::fs::read_to_string(dir.join("results.jsonl")).expect("results.jsonl");
    for line in lines.lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        let id = v["id"].as_str().expect("run id").to_string();
        flatten(&format!("{id}/"), &v, out);
    }
    let Ok(entries) = std::fs::read_dir(dir.join("series")) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("entry").path()).collect();
    files.sort();
    for f in files {
        let id = f.file_stem().expect("stem").to_string_lossy().into_owned();
        let csv = std::fs::read_to_string(&f).expect("series csv");
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
        for (row, line) in lines.enumerate() {
            for (col, cell) in header.iter().zip(line.split(',')) {
                let v = cell
                    .parse::<f64>()
                    .ok()
                    .and_then(|x| serde_json::Number::from_f64(x).map(Value::Number))
                    .unwrap_or_else(|| Value::from(cell.to_string()));
                out.insert(format!("series/{id}/{row}/{col}"), v);
            }
        }
    }
}

/// Whether `path` matches `pattern` (`*` = one segment; segments split at `.` and `/`), and the
/// segments the stars stood for.
fn matches(pattern: &str, path: &str) -> Option<Vec<String>> {
    let split =
        |s: &str| -> Vec<String> { s.split(['.', '/']).map(str::to_string).collect::<Vec<_>>() };
    let (p, x) = (split(pattern), split(path));
    if p.len() != x.len() {
        return None;
    }
    let mut stars = Vec::new();
    for (a, b) in p.iter().zip(&x) {
        if a == "*" {
            stars.push(b.clone());
        } else if a != b {
            return None;
        }
    }
    Some(stars)
}

/// The path a recorded value has in today's output (`None`: dropped on purpose).
fn today_path(recorded: &str) -> Option<String> {
    if DROPPED.iter().any(|(p, _)| matches(p, recorded).is_some()) {
        return None;
    }
    for (old, new) in RENAMED {
        if let Some(stars) = matches(old, recorded) {
            // Rebuild the path with the new pattern, keeping the original separators' style.
            let mut stars = stars.into_iter();
            let mut out = String::new();
            let mut seg = String::new();
            for ch in new.chars().chain(std::iter::once('\0')) {
                if ch == '.' || ch == '/' || ch == '\0' {
                    if seg == "*" {
                        out.push_str(&stars.next().unwrap_or_default());
                    } else {
                        out.push_str(&seg);
                    }
                    seg.clear();
                    if ch != '\0' {
                        out.push(ch);
                    }
                } else {
                    seg.push(ch);
                }
            }
            return Some(out);
        }
    }
    Some(recorded.to_string())
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        // Representation may change (an integer becoming a float, seconds recomputed from
        // nanoseconds); the value may not, beyond the last bits of a double.
        (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => a == b,
    }
}

fn golden_file(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{case}.json.gz"))
}

fn check(case: &str, today: Flat) {
    assert!(!today.is_empty(), "{case}: nothing measured");
    let path = golden_file(case);
    if std::env::var_os("QUICLAB_GOLDEN_RECORD").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("golden dir");
        let json = serde_json::to_vec(&today).expect("serialise");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&json).expect("compress");
        std::fs::write(&path, gz.finish().expect("compress")).expect("write golden file");
        eprintln!("{case}: recorded {} values", today.len());
        return;
    }
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("golden file"))
        .read_to_end(&mut json)
        .expect("decompress");
    let recorded: Flat = serde_json::from_slice(&json).expect("golden JSON");
    let mut problems = Vec::new();
    let mut compared = 0usize;
    for (k, want) in &recorded {
        let Some(now) = today_path(k) else { continue };
        compared += 1;
        match today.get(&now) {
            None => problems.push(format!("{k}: recorded {want}, now absent (as {now})")),
            Some(got) if !same(want, got) => {
                problems.push(format!("{k}: recorded {want}, now {got}"))
            }
            Some(_) => {}
        }
    }
    assert!(compared > 0, "{case}: no recorded value compared");
    assert!(
        problems.is_empty(),
        "{case}: {} of {compared} recorded values differ:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn example(name: &str) {
    let scratch = Scratch::new(&format!("golden-{name}"));
    let out = scratch.path("out");
    let file = format!("scenarios/examples/{name}.toml");
    let out_s = out.to_string_lossy().into_owned();
    run(&["sim", &file, "--reps", EXAMPLE_REPS, "--out", &out_s]);
    let mut flat = Flat::new();
    results_dir(&out, &mut flat);
    check(&format!("example-{name}"), flat);
}

fn study(name: &str) {
    let scratch = Scratch::new(&format!("golden-{name}"));
    let out = scratch.path("out");
    let out_s = out.to_string_lossy().into_owned();
    run(&["reproduce", name, "--out", &out_s]);
    let mut flat = Flat::new();
    results_dir(&out, &mut flat);
    let table = std::fs::read_to_string(out.join("table.csv")).expect("table.csv");
    for (i, line) in table.lines().enumerate() {
        flat.insert(format!("table/{i}"), Value::from(line.to_string()));
    }
    check(&format!("study-{name}"), flat);
}

/// The quinn and TCP cases, as recorded before the research model had cases of its own.
const QUINN_TCP_CASES: &[&str] = &[
    "link-bandwidth",
    "mathis",
    "high-loss",
    "flow-control",
    "fair-share",
    "tcp-link-bandwidth",
    "tcp-mathis",
    "tcp-high-loss",
    "tcp-fair-share",
    "quic-vs-tcp",
];

fn validation(grid: &str) {
    validation_cases(grid, QUINN_TCP_CASES);
}

/// The validation grid (quick when `name` says so) restricted to `cases`, recorded as
/// `validate-<name>`.
fn validation_cases(name: &str, cases: &[&str]) {
    let mut args = vec!["validate", "--json"];
    if name.contains("quick") {
        args.push("--quick");
    }
    for c in cases {
        args.extend(["--case", c]);
    }
    let grid = name;
    let report: Value = serde_json::from_str(&run(&args)).expect("validate --json");
    let mut flat = Flat::new();
    for p in report["points"].as_array().expect("points") {
        let key = format!(
            "validate/{}/{}/",
            p["case"].as_str().unwrap_or(""),
            p["label"].as_str().unwrap_or("")
        );
        flatten(&key, p, &mut flat);
    }
    check(&format!("validate-{grid}"), flat);
}

#[test]
fn example_bulk() {
    example("bulk");
}

#[test]
fn example_aqm() {
    example("aqm");
}

#[test]
fn example_download() {
    example("download");
}

#[test]
fn example_fair_share() {
    example("fair-share");
}

#[test]
fn example_ge_loss() {
    example("ge-loss");
}

#[test]
fn example_lossy_sweep() {
    example("lossy-sweep");
}

/// The QUIC research model: a new entry, recorded when the example was added.
#[test]
fn example_quic_model() {
    example("quic-model");
}

/// Mahimahi traces: a new entry, recorded when the example was added.
#[test]
fn example_mahimahi() {
    example("mahimahi");
}

#[test]
fn example_quic_vs_tcp() {
    example("quic-vs-tcp");
}

/// quiche beside quinn and TCP: a new entry, recorded when the example was added (a quiche
/// upgrade that moves its numbers re-records it).
#[test]
fn example_quiche() {
    example("quiche");
}

#[test]
fn example_satellite_bod() {
    example("satellite-bod");
}

#[test]
fn study_seed002_quick() {
    study("seed002");
}

#[test]
fn study_seed003_quick() {
    study("seed003");
}

#[test]
fn study_seed000_quick() {
    study("seed000");
}

#[test]
fn study_seed001_quick() {
    study("seed001");
}

/// The QUIC research model's quick validation cases: a separate entry, so the
/// recorded quinn/TCP grid stays as it was.
#[test]
fn validation_model_quick() {
    validation_cases(
        "model-quick",
        &[
            "model-link-bandwidth",
            "model-mathis",
            "model-high-loss",
            "model-flow-control",
            "model-fair-share",
            "model-vs-quic",
        ],
    );
}

#[test]
fn validation_grid() {
    // The full grid takes about two minutes of release-build time: it is compared on demand
    // (QUICLAB_GOLDEN_FULL=1), before a refactoring lands; the quick grid every time.
    if std::env::var_os("QUICLAB_GOLDEN_FULL").is_some() {
        validation("full");
    } else {
        validation("quick");
    }
}

#[test]
fn path_patterns_rename_and_drop() {
    assert_eq!(
        matches("*/flows.*.x", "p0-r1/flows.2.x"),
        Some(vec!["p0-r1".into(), "2".into()])
    );
    assert_eq!(matches("*/flows.*.x", "p0-r1/flows.2.y"), None);
    let mut flat = Flat::new();
    flatten(
        "r/",
        &serde_json::json!({"d": {"secs": 1, "nanos": 500_000_000}, "n": null, "a": [1, 2]}),
        &mut flat,
    );
    assert_eq!(flat.get("r/d"), Some(&Value::from(1.5)));
    assert!(!flat.contains_key("r/n"));
    assert_eq!(flat.get("r/a.1"), Some(&Value::from(2)));
    assert!(same(&Value::from(3u64), &Value::from(3.0)));
    assert!(!same(&Value::from(3u64), &Value::from(3.0001)));
}
