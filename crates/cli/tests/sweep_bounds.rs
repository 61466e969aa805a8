//! End to end: one sweep per results directory, names that are not paths, runs whose
//! flows fail do not exit 0 (unless --allow-failures), every run describing its flows first.

mod common;
use common::{quiclab, text, Scratch};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Many short runs: long enough (a few seconds in all) to overlap with a second process.
const SLOW: &str = r#"
[run]
duration = "3s"

[link]
rate = "50Mbit"
delay = "20ms"

[[flow]]
name = "b"
app = "bulk"
"#;

#[test]
fn a_second_sweep_into_the_same_directory_fails_naming_the_holder() {
    let s = Scratch::new("lock");
    s.file("slow.toml", SLOW);
    let out = s.path("out");
    let args = [
        "sim",
        "slow.toml",
        "--reps",
        "60",
        "-j",
        "1",
        "--out",
        "out",
        "--no-series",
    ];
    let mut first = Command::new(env!("CARGO_BIN_EXE_quiclab"))
        .args(args)
        .current_dir(&s.0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the first sweep");
    // The first sweep holds the lock once it has written its pid into the lock file.
    let pid = first.id().to_string();
    let started = Instant::now();
    while std::fs::read_to_string(out.join(".lock")).map_or(true, |t| t.trim() != pid) {
        assert!(started.elapsed() < Duration::from_secs(30), "no lock taken");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = quiclab(
        &[
            "sim",
            "slow.toml",
            "--reps",
            "2",
            "--out",
            "out",
            "--resume",
            "--no-series",
        ],
        &s.0,
    );
    let still_running = first.try_wait().expect("poll").is_none();
    let err = text(&second.stderr);
    if still_running {
        assert_eq!(second.status.code(), Some(1), "{err}");
        assert!(
            err.contains("is in use by another sweep") && err.contains(&format!("process {pid}")),
            "{err}"
        );
    }
    assert!(first.wait().expect("first sweep").success());
    assert!(
        still_running,
        "the first sweep finished too fast to test the lock"
    );
    // Nothing was lost: all 60 runs of the first sweep, in order.
    let results = std::fs::read_to_string(out.join("results.jsonl")).expect("results");
    let ids: Vec<String> = results
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            v["id"].as_str().expect("id").to_string()
        })
        .collect();
    let want: Vec<String> = (0..60).map(|r| format!("p0-r{r}")).collect();
    assert_eq!(ids, want);
}

#[test]
fn a_name_that_is_a_path_writes_nothing() {
    let s = Scratch::new("name");
    s.file(
        "t.toml",
        "[run]\nname = \"../../escaped\"\nduration = \"1s\"\n[[flow]]\napp = \"download\"\nsize = \"10kB\"\n",
    );
    let o = quiclab(&["sim", "t.toml", "--reps", "2"], &s.0);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("t.toml:2:8: run.name:"), "{err}");
    assert!(!s.path("results").exists());
    assert!(!s.0.parent().expect("parent").join("escaped").exists());
}

#[test]
fn zero_rtt_downloads_of_one_byte_complete_every_connection() {
    let s = Scratch::new("zrtt");
    s.file(
        "z.toml",
        "[run]\nduration = \"5s\"\n[link]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
         [[flow]]\nname = \"d\"\napp = \"download\"\nsize = \"1B\"\nconnections = 3\nzero_rtt = true\n",
    );
    let o = quiclab(&["sim", "z.toml", "--json"], &s.0);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let flow = &run["flows"][0];
    assert!(flow["error"].is_null(), "{flow}");
    assert_eq!(flow["bytes_delivered"], 3);
}

#[test]
fn a_flow_that_fails_makes_a_single_run_fail() {
    let s = Scratch::new("flowfail");
    // The path is down for the whole run: the handshake times out.
    s.file(
        "down.toml",
        "[run]\nduration = \"60s\"\n[link]\nblackout = [{ start = \"0s\", duration = \"100s\" }]\n\
         [[flow]]\nname = \"d\"\napp = \"download\"\nsize = \"10kB\"\n",
    );
    let o = quiclab(&["sim", "down.toml"], &s.0);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("flow d reported an error"), "{err}");
}

/// Two points: the path is down for the whole run at the first (the handshake times out), up
/// at the second.
const HALF_DOWN: &str = "[run]\nduration = \"60s\"\n\
    [[flow]]\nname = \"d\"\napp = \"download\"\nsize = \"10kB\"\n\
    [sweep]\n\"link.blackout\" = [[{ start = \"0s\", duration = \"100s\" }], [{ start = \"50s\", duration = \"1s\" }]]\n";

#[test]
fn a_sweep_with_failed_flows_exits_1_and_says_how_many() {
    let s = Scratch::new("sweepfail");
    s.file("half.toml", HALF_DOWN);
    let o = quiclab(&["sim", "half.toml", "--out", "r"], &s.0);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("run p0-r0 failed: flow d: "), "{err}");
    assert!(
        err.contains("1 of 2 runs had a flow that failed; their results are in results.jsonl"),
        "{err}"
    );
    assert!(
        err.contains("error: 1 of 2 runs failed (exit status 1; --allow-failures exits 0)"),
        "{err}"
    );
    // Both runs are results all the same.
    let lines = std::fs::read_to_string(s.path("r/results.jsonl")).expect("results.jsonl");
    assert_eq!(lines.lines().count(), 2);
    // --allow-failures lists them and exits 0.
    let o = quiclab(
        &["sim", "half.toml", "--out", "r2", "--allow-failures"],
        &s.0,
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("run p0-r0 failed: flow d: "), "{err}");
    assert!(
        err.contains("warning: 1 of 2 runs failed; exit status 0 (--allow-failures)"),
        "{err}"
    );
}

#[test]
fn every_run_describes_its_flows_once_before_running() {
    let s = Scratch::new("describe");
    s.file(
        "d.toml",
        "[run]\nduration = \"1s\"\nreps = 3\n[[flow]]\nname = \"b\"\ncc = \"cubic\"\n\
         [sweep]\n\"link.delay\" = [\"5ms\", \"10ms\"]\n",
    );
    let o = quiclab(&["sim", "d.toml", "--out", "r"], &s.0);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Six runs, one flow line.
    let line = "b: quic, cubic, bulk upload (client → server) for 1s";
    assert_eq!(err.matches(line).count(), 1, "{err}");
    // --dry-run loads and describes, and runs nothing.
    let o = quiclab(&["sim", "d.toml", "--out", "dry", "--dry-run"], &s.0);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(line), "{err}");
    assert!(!s.path("dry").exists());
}

#[test]
fn zero_rtt_on_one_connection_is_refused_naming_the_fix() {
    // QUIC 1-RTT against 0-RTT where every variant fetches the page once: 0-RTT never happens.
    let s = Scratch::new("zrtt1");
    s.file(
        "p.toml",
        "[[flow]]\nname = \"page\"\napp = \"download\"\nsize = \"100kB\"\n\
         [[variant]]\nname = \"quic-1rtt\"\n[[variant]]\nname = \"quic-0rtt\"\nset = { \"flow.zero_rtt\" = true }\n",
    );
    let o = quiclab(&["sim", "p.toml", "--dry-run"], &s.0);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("p.toml:9:27: ")
            && err.contains("flow.0.zero_rtt = true has no effect")
            && err.contains("set connections = 2 or more (in variant \"quic-0rtt\")"),
        "{err}"
    );
}
