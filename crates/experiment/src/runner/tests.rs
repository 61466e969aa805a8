//! The runner's guarantees: results independent of threads and executor order, resume, stop,
//! failures, in-memory order.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::*;
use crate::executor::{Done, Sequential, Threads};
use crate::interrupt::StopFlag;
use sim::SimEngine;

/// A 200 kB download over 10 Mbit/s: well under a second of simulated time.
const TINY: &str = r#"
[run]
duration = "2s"

[link]
rate = "10Mbit"
delay = "10ms"

[[flow]]
name = "d"
app = "download"
size = "200kB"
"#;

/// 2 points × 2 repetitions.
fn loaded() -> LoadedScenario {
    scenario::parse_str(
        TINY,
        "tiny.toml",
        Path::new("."),
        &["run.reps=2".into()],
        &["link.delay=5ms,20ms".into()],
    )
    .expect("valid scenario")
}

/// A private scratch directory (random name, mode 0700) removed on drop.
struct Scratch(fsutil::PrivateDir);

impl Scratch {
    fn new(name: &str) -> Self {
        Scratch(
            fsutil::PrivateDir::new(&format!("quiclab-experiment-{name}-")).expect("scratch dir"),
        )
    }

    fn out(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

/// Counts the runs it executes and can fail one id or request a stop after n runs.
struct Probe<'a> {
    inner: SimEngine,
    ran: Mutex<Vec<String>>,
    fail: Option<&'a str>,
    /// Panics on this run id (an engine bug, like quinn's assertion on a large MTU).
    panic: Option<&'a str>,
    stop_after: Option<(usize, &'a StopFlag)>,
}

impl<'a> Probe<'a> {
    fn new() -> Self {
        Probe {
            inner: SimEngine::default(),
            ran: Mutex::new(Vec::new()),
            fail: None,
            panic: None,
            stop_after: None,
        }
    }

    fn ran(&self) -> Vec<String> {
        self.ran.lock().expect("lock").clone()
    }
}

impl Engine for Probe<'_> {
    fn run(
        &self,
        point: &SweepPoint,
        spec: &RunSpec,
        outputs: &RunOutputs,
    ) -> Result<results::Run, EngineError> {
        let n = {
            let mut ran = self.ran.lock().expect("lock");
            ran.push(spec.id.clone());
            ran.len()
        };
        if let Some((after, flag)) = self.stop_after {
            if n >= after {
                flag.request();
            }
        }
        if self.panic == Some(spec.id.as_str()) {
            panic!("injected panic in {}", spec.id);
        }
        if self.fail == Some(spec.id.as_str()) {
            return Err(EngineError::Io {
                path: PathBuf::from("blocked"),
                source: std::io::Error::other("refused for the test"),
            });
        }
        self.inner.run(point, spec, outputs)
    }
}

/// Runs every job on the calling thread, last job first.
struct Reverse;

impl Executor for Reverse {
    fn execute(
        &self,
        engine: &dyn Engine,
        jobs: &[Job<'_>],
        stop: &Stop<'_>,
        done: &Done<'_>,
    ) -> Result<(), ExperimentError> {
        for (i, job) in jobs.iter().enumerate().rev() {
            if stop() {
                break;
            }
            done(i, job.run(engine));
        }
        Ok(())
    }
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

fn finished(outcome: SweepOutcome) -> (usize, Vec<Failure>) {
    match outcome {
        SweepOutcome::Finished {
            total, failures, ..
        } => (total, failures),
        SweepOutcome::Interrupted { .. } => panic!("interrupted"),
    }
}

fn read(path: PathBuf) -> Vec<u8> {
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn results_are_byte_identical_for_one_and_two_threads_and_any_order() {
    let s = Scratch::new("threads");
    let l = loaded();
    let engine = SimEngine::default();
    let executors: [(&str, &dyn Executor); 3] = [
        ("one", &Threads::new(Some(1))),
        ("two", &Threads::new(Some(2))),
        ("reverse", &Reverse),
    ];
    for (name, executor) in executors {
        let out = s.out(name);
        let outcome =
            run_sweep(&sweep(&l, &out, false), &engine, executor, &never, &()).expect("sweep runs");
        let (total, failures) = finished(outcome);
        assert_eq!((total, failures.len()), (4, 0));
    }
    let one = read(s.out("one/results.jsonl"));
    assert_eq!(String::from_utf8_lossy(&one).lines().count(), 4);
    for other in ["two", "reverse"] {
        assert!(one == read(s.out(other).join("results.jsonl")), "{other}");
        assert_eq!(
            read(s.out("one/summary.csv")),
            read(s.out(other).join("summary.csv"))
        );
        assert_eq!(
            read(s.out("one/series/p1-r1.csv")),
            read(s.out(other).join("series/p1-r1.csv"))
        );
    }
}

#[test]
fn resume_skips_finished_runs() {
    let s = Scratch::new("resume");
    let l = loaded();
    let out = s.out("out");
    finished(
        run_sweep(
            &sweep(&l, &out, false),
            &SimEngine::default(),
            &Threads::new(Some(2)),
            &never,
            &(),
        )
        .expect("sweep runs"),
    );
    let path = out.join("results.jsonl");
    let full = read(path.clone());
    let text = String::from_utf8(full.clone()).expect("utf-8");
    let first_two: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, first_two).expect("truncate");

    let probe = Probe::new();
    finished(run_sweep(&sweep(&l, &out, true), &probe, &Sequential, &never, &()).expect("resumes"));
    assert_eq!(probe.ran(), ["p1-r0", "p1-r1"]);
    assert_eq!(read(path), full);
}

#[test]
fn earlier_results_are_refused_without_resume() {
    let s = Scratch::new("refuse");
    let l = loaded();
    let out = s.out("out");
    let engine = SimEngine::default();
    finished(run_sweep(&sweep(&l, &out, false), &engine, &Sequential, &never, &()).expect("runs"));
    let again = run_sweep(&sweep(&l, &out, false), &engine, &Sequential, &never, &());
    assert!(matches!(
        again,
        Err(ExperimentError::AlreadyHasResults { .. })
    ));
}

#[test]
fn a_stop_keeps_completed_lines_and_resume_finishes_identically() {
    let s = Scratch::new("stop");
    let l = loaded();
    let reference = s.out("reference");
    finished(
        run_sweep(
            &sweep(&l, &reference, false),
            &SimEngine::default(),
            &Sequential,
            &never,
            &(),
        )
        .expect("runs"),
    );

    let out = s.out("out");
    let flag = StopFlag::new();
    let mut probe = Probe::new();
    probe.stop_after = Some((2, &flag));
    let stop = || flag.is_requested();
    let outcome =
        run_sweep(&sweep(&l, &out, false), &probe, &Sequential, &stop, &()).expect("runs");
    match outcome {
        SweepOutcome::Interrupted {
            total,
            complete,
            results,
        } => {
            assert_eq!((total, complete), (4, 2));
            assert_eq!(results, out.join("results.jsonl"));
        }
        SweepOutcome::Finished { .. } => panic!("the stop was ignored"),
    }
    assert_eq!(probe.ran().len(), 2, "no run may start after the stop");
    let kept = String::from_utf8(read(out.join("results.jsonl"))).expect("utf-8");
    assert_eq!(kept.lines().count(), 2);
    assert!(!out.join("summary.csv").exists());

    let probe = Probe::new();
    finished(run_sweep(&sweep(&l, &out, true), &probe, &Sequential, &never, &()).expect("resumes"));
    assert_eq!(probe.ran(), ["p1-r0", "p1-r1"]);
    assert_eq!(
        read(out.join("results.jsonl")),
        read(reference.join("results.jsonl"))
    );
}

#[test]
fn a_failed_run_is_reported_and_the_others_recorded() {
    let s = Scratch::new("fail");
    let l = loaded();
    let out = s.out("out");
    let mut probe = Probe::new();
    probe.fail = Some("p0-r1");
    let (total, failures) = finished(
        run_sweep(
            &sweep(&l, &out, false),
            &probe,
            &Threads::new(Some(2)),
            &never,
            &(),
        )
        .expect("runs"),
    );
    assert_eq!(total, 4);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].id, "p0-r1");
    assert!(
        failures[0].message.contains("refused for the test"),
        "{:?}",
        failures[0]
    );
    let text = String::from_utf8(read(out.join("results.jsonl"))).expect("utf-8");
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains("\"p0-r1\""));
    assert!(!out.join("series/p0-r1.csv").exists());
}

