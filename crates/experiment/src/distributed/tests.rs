//! The seam's guarantees: outcomes recorded in any order, retried, shipped through JSON or
//! missing give the same store as a local sweep, or a resumable one.

use std::path::{Path, PathBuf};

use super::*;
use crate::executor::Threads;
use crate::runner::run_sweep;
use sim::SimEngine;

/// Two flows (so the series have rows of both) over 10 Mbit/s: well under a second simulated.
const TINY: &str = r#"
[run]
duration = "2s"

[link]
rate = "10Mbit"
delay = "10ms"

[[flow]]
name = "d"
app = "download"
size = "100kB"

[[flow]]
name = "e"
app = "download"
size = "60kB"
"#;

/// 3 points × 2 repetitions.
fn loaded() -> LoadedScenario {
    scenario::parse_str(
        TINY,
        "tiny.toml",
        Path::new("."),
        &["run.reps=2".into()],
        &["link.delay=5ms,10ms,20ms".into()],
    )
    .expect("valid scenario")
}

fn scratch(name: &str) -> fsutil::PrivateDir {
    fsutil::PrivateDir::new(&format!("quiclab-distributed-{name}-")).expect("scratch dir")
}

fn sweep<'a>(loaded: &'a LoadedScenario, out: &'a Path, resume: bool) -> Sweep<'a> {
    Sweep {
        loaded,
        out,
        resume,
        series: true,
    }
}

fn never() -> bool {
    false
}

fn read(path: PathBuf) -> Vec<u8> {
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The reference: a local sweep on two threads.
fn local(l: &LoadedScenario, out: &Path) {
    let outcome = run_sweep(
        &sweep(l, out, false),
        &SimEngine::default(),
        &Threads::new(Some(2)),
        &never,
        &(),
    )
    .expect("local sweep");
    assert!(matches!(outcome, SweepOutcome::Finished { ref failures, .. } if failures.is_empty()));
}

/// What a remote worker does: the task arrives as JSON, the outcome leaves as JSON.
fn remote(task: &Task) -> (Task, TaskOutcome) {
    let wire = serde_json::to_string(task).expect("task to JSON");
    let task: Task = serde_json::from_str(&wire).expect("task from JSON");
    let outcome = execute_task(&SimEngine::default(), &task);
    let wire = serde_json::to_string(&outcome).expect("outcome to JSON");
    (
        task,
        serde_json::from_str(&wire).expect("outcome from JSON"),
    )
}

fn same_files(a: &Path, b: &Path) {
    for file in [
        "results.jsonl",
        "summary.csv",
        "sweep.json",
        "series/p2-r1.csv",
        "series/p0-r0.csv",
    ] {
        assert!(read(a.join(file)) == read(b.join(file)), "{file} differs");
    }
}

#[test]
fn shuffled_retried_remote_outcomes_give_the_local_sweeps_files() {
    let tmp = scratch("shuffle");
    let l = loaded();
    let reference = tmp.path().join("local");
    local(&l, &reference);

    let out = tmp.path().join("remote");
    let open = OpenSweep::open(&sweep(&l, &out, false)).expect("open");
    let tasks = open.pending(None);
    assert_eq!(tasks.len(), 6);
    assert_eq!((open.total(), open.resumed()), (6, 0));
    // A finishing order no executor would pick, and run 1 recorded twice (a retried task whose
    // first attempt did report after all).
    for k in [4, 1, 5, 0, 1, 3, 2] {
        let (task, outcome) = remote(&tasks[k]);
        assert!(matches!(outcome, TaskOutcome::Done(ref r) if !r.series.is_empty()));
        open.record(&task, outcome).expect("record");
    }
    let lines = String::from_utf8(read(out.join("results.jsonl"))).expect("utf-8");
    assert_eq!(lines.lines().count(), 6, "a retry keeps one line");
    assert!(open.pending(None).is_empty());
    match open.finish().expect("finish") {
        SweepOutcome::Finished {
            total, failures, ..
        } => {
            assert_eq!((total, failures.len()), (6, 0));
        }
        SweepOutcome::Interrupted { .. } => panic!("every task was recorded"),
    }
    same_files(&out, &reference);
    tmp.remove().expect("clean up");
}

#[test]
fn a_missing_task_leaves_the_store_resumable() {
    let tmp = scratch("missing");
    let l = loaded();
    let reference = tmp.path().join("local");
    local(&l, &reference);

    let out = tmp.path().join("remote");
    let open = OpenSweep::open(&sweep(&l, &out, false)).expect("open");
    let tasks = open.pending(None);
    for task in tasks.iter().filter(|t| t.spec.id != "p1-r0") {
        let (task, outcome) = remote(task);
        open.record(&task, outcome).expect("record");
    }
    match open.finish().expect("finish") {
        SweepOutcome::Interrupted {
            total, complete, ..
        } => assert_eq!((total, complete), (6, 5)),
        SweepOutcome::Finished { .. } => panic!("a task is missing"),
    }
    assert!(!out.join("summary.csv").exists(), "not finalised");

    // Without --resume the directory is refused; with it, only the missing task is pending.
    let e = OpenSweep::open(&sweep(&l, &out, false)).expect_err("holds results");
    assert!(
        matches!(e, ExperimentError::AlreadyHasResults { .. }),
        "{e}"
    );
    let open = OpenSweep::open(&sweep(&l, &out, true)).expect("resume");
    assert_eq!(open.resumed(), 5);
    let pending = open.pending(None);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].spec.id, "p1-r0");
    let (task, outcome) = remote(&pending[0]);
    open.record(&task, outcome).expect("record");
    assert!(matches!(
        open.finish().expect("finish"),
        SweepOutcome::Finished { .. }
    ));
    same_files(&out, &reference);
    tmp.remove().expect("clean up");
}

