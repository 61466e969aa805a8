//! End-to-end `quiclab load … --via SCENARIO` (root: it creates network namespaces): short,
//! bounded attacks through an emulated 20 ms path against `quiclab serve` in the server
//! namespace. Each asserts what only the path can cause (no request faster than the round trip,
//! the link's random loss seen by the forwarder and recovered by the transports) and that the
//! run's namespaces are gone afterwards. Traffic stays in the namespaces the command creates.

mod common;

use std::path::Path;
use std::process::Output;

use common::{quiclab, text, Scratch};
use serde_json::Value;

/// 20 Mbit/s, 10 ms each way (20 ms round trip), a BDP of queue.
const PATH: &str = r#"
[link]
rate = "20Mbit"
delay = "10ms"
queue = "1bdp"
"#;

/// The round trip of [`PATH`], ms: no request can be answered faster.
const RTT_MS: f64 = 20.0;

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// The namespaces the command reported creating (`emulated path <id> (…)` on stderr).
fn run_namespaces(stderr: &str) -> Vec<String> {
    let id = stderr
        .split("emulated path ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no emulated path announced in:\n{stderr}"));
    assert!(id.len() == 6, "run id {id:?}");
    ["r", "c0", "s0"]
        .iter()
        .map(|n| format!("ql{id}-{n}"))
        .collect()
}

fn assert_removed(stderr: &str) {
    for ns in run_namespaces(stderr) {
        assert!(
            !Path::new("/run/netns").join(&ns).exists(),
            "namespace {ns} left behind"
        );
    }
}

fn json_report(file: &Path, cwd: &Path) -> Value {
    let o = quiclab(
        &["load", "report", "--type", "json", file.to_str().unwrap()],
        cwd,
    );
    assert_ok(&o);
    serde_json::from_slice(&o.stdout).expect("report --type json is JSON")
}

#[test]
fn attack_through_an_emulated_path_takes_at_least_its_round_trip() {
    let s = Scratch::new("load-via");
    let scenario = s.file("path.toml", PATH);
    let out = s.path("h1.jsonl");
    let o = quiclab(
        &[
            "load",
            "attack",
            "--via",
            scenario.to_str().unwrap(),
            "--size",
            "11000",
            "--http",
            "1.1",
            "--rate",
            "25/s",
            "--duration",
            "2s",
            "--output",
            out.to_str().unwrap(),
        ],
        &s.0,
    );
    assert_ok(&o);
    let stderr = text(&o.stderr);
    assert_removed(&stderr);
    let r = json_report(&out, &s.0);
    assert_eq!(r["requests"], 50, "{r}");
    assert_eq!(r["success_ratio"], 1.0, "{r}");
    assert_eq!(r["throughput"]["bytes_in"], 50 * 11_000, "{r}");
    // On loopback this page takes well under a millisecond; through the path, a request on
    // an open connection needs one round trip and a new one three (TCP, TLS, request).
    let min = r["latency_ms"]["min"].as_f64().expect("min latency");
    assert!(
        min >= RTT_MS,
        "fastest request {min} ms < the {RTT_MS} ms round trip: {r}"
    );
    let max = r["latency_ms"]["max"].as_f64().expect("max latency");
    assert!(
        max >= 3.0 * RTT_MS,
        "the first request sets up TCP and TLS: max {max} ms"
    );
    assert!(
        stderr.contains("0 lost, 0 queue drops"),
        "a lossless path dropped packets:\n{stderr}"
    );
}

#[test]
fn sweep_through_a_lossy_path_records_the_links_counters() {
    let s = Scratch::new("load-via-sweep");
    let scenario = s.file("path.toml", PATH);
    let out = s.path("sweep");
    let o = quiclab(
        &[
            "load",
            "sweep",
            "--via",
            scenario.to_str().unwrap(),
            "--set",
            "link.loss=3%",
            "--seed",
            "7",
            "--tcp-cc",
            "cubic",
            "--size",
            "11000",
            "--http",
            "2,3",
            "--rates",
            "25",
            "--duration",
            "2s",
            "--pause",
            "0s",
            "--out",
            out.to_str().unwrap(),
        ],
        &s.0,
    );
    assert_ok(&o);
    assert_removed(&text(&o.stderr));
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("emulator.json")).expect("emulator.json"),
    )
    .expect("emulator.json is JSON");
    assert_eq!(record["path"]["server"], "quiclab", "{record}");
    assert_eq!(record["path"]["kernel_tcp_cc"], "cubic", "{record}");
    // The link models' seed is the run's, derived from `--seed` as for `quiclab emu`.
    assert_eq!(
        record["path"]["seed"],
        scenario::run_seed(7, &[], 0),
        "{record}"
    );
    let points = record["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "{record}");
    let mut lost = 0;
    for p in points {
        let down = &p["down"];
        // 50 pages of 11,000 bytes: at least 8 full-size packets each.
        assert!(down["forwarded_packets"].as_u64().unwrap() >= 400, "{p}");
        lost += down["lost_packets"].as_u64().unwrap() + p["up"]["lost_packets"].as_u64().unwrap();
    }
    // 3% of ≥ 1200 packets: none lost would be a path without its loss model.
    assert!(lost > 0, "no packet lost at 3%: {record}");
    for http in ["2", "3"] {
        let file = out.join(format!("h{http}-r25.jsonl"));
        let r = json_report(&file, &s.0);
        // The transports recover what the link loses.
        assert_eq!(r["success_ratio"], 1.0, "HTTP/{http}: {r}");
        let min = r["latency_ms"]["min"].as_f64().unwrap();
        assert!(min >= RTT_MS, "HTTP/{http}: fastest {min} ms: {r}");
    }
}

#[test]
fn via_input_errors_name_the_flag_and_the_allowed_values() {
    let s = Scratch::new("load-via-errors");
    let scenario = s.file("path.toml", PATH);
    let via = scenario.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "attack",
            "--via",
            via,
            "--rate",
            "1/s",
            "--duration",
            "1s",
        ];
        args.extend_from_slice(extra);
        quiclab(&args, &s.0)
    };
    let o = run(&["--http", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--size"), "{}", text(&o.stderr));
    // nginx serves HTTP/1.1 and HTTP/2 only.
    let o = run(&["--size", "100", "--server", "nginx", "--http", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("nginx serves HTTP 2, 1.1 only"), "{e}");
    let o = run(&["--size", "100", "--server", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("quic-go"), "{}", text(&o.stderr));
    let o = run(&["--size", "100", "--set", "link.loss=2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("link.loss"), "{}", text(&o.stderr));
    let o = quiclab(
        &[
            "load",
            "attack",
            "--via",
            via,
            "--size",
            "100",
            "--duration",
            "1s",
            "https://localhost:1/",
        ],
        &s.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let sweep = s.file(
        "sweep.toml",
        &format!("{PATH}\n[sweep]\n\"link.loss\" = [\"0%\", \"1%\"]\n"),
    );
    let o = quiclab(
        &[
            "load",
            "attack",
            "--via",
            sweep.to_str().unwrap(),
            "--size",
            "100",
            "--duration",
            "1s",
        ],
        &s.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("sweeps 2 points"),
        "{}",
        text(&o.stderr)
    );
}