/// Counts progress calls.
#[derive(Default)]
struct Count {
    begun: Mutex<Option<(usize, usize)>>,
    finished: AtomicUsize,
    ended: AtomicUsize,
}

impl Progress for Count {
    fn begin(&self, total: usize, done: usize) {
        *self.begun.lock().expect("lock") = Some((total, done));
    }
    fn finished(&self, _id: &str, _error: Option<&str>) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
    fn end(&self) {
        self.ended.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn in_memory_results_come_back_in_job_order() {
    let l = loaded();
    let runs = l.runs();
    let jobs: Vec<Job<'_>> = runs
        .iter()
        .map(|spec| Job {
            point: &l.points[spec.point],
            spec,
            outputs: RunOutputs::default(),
        })
        .collect();
    let engine = SimEngine::default();
    let progress = Count::default();
    let reversed = run_in_memory(&engine, &jobs, &Reverse, &progress).expect("runs");
    let threaded = run_in_memory(&engine, &jobs, &Threads::new(Some(2)), &()).expect("runs");
    let ids: Vec<String> = reversed
        .iter()
        .map(|r| r.as_ref().expect("run succeeds").id.clone())
        .collect();
    assert_eq!(ids, ["p0-r0", "p0-r1", "p1-r0", "p1-r1"]);
    for (a, b) in reversed.iter().zip(&threaded) {
        let a = serde_json::to_string(a.as_ref().expect("ok")).expect("json");
        let b = serde_json::to_string(b.as_ref().expect("ok")).expect("json");
        assert_eq!(a, b);
    }
    assert_eq!(*progress.begun.lock().expect("lock"), Some((4, 0)));
    assert_eq!(progress.finished.load(Ordering::SeqCst), 4);
    assert_eq!(progress.ended.load(Ordering::SeqCst), 1);

    // execute_one is the same pure function of point and spec.
    let one = execute_one(&engine, jobs[2].point, jobs[2].spec, &RunOutputs::default())
        .expect("run succeeds");
    assert_eq!(
        serde_json::to_string(&one).expect("json"),
        serde_json::to_string(reversed[2].as_ref().expect("ok")).expect("json")
    );
}

#[test]
fn a_panicking_run_becomes_an_error_record_and_resume_skips_it() {
    let s = Scratch::new("panic");
    let l = loaded();
    let out = s.out("out");
    let mut probe = Probe::new();
    probe.panic = Some("p0-r1");
    let (total, failures) = finished(
        run_sweep(
            &sweep(&l, &out, false),
            &probe,
            &Threads::new(Some(2)),
            &never,
            &(),
        )
        .expect("the sweep survives the panic"),
    );
    assert_eq!(total, 4);
    assert_eq!(probe.ran().len(), 4, "the other runs still ran");
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].recorded);
    assert!(
        failures[0]
            .message
            .contains("panicked: injected panic in p0-r1"),
        "{:?}",
        failures[0]
    );
    let text = String::from_utf8(read(out.join("results.jsonl"))).expect("utf-8");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let ids: Vec<&str> = lines.iter().filter_map(|v| v["id"].as_str()).collect();
    assert_eq!(
        ids,
        ["p0-r0", "p0-r1", "p1-r0", "p1-r1"],
        "sorted in run order"
    );
    assert!(lines[1]["error"]
        .as_str()
        .is_some_and(|e| e.contains("injected panic")));
    assert!(out.join("summary.csv").exists());

