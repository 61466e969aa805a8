//! quiche (`stack = "quiche"`) in the simulator: downloads and bulk transfers complete in the
//! time the path allows, beside quinn; the same scenario and seed give byte-identical results
//! and pcaps whatever the thread; tshark decrypts the pcap with the run's key log.

mod common;

use std::path::Path;

use scenario::model::{RunSpec, SweepPoint};

/// The first point of a scenario written as TOML (through the resolver, as a file would be).
fn point(toml: &str) -> SweepPoint {
    let loaded = scenario::parse_str(toml, "quiche.toml", Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    loaded.points[0].clone()
}

fn run_with(p: &SweepPoint, seed: u64, opts: &sim::RunOptions) -> results::Run {
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed,
    };
    sim::run(p, &spec, opts).unwrap_or_else(|e| panic!("{e}"))
}

fn run(p: &SweepPoint, seed: u64) -> results::Run {
    run_with(p, seed, &sim::RunOptions::default())
}

/// A download of `size` over 10 Mbit/s and 40 ms (20 ms each way), a queue of one BDP.
fn download(stack: &str, cc: &str, size: &str, extra: &str) -> String {
    format!(
        r#"
[run]
duration = "20s"
[link]
rate = "10Mbit"
rtt = "40ms"
queue = "1bdp"
[[flow]]
name = "dl"
stack = "{stack}"
app = "download"
size = "{size}"
cc = "{cc}"
{extra}
"#
    )
}

#[test]
fn a_quiche_download_takes_the_time_the_path_allows_and_matches_quinn() {
    let quiche = run(&point(&download("quiche", "cubic", "2MB", "")), 1);
    let f = &quiche.flows[0];
    assert_eq!(f.error, None);
    assert_eq!(f.stack, "quiche");
    assert_eq!(f.bytes_delivered, 2_000_000);
    // 2 MB at 10 Mbit/s is 1.6 s of serialization (more with headers); the handshake, slow
    // start from 10 packets and the last byte's one-way delay add a few round trips.
    let done = f.completion_s.expect("the download completes");
    assert!((1.65..2.3).contains(&done), "completion {done} s");
    let hs = f.handshake_s.expect("handshake time");
    assert!(
        (0.04..0.1).contains(&hs),
        "handshake {hs} s: one round trip"
    );
    assert!(f.packets_sent.unwrap_or(0) > 1_400, "{:?}", f.packets_sent);
    // What quiche does not count is absent, not zero.
    assert_eq!(f.ack_frames_sent, None);
    assert_eq!(f.congestion_events, None);
    let quinn = run(&point(&download("quic", "cubic", "2MB", "")), 1);
    let q = quinn.flows[0].completion_s.expect("quinn completes");
    assert!(
        (done / q - 1.0).abs() < 0.15,
        "quiche {done} s against quinn {q} s on the same path"
    );
}

#[test]
fn quiche_runs_each_controller_and_bulk_in_both_directions() {
    for cc in ["newreno", "cubic", "quiche-bbr2"] {
        let r = run(&point(&download("quiche", cc, "1MB", "")), 2);
        let f = &r.flows[0];
        assert_eq!(f.error, None, "{cc}");
        assert_eq!(f.bytes_delivered, 1_000_000, "{cc}");
        let done = f.completion_s.unwrap_or(f64::NAN);
        assert!((0.8..1.6).contains(&done), "{cc}: completion {done} s");
        assert_eq!(f.config.as_ref().and_then(|c| c.cc.as_deref()), Some(cc));
    }
    for direction in ["up", "down"] {
        let toml = format!(
            r#"
[run]
duration = "4s"
[link]
rate = "10Mbit"
rtt = "40ms"
queue = "1bdp"
[[flow]]
stack = "quiche"
app = "bulk"
direction = "{direction}"
cc = "cubic"
stop = "3s"
"#
        );
        let r = run(&point(&toml), 3);
        let f = &r.flows[0];
        assert_eq!(f.error, None, "{direction}");
        // About 3 s at most of 10 Mbit/s: at least 70% of it arrives.
        let bytes = f.bytes_delivered as f64;
        assert!(
            (0.7 * 3.0 * 1.25e6..3.0 * 1.25e6).contains(&bytes),
            "bulk {direction}: {bytes} B"
        );
    }
}

