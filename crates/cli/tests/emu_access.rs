//! The emulator's per-flow access links and kernel TCP knobs, end to end (root, real
//! namespaces, `quiclab serve` / `quiclab get`).

mod common;

use std::collections::BTreeSet;

use common::{quiclab, text, Scratch};

/// Two QUIC flows at once over one 10 Mbit/s bottleneck (5 ms each way), one client 2 ms from
/// the bottleneck, the other 100 ms with a server 2 ms behind it: round trips of 14 ms and
/// 214 ms. Each makes three connections one after another; the near one downloads 1 MB on each
/// (≥ 2.4 s at 10 Mbit/s), so it is still busy when the far one, whose endpoints start later and
/// whose handshake takes 214 ms, gets its first byte (with 400 kB the near flow finished first
/// now and then, 1.19 s against 1.24 s).
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
connections = 3
cc = "cubic"
client_access.delay = "2ms"

[[flow]]
name = "far"
app = "download"
size = "400kB"
connections = 3
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
    for (f, bytes) in [(near, 3_000_000), (far, 1_200_000)] {
        assert!(f.error.is_none(), "{f:?}");
        assert_eq!(f.bytes_delivered, bytes, "{f:?}");
        assert_eq!(f.connections.len(), 3, "{f:?}");
    }
    // A QUIC handshake takes one round trip plus the endpoints' own time, which on a loaded
    // 2-vCPU machine now and then adds tens of milliseconds: the quickest of each flow's three
    // handshakes is its round trip. They differ by the access links' 200 ms.
    let hs = |f: &results::Flow| {
        f.connections
            .iter()
            .filter_map(|c| c.handshake_s)
            .fold(f64::INFINITY, f64::min)
            * 1e3
    };
    let (hn, hf) = (hs(near), hs(far));
    assert!(hn >= 14.0, "near handshake {hn} ms below its 14 ms RTT");
    assert!(hf >= 214.0, "far handshake {hf} ms below its 214 ms RTT");
    assert!(
        (170.0..240.0).contains(&(hf - hn)),
        "the access links differ by 200 ms of round trip; quickest handshakes {hn} and {hf} ms"
    );
    // Both crossed the one bottleneck, at the same time: it carried both flows' bytes, and the
    // far flow's first byte came before the near one had finished.
    let down = &run.links["bottleneck_down"];
    assert!(down.forwarded_bytes >= 4_200_000, "{down:?}");
    let first = &far.connections[0];
    let far_first_byte = first.started_s + first.time_to_first_byte_s.expect("far's first byte");
    let last = near.connections.last().expect("near's connections");
    let near_done = last.started_s + last.completion_s.expect("near completes");
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

#[test]
fn emu_tls12_takes_one_more_round_trip_than_tls13() {
    // One TCP download over a 40 ms round trip: connect + TLS 1.3 is two round trips, connect
    // + TLS 1.2 three.
    let path = r#"
[run]
duration = "20s"

[link]
rate = "10Mbit"
delay = "20ms"
queue = "50pkt"

[[flow]]
name = "dl"
app = "download"
size = "100kB"
cc = "cubic"
stack = "tcp"
"#;
    let handshake = |tls: &str| {
        let run = emu_run(
            &format!("emu-tls{tls}"),
            path,
            &[&format!("flow.tls=\"{tls}\"")],
        );
        let f = &run.flows[0];
        assert!(f.error.is_none(), "{f:?}");
        f.handshake_s.expect("handshake measured") * 1e3
    };
    let (h12, h13) = (handshake("1.2"), handshake("1.3"));
    assert!((120.0..160.0).contains(&h12), "TLS 1.2 handshake {h12} ms");
    assert!((80.0..120.0).contains(&h13), "TLS 1.3 handshake {h13} ms");
}

#[test]
fn emu_address_token_lets_the_resumed_server_send_its_window_at_once() {
    // A 100 kB page over a 200 ms round trip, fetched twice; the second connection is 0-RTT.
    // Without an address-validation token its server may send only 3 × the ~1.5 kB it received
    // until the client's Handshake packet arrives (RFC 9000 §8.1); with the first connection's
    // NEW_TOKEN it sends its whole initial window at once: the simulator's page completes
    // about 80 ms sooner (docs/studies/seed003.md).
    let path = r#"
[run]
duration = "20s"

[link]
rate = "10Mbit"
delay = "100ms"
queue = "1000pkt"

[[flow]]
name = "page"
app = "download"
size = "100kB"
connections = 2
zero_rtt = true
cc = "cubic"
"#;
    let resumed = |token: bool| {
        let run = emu_run(
            &format!("emu-token-{token}"),
            path,
            &[&format!("flow.address_token={token}")],
        );
        let f = &run.flows[0];
        assert!(f.error.is_none(), "{f:?}");
        // Read back: the client received NEW_TOKEN frames only when tokens are on.
        assert_eq!(f.config.as_ref().and_then(|c| c.address_token), Some(token));
        let c = &f.connections[1];
        assert!(c.zero_rtt_accepted, "{c:?}");
        assert_eq!(c.bytes_delivered, Some(100_000));
        c.completion_s.expect("completed")
    };
    let (with, without) = (resumed(true), resumed(false));
    assert!(
        without - with > 0.04,
        "resumed page: {with} s with a token, {without} s without"
    );
}