    // Resuming neither re-runs (and re-panics) the run nor forgets that it failed.
    let again = Probe {
        panic: Some("p0-r1"),
        ..Probe::new()
    };
    let (_, failures) = finished(
        run_sweep(&sweep(&l, &out, true), &again, &Sequential, &never, &()).expect("resume"),
    );
    assert!(again.ran().is_empty(), "{:?}", again.ran());
    assert_eq!(
        failures
            .iter()
            .map(|f| (f.id.as_str(), f.recorded))
            .collect::<Vec<_>>(),
        [("p0-r1", true)]
    );
}

#[test]
fn a_directory_in_use_by_another_sweep_is_refused() {
    let s = Scratch::new("locked");
    let l = loaded();
    let out = s.out("out");
    std::fs::create_dir_all(&out).expect("dir");
    // The other sweep: flock belongs to the open file description, so this conflicts
    // exactly like a second process would (the CLI test runs two processes).
    let held = crate::lock::DirLock::acquire(&out).expect("lock");
    let probe = Probe::new();
    let e = run_sweep(&sweep(&l, &out, true), &probe, &Sequential, &never, &())
        .expect_err("the directory is in use");
    assert!(matches!(e, ExperimentError::Locked { .. }), "{e}");
    assert!(probe.ran().is_empty());
    assert!(!out.join("results.jsonl").exists());
    drop(held);
    finished(run_sweep(&sweep(&l, &out, true), &probe, &Sequential, &never, &()).expect("free"));
    assert_eq!(probe.ran().len(), 4);
}
