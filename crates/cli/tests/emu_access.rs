//! The emulator's per-flow access links and kernel TCP knobs, end to end (root, real
//! namespaces, `quiclab serve` / `quiclab get`).

mod common;

use std::collections::BTreeSet;

use common::{quiclab, text, Scratch};

/// Two QUIC downloads of 1 MB at once over one 10 Mbit/s bottleneck (5 ms each way), one client
/// 2 ms from the bottleneck, the other 100 ms with a server 2 ms behind it: round trips of 14 ms
/// and 214 ms.
const TWO_RTTS: &str = r#"
[run]
duration = "20s"

[link]
rate = "10Mbit"
delay = "5ms"
queue = "50pkt"

[[flow]]
name = "near"
app = "download"
size = "1MB"
cc = "cubic"
client_access.delay = "2ms"

[[flow]]
name = "far"
app = "download"
size = "1MB"
cc = "cubic"
client_access.delay = "100ms"
server_access.delay = "2ms"
"#;

fn stale_namespaces() -> BTreeSet<String> {
    emu::stale_namespaces()
        .expect("list namespaces")
        .into_iter()
        .collect()
}

/// Runs `scenario` once in the emulator and returns its result.
fn emu_run(name: &str, scenario: &str, set: &[&str]) -> results::Run {
    let dir = Scratch::new(name);
    let file = dir.file("s.toml", scenario);
    let out = dir.path("out");
    let before = stale_namespaces();
    let mut args = vec![
        "emu",
        file.to_str().expect("utf-8 path"),
        "--out",
        out.to_str().expect("utf-8 path"),
    ];
    for s in set {
        args.extend(["--set", s]);
    }
    let o = quiclab(&args, &dir.0);
    assert!(
        o.status.success(),
        "stderr: {}\nstdout: {}",
        text(&o.stderr),
        text(&o.stdout)
    );
    let left: Vec<String> = stale_namespaces().difference(&before).cloned().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let line = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    serde_json::from_str(line.trim()).expect("a results::Run")
}

#[test]
fn emu_access_delays_show_in_each_flows_rtt_over_a_shared_bottleneck() {
    let run = emu_run("emu-access", TWO_RTTS, &[]);
    let flow = |name: &str| {
        run.flows
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("flow {name} in {run:?}"))
    };
    let (near, far) = (flow("near"), flow("far"));
    for f in [near, far] {
        assert!(f.error.is_none(), "{f:?}");
        assert_eq!(f.bytes_delivered, 1_000_000, "{f:?}");
    }
    // A QUIC handshake takes one round trip plus the endpoints' own time, which on a loaded
    // 2-vCPU machine (two clients starting at once) varies by tens of milliseconds; the
    // difference between the flows is the access links' 200 ms of round trip.
    let hs = |f: &results::Flow| f.handshake_s.expect("handshake measured") * 1e3;
    let (hn, hf) = (hs(near), hs(far));
    assert!(hn >= 14.0, "near handshake {hn} ms below its 14 ms RTT");
    assert!(hf >= 214.0, "far handshake {hf} ms below its 214 ms RTT");
    assert!(
        (150.0..260.0).contains(&(hf - hn)),
        "the access links differ by 200 ms of round trip; handshakes {hn} and {hf} ms"
    );
    // Both crossed the one bottleneck, at the same time: it carried both megabytes, and the
    // far flow's first byte came before the near one had finished.
    let down = &run.links["bottleneck_down"];
    assert!(down.forwarded_bytes >= 2_000_000, "{down:?}");
    let started = |f: &results::Flow| f.connections[0].started_s;
    let far_first_byte = started(far) + far.ttfb_s.expect("far's first byte");
    let near_done = started(near) + near.completion_s.expect("near completes");
    assert!(
        far_first_byte < near_done,
        "the flows did not overlap: far's first byte at {far_first_byte} s, near done at {near_done} s"
    );
}

#[test]
fn emu_records_the_kernel_tcp_settings_it_applied() {
    let one_flow = TWO_RTTS
        .split("[[flow]]")
        .take(2)
        .collect::<Vec<_>>()
        .join("[[flow]]");
    let run = emu_run(
        "emu-knobs",
        &one_flow,
        &[
            "flow.stack=tcp",
            "flow.rack=false",
            "flow.sack=false",
            "flow.delayed_ack=false",
            "flow.min_rto=50ms",
            "flow.initial_receive_window=29200",
            "flow.initial_window=20pkt",
        ],
    );
    let f = &run.flows[0];
    assert!(f.error.is_none(), "{f:?}");
    let c = f
        .config
        .as_ref()
        .expect("the emulator records what the kernel holds");
    // Read back from the namespaces' sysctls and routes and from TCP_INFO.
    assert_eq!(c.cc.as_deref(), Some("cubic"), "{c:?}");
    assert_eq!(c.rack, Some(false), "{c:?}");
    assert_eq!(c.sack, Some(false), "{c:?}");
    assert_eq!(c.timestamps, Some(true), "{c:?}");
    assert_eq!(c.delayed_ack, Some(false), "{c:?}");
    assert_eq!(c.rto_min_ms, Some(50.0), "{c:?}");
    assert_eq!(c.initcwnd_packets, Some(20), "{c:?}");
    // 29 200 bytes in 1448-byte segments, rounded up.
    assert_eq!(c.initrwnd_packets, Some(21), "{c:?}");
    assert_eq!(c.tcp_rmem, Some([4096, 61_440, 6_291_456]), "{c:?}");
}