#[test]
fn a_failed_task_retried_successfully_is_no_failure() {
    let tmp = scratch("retry");
    let l = loaded();
    let out = tmp.path().join("out");
    let open = OpenSweep::open(&sweep(&l, &out, false)).expect("open");
    let tasks = open.pending(None);
    open.record(&tasks[2], TaskOutcome::Failed("worker lost".into()))
        .expect("record failure");
    // A failed task counts as attempted but stays pending: a retry may still succeed.
    assert_eq!(open.pending(None).len(), 6);
    for task in &tasks {
        open.record(task, execute_task(&SimEngine::default(), task))
            .expect("record");
    }
    match open.finish().expect("finish") {
        SweepOutcome::Finished { failures, .. } => assert!(failures.is_empty(), "{failures:?}"),
        SweepOutcome::Interrupted { .. } => panic!("every task was recorded"),
    }
    tmp.remove().expect("clean up");
}

#[test]
fn failures_and_panics_finish_like_run_sweep() {
    let tmp = scratch("fail");
    let l = loaded();
    let out = tmp.path().join("out");
    let open = OpenSweep::open(&sweep(&l, &out, false)).expect("open");
    let tasks = open.pending(None);
    for task in &tasks {
        let outcome = match task.spec.id.as_str() {
            "p0-r1" => TaskOutcome::Panicked("boom".into()),
            "p2-r0" => TaskOutcome::Failed("no route".into()),
            _ => execute_task(&SimEngine::default(), task),
        };
        open.record(task, outcome).expect("record");
    }
    let SweepOutcome::Finished { failures, .. } = open.finish().expect("finish") else {
        panic!("every task has an outcome");
    };
    let got: Vec<(&str, &str, bool)> = failures
        .iter()
        .map(|f| (f.id.as_str(), f.message.as_str(), f.recorded))
        .collect();
    assert_eq!(
        got,
        [
            ("p0-r1", "the engine panicked: boom", true),
            ("p2-r0", "no route", false)
        ]
    );
    // Resuming retries the failed run only, and still reports the recorded panic.
    let open = OpenSweep::open(&sweep(&l, &out, true)).expect("resume");
    let ids: Vec<String> = open.pending(None).into_iter().map(|t| t.spec.id).collect();
    assert_eq!(ids, ["p2-r0"]);
    tmp.remove().expect("clean up");
}

#[test]
fn foreign_tasks_are_refused() {
    let tmp = scratch("foreign");
    let l = loaded();
    let out = tmp.path().join("out");
    let open = OpenSweep::open_shard(&sweep(&l, &out, false), Shard::new(0, 2)).expect("open");
    let mine = open.pending(None);
    assert_eq!(
        mine.iter().map(|t| t.index).collect::<Vec<_>>(),
        [0, 2, 4],
        "shard 0 of 2 holds every other run"
    );
    let other = open.task(1).expect("run 1 exists");
    let e = open
        .record(&other, TaskOutcome::Failed("x".into()))
        .expect_err("another shard's task");
    assert!(e.to_string().contains("another shard"), "{e}");
    let mut wrong = mine[0].clone();
    wrong.index = 99;
    let e = open
        .record(&wrong, TaskOutcome::Failed("x".into()))
        .expect_err("no such run");
    assert!(e.to_string().contains("6 runs"), "{e}");
    let mut wrong = mine[0].clone();
    wrong.spec.seed ^= 1;
    assert!(open
        .record(&wrong, TaskOutcome::Failed("x".into()))
        .is_err());
    let (_, result) = remote(&mine[1]);
    let e = open
        .record(&mine[0], result)
        .expect_err("another run's result");
    assert!(e.to_string().contains("is run p1-r0's result"), "{e}");
    // Narrowing further: shard 1 of 3 of what shard 0/2 holds is run 4 only.
    let narrow: Vec<usize> = open.pending(Some((1, 3))).iter().map(|t| t.index).collect();
    assert_eq!(narrow, [4]);
    drop(open);
    tmp.remove().expect("clean up");
}

