//! End-to-end tests of `quiclab emu` (root, real namespaces, `quiclab serve` / `quiclab get`).
//! Each run removes its namespaces itself; the tests check that nothing of theirs is left.

mod common;

use std::collections::BTreeSet;

use common::{quiclab, text, Scratch};
use serde_json::Value;

/// 1 MB over 10 Mbit/s with 5 ms each way: at least 0.8 s of serialization.
const TINY: &str = r#"
[run]
duration = "20s"

[link]
rate = "10Mbit"
delay = "5ms"
queue = "25pkt"

[[flow]]
name = "dl"
app = "download"
size = "1MB"
cc = "cubic"
"#;

/// quiclab namespaces that belong to no live run.
fn stale_namespaces() -> BTreeSet<String> {
    emu::stale_namespaces()
        .expect("list namespaces")
        .into_iter()
        .collect()
}

/// Stale namespaces that appeared during the test.
fn leftovers(before: &BTreeSet<String>) -> Vec<String> {
    stale_namespaces().difference(before).cloned().collect()
}

fn run_tiny(stack: &str) {
    let dir = Scratch::new(&format!("emu-{stack}"));
    let scenario = dir.file("tiny.toml", TINY);
    let out = dir.path("out");
    let before = stale_namespaces();
    let o = quiclab(
        &[
            "emu",
            scenario.to_str().expect("utf-8 path"),
            "--set",
            &format!("flow.stack=\"{stack}\""),
            "--out",
            out.to_str().expect("utf-8 path"),
            "--pcap",
            dir.path("pcap").to_str().expect("utf-8 path"),
        ],
        &dir.0,
    );
    assert!(
        o.status.success(),
        "stderr: {}\nstdout: {}",
        text(&o.stderr),
        text(&o.stdout)
    );
    let lines = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    let runs: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(runs.len(), 1);
    let flow = &runs[0]["flows"][0];
    assert_eq!(flow["stack"], stack);
    assert!(flow["error"].is_null(), "{flow}");
    assert_eq!(flow["bytes_delivered"], 1_000_000);
    let completion = flow["completion_s"].as_f64().expect("completion time");
    // The link needs 0.83 s for 1 MB plus IP/UDP/TCP headers; slow start over a 10 ms RTT adds
    // a few round trips.
    assert!(
        (0.8..2.0).contains(&completion),
        "completion {completion} s is not what 10 Mbit/s allows"
    );
    let down = &runs[0]["links"]["bottleneck_down"];
    assert!(
        down["forwarded_packets"].as_u64().unwrap_or(0) > 650,
        "{down}"
    );
    assert!(out.join("summary.csv").exists());
    assert!(dir.path("pcap/p0-r0/client-side.pcap").exists());
    assert!(
        leftovers(&before).is_empty(),
        "left behind: {:?}",
        leftovers(&before)
    );
}

#[test]
fn emu_quic_download_completes_at_link_speed() {
    run_tiny("quic");
}

#[test]
fn emu_tcp_download_completes_at_link_speed() {
    run_tiny("tcp");
}

#[test]
fn emu_rejects_unsupported_keys_by_name() {
    let dir = Scratch::new("emu-unsupported");
    let scenario = dir.file("tiny.toml", TINY);
    let o = quiclab(
        &[
            "emu",
            scenario.to_str().expect("utf-8 path"),
            "--set",
            "flow.cc=\"none\"",
        ],
        &dir.0,
    );
    assert_eq!(o.status.code(), Some(2), "stderr: {}", text(&o.stderr));
    assert!(text(&o.stderr).contains("`flow.cc`"), "{}", text(&o.stderr));
}

#[test]
fn emu_cleanup_alone_succeeds() {
    let dir = Scratch::new("emu-cleanup");
    let o = quiclab(&["emu", "--cleanup"], &dir.0);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
}
