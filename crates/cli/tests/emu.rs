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

/// TINY plus a light UDP cross-traffic source on the downlink.
fn with_cross() -> String {
    format!(
        "{TINY}\n[[cross]]\nname = \"bg\"\npattern = \"cbr\"\nrate = \"500kbit\"\nsize = \"972B\"\n"
    )
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
    // What the run is about to measure, said before it runs.
    let described = match stack {
        "tcp" => "dl: tcp + TLS 1.3, cubic, download of 1MB (server → client)",
        _ => "dl: quic, cubic, download of 1MB (server → client)",
    };
    assert!(text(&o.stderr).contains(described), "{}", text(&o.stderr));
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
    typed_result(stack, &lines, &runs[0]);
    let summary = std::fs::read_to_string(out.join("summary.csv")).expect("summary.csv");
    // Not measured in the emulator: no summary row, rather than a row averaging zeros.
    assert!(!summary.contains("first_congestion_s"), "{summary}");
    assert!(summary.contains("flows.0.completion_s,1,"), "{summary}");
    assert!(dir.path("pcap/p0-r0/client-side.pcap").exists());
    assert!(
        leftovers(&before).is_empty(),
        "left behind: {:?}",
        leftovers(&before)
    );
}

/// results.jsonl deserializes into the results schema; what the stack does not expose is absent
/// (JSON null), what it exposes is there.
fn typed_result(stack: &str, lines: &str, json: &Value) {
    let line = lines.lines().next().expect("one line");
    let run: results::Run = serde_json::from_str(line).expect("results.jsonl is a results::Run");
    let f = &run.flows[0];
    assert_eq!(run.events, None, "no discrete events in real time");
    assert!(json["events"].is_null());
    assert_eq!(f.first_congestion_s, None);
    assert!(json["flows"][0]["first_congestion_s"].is_null());
    // No measurement window: the window is the whole run, as in the simulator.
    assert_eq!(
        f.window_goodput_bps,
        Some(f.bytes_delivered as f64 * 8.0 / run.end_s)
    );
    assert!(f.packets_sent.is_some_and(|n| n > 0), "{f:?}");
    assert!(
        f.datagrams_sent.iter().all(|d| d.is_some_and(|n| n > 0)),
        "{f:?}"
    );
    assert_eq!(f.connections.len(), 1, "{f:?}");
    assert_eq!(f.connections[0].bytes_delivered, Some(f.bytes_delivered));
    // The forwarder's health counters are typed too: it saw the flow's frames, all well formed.
    let fwd = run
        .forwarder
        .as_ref()
        .expect("the emulator reports its forwarder");
    assert!(fwd.rx_frames >= f.packets_sent.unwrap_or(0), "{fwd:?}");
    assert_eq!(
        (fwd.malformed_frames, fwd.unroutable_frames),
        (0, 0),
        "{fwd:?}"
    );
    let completion = f.completion_s.expect("completion");
    // end_s stops at the last byte, not when the client process has exited (0.3–0.5 s later).
    assert!(run.end_s >= completion, "{} < {completion}", run.end_s);
    assert!(
        run.end_s < completion + 0.25,
        "{} vs {completion}",
        run.end_s
    );
    match stack {
        "quic" => {
            // quinn's counters: sender's congestion events, receiver's ACK frames, UDP payload MTU.
            assert!(f.congestion_events.is_some(), "{f:?}");
            assert!(f.ack_frames_sent.is_some_and(|n| n > 0), "{f:?}");
            assert!(f.payload_rx_bytes.is_some_and(|n| n >= 1_000_000), "{f:?}");
            assert!(
                f.final_mtu.is_some_and(|m| (1200..=1472).contains(&m)),
                "{f:?}"
            );
        }
        _ => {
            // TCP_INFO has no congestion-event or ACK counter; the MSS is below the IP MTU.
            assert_eq!(f.congestion_events, None, "{f:?}");
            assert_eq!(f.ack_frames_sent, None, "{f:?}");
            assert!(
                f.final_mtu.is_some_and(|m| (1000..1460).contains(&m)),
                "{f:?}"
            );
        }
    }
}

#[test]
fn emu_runs_cross_traffic() {
    let dir = Scratch::new("emu-cross");
    let scenario = dir.file("cross.toml", &with_cross());
    let out = dir.path("out");
    let o = quiclab(
        &[
            "emu",
            scenario.to_str().expect("utf-8 path"),
            "--out",
            out.to_str().expect("utf-8 path"),
        ],
        &dir.0,
    );
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let line = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    let run: results::Run = serde_json::from_str(line.trim()).expect("a results::Run");
    assert_eq!(run.cross.len(), 1, "{run:?}");
    assert!(run.cross[0].sent_packets > 0, "{run:?}");
    assert!(run.cross[0].delivered_packets > 0, "{run:?}");
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

/// `cc = "bbr"` on `stack = "tcp"` runs the kernel's BBR: the download completes at the link's
/// speed and the data sender's socket reports `bbr` (TCP_CONGESTION, read back by the
/// endpoint into the flow's configuration record); nothing of the run is left behind.
#[test]
fn emu_tcp_bbr_runs_the_kernels_bbr() {
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .expect("the kernel lists its controllers");
    let dir = Scratch::new("emu-bbr");
    let scenario = dir.file("tiny.toml", TINY);
    let out = dir.path("out");
    let before = stale_namespaces();
    let o = quiclab(
        &[
            "emu",
            scenario.to_str().expect("utf-8 path"),
            "--set",
            "flow.stack=\"tcp\"",
            "--set",
            "flow.cc=\"bbr\"",
            "--out",
            out.to_str().expect("utf-8 path"),
        ],
        &dir.0,
    );
    if !available.split_whitespace().any(|c| c == "bbr") {
        // Refused up front, quoting the kernel's list.
        assert_eq!(o.status.code(), Some(2), "stderr: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(available.trim()),
            "{}",
            text(&o.stderr)
        );
        return;
    }
    assert!(
        o.status.success(),
        "stderr: {}\nstdout: {}",
        text(&o.stderr),
        text(&o.stdout)
    );
    let line = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    let run: results::Run = serde_json::from_str(line.trim()).expect("a results::Run");
    let f = &run.flows[0];
    assert_eq!(f.error, None, "{f:?}");
    assert_eq!(f.bytes_delivered, 1_000_000);
    let config = f.config.as_ref().expect("kernel settings read back");
    assert_eq!(
        config.cc.as_deref(),
        Some("bbr"),
        "the socket's TCP_CONGESTION"
    );
    let completion = f.completion_s.expect("completion");
    assert!(
        (0.8..2.5).contains(&completion),
        "completion {completion} s is not what 10 Mbit/s allows"
    );
    assert!(
        leftovers(&before).is_empty(),
        "left behind: {:?}",
        leftovers(&before)
    );
}