#[test]
fn two_shards_hold_every_run_of_the_local_sweep_once() {
    let tmp = scratch("shards");
    let l = loaded();
    let reference = tmp.path().join("local");
    local(&l, &reference);
    let mut lines = Vec::new();
    for i in 0..2 {
        let out = tmp.path().join(format!("shard{i}"));
        let outcome = crate::run_sweep_shard(
            &sweep(&l, &out, false),
            Shard::new(i, 2),
            &SimEngine::default(),
            &Threads::new(Some(1)),
            &never,
            &(),
        )
        .expect("shard runs");
        assert!(matches!(outcome, SweepOutcome::Finished { total: 3, .. }));
        let record = shard::read(&out).expect("read").expect("a shard's record");
        assert_eq!(
            (record.shard, record.shards, record.reps, record.runs),
            (i, 2, 2, 6)
        );
        assert_eq!(
            read(out.join("sweep.json")),
            read(reference.join("sweep.json"))
        );
        let text = String::from_utf8(read(out.join("results.jsonl"))).expect("utf-8");
        lines.extend(text.lines().map(String::from));
    }
    let mut want: Vec<String> = String::from_utf8(read(reference.join("results.jsonl")))
        .expect("utf-8")
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    want.sort();
    assert_eq!(lines, want);
    tmp.remove().expect("clean up");
}

/// Every row of a Parquet file as JSON objects, with the parquet crate's own reader.
fn parquet_rows(path: &Path) -> Vec<serde_json::Map<String, serde_json::Value>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use serde_json::{json, Value};
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = SerializedFileReader::new(file).expect("a Parquet file");
    reader
        .get_row_iter(None)
        .expect("rows")
        .map(|row| {
            row.expect("row")
                .get_column_iter()
                .map(|(name, field)| {
                    let v = match field {
                        Field::Null => Value::Null,
                        Field::Bool(b) => json!(b),
                        Field::Long(i) => json!(i),
                        Field::ULong(u) => json!(u),
                        Field::Double(x) => json!(x),
                        Field::Str(s) => json!(s),
                        other => panic!("unexpected cell {other:?}"),
                    };
                    (name.clone(), v)
                })
                .collect()
        })
        .collect()
}

#[test]
fn results_parquet_holds_every_flow_of_results_jsonl() {
    let tmp = scratch("parquet");
    let l = loaded();
    let out = tmp.path().join("out");
    local(&l, &out);
    let lines: Vec<serde_json::Value> = String::from_utf8(read(out.join("results.jsonl")))
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let rows = parquet_rows(&out.join("results.parquet"));
    // Shape: one row per run × flow, in file order.
    assert_eq!(rows.len(), lines.len() * 2);
    for (r, row) in rows.iter().enumerate() {
        let (run, flow) = (&lines[r / 2], &lines[r / 2]["flows"][r % 2]);
        assert_eq!(row["id"], run["id"]);
        assert_eq!(row["seed"], run["seed"]);
        assert_eq!(row["link.delay"], run["axes"]["link.delay"]);
        assert_eq!(row["flow"], flow["name"]);
        assert_eq!(row["flow_index"], serde_json::json!(r % 2));
        assert_eq!(row["end_s"], run["end_s"]);
        // Every scalar of the flow, under its own name, null where the JSON has null.
        for (k, v) in flow.as_object().expect("flow object") {
            if v.is_number() || v.is_boolean() || v.is_null() {
                assert_eq!(&row[k.as_str()], v, "{}: {k}", run["id"]);
            }
        }
        assert_eq!(
            row["links.bottleneck_down.forwarded_bytes"],
            run["links"]["bottleneck_down"]["forwarded_bytes"]
        );
    }
    // The series: one row per sample of every run, with the run's identity.
    let series = parquet_rows(&out.join("series.parquet"));
    let mut samples = 0;
    for run in &lines {
        let id = run["id"].as_str().expect("id");
        let csv = String::from_utf8(read(out.join(format!("series/{id}.csv")))).expect("utf-8");
        let first = csv.lines().nth(1).expect("a sample");
        let row = &series[samples];
        assert_eq!(row["id"], run["id"]);
        assert_eq!(
            row["t_s"].as_f64(),
            first.split(',').next().and_then(|t| t.parse().ok())
        );
        samples += csv.lines().count() - 1;
    }
    assert_eq!(series.len(), samples);
    tmp.remove().expect("clean up");
}