#[test]
fn a_second_quiche_connection_resumes_with_zero_rtt() {
    let extra = "connections = 2\nzero_rtt = true";
    let r = run(&point(&download("quiche", "cubic", "20KB", extra)), 4);
    let f = &r.flows[0];
    assert_eq!(f.error, None);
    assert_eq!(f.connections.len(), 2);
    assert!(!f.connections[0].zero_rtt_accepted);
    assert!(f.connections[1].zero_rtt_accepted, "{:?}", f.connections[1]);
    // The 0-RTT request saves a round trip: the first byte arrives one RTT after the start.
    let ttfb = |i: usize| f.connections[i].time_to_first_byte_s.unwrap_or(f64::NAN);
    assert!(
        ttfb(1) < ttfb(0) - 0.03,
        "ttfb {} then {}",
        ttfb(0),
        ttfb(1)
    );
}

#[test]
fn quiche_runs_are_byte_identical_for_a_seed_whatever_the_thread() {
    let p = point(&download(
        "quiche",
        "cubic",
        "1MB",
        "[link.loss]\np = \"1%\"",
    ));
    let json = |r: &results::Run| serde_json::to_string(r).unwrap();
    let first = json(&run(&p, 7));
    assert_eq!(first, json(&run(&p, 7)), "a second run on this thread");
    // Two runs at once on two threads: each thread has its own virtual clock and generator.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| json(&run(&p, 7)));
        let b = s.spawn(|| json(&run(&p, 7)));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(first, a);
    assert_eq!(first, b);
    let r: results::Run = serde_json::from_str(&first).unwrap();
    assert!(
        r.flows[0].packets_lost.unwrap_or(0) > 0,
        "the run had losses"
    );
}

#[test]
fn quiche_pcaps_are_byte_identical_and_tshark_decrypts_them() {
    let tmp = fsutil::PrivateDir::new("quiclab-quiche-pcap-").unwrap();
    let p = point(&download("quiche", "cubic", "200KB", ""));
    let pcap = |name: &str| {
        let path = tmp.path().join(name);
        let opts = sim::RunOptions {
            pcap: Some(path.clone()),
            ..Default::default()
        };
        let r = run_with(&p, 5, &opts);
        assert_eq!(r.flows[0].bytes_delivered, 200_000);
        path
    };
    let (a, b) = (pcap("a.pcap"), pcap("b.pcap"));
    // qlogs asked for: none written, and the run says so.
    let qlog = tmp.path().join("qlog");
    std::fs::create_dir(&qlog).unwrap();
    let opts = sim::RunOptions {
        qlog_dir: Some(qlog.clone()),
        ..Default::default()
    };
    let r = run_with(&p, 5, &opts);
    assert!(
        r.warnings.iter().any(|w| w.contains("no qlog")),
        "{:?}",
        r.warnings
    );
    assert_eq!(std::fs::read_dir(&qlog).unwrap().count(), 0);
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    assert_eq!(bytes(&a), bytes(&b), "same seed, same datagrams");
    let keys = std::fs::read_to_string(tmp.path().join("a.pcap.keys")).unwrap();
    assert!(keys.contains("CLIENT_TRAFFIC_SECRET_0"), "{keys}");
    let keylog = format!(
        "tls.keylog_file:{}",
        tmp.path().join("a.pcap.keys").display()
    );
    let frames = common::tshark(&a, &["-o", &keylog], "quic.stream_data", "frame.number");
    assert!(
        frames.len() > 100,
        "tshark decrypted only {} STREAM frames",
        frames.len()
    );
    tmp.remove().unwrap();
}

#[test]
fn quiche_flows_share_a_bottleneck_with_quinn_and_stay_deterministic() {
    // Two quiche flows (one thread, a generator each) and a quinn flow on one 20 Mbit/s link.
    let toml = r#"
[run]
duration = "10s"
[link]
rate = "20Mbit"
rtt = "40ms"
queue = "1bdp"
[[flow]]
name = "quiche"
stack = "quiche"
count = 2
app = "download"
size = "3MB"
cc = "cubic"
[[flow]]
name = "quinn"
app = "download"
size = "3MB"
cc = "cubic"
"#;
    let p = point(toml);
    let r = run(&p, 11);
    assert_eq!(r.flows.len(), 3);
    let done: Vec<f64> = r
        .flows
        .iter()
        .map(|f| {
            assert_eq!(f.error, None, "{}", f.name);
            assert_eq!(f.bytes_delivered, 3_000_000, "{}", f.name);
            f.completion_s.unwrap_or(f64::NAN)
        })
        .collect();
    // 9 MB over 20 Mbit/s take at least 3.6 s together; no flow takes the link alone.
    let last = done.iter().cloned().fold(0.0, f64::max);
    assert!((3.6..6.0).contains(&last), "{done:?}");
    assert!(done.iter().all(|&d| d > 1.5), "{done:?}");
    let json = |r: &results::Run| serde_json::to_string(r).unwrap();
    assert_eq!(json(&r), json(&run(&p, 11)));
}
