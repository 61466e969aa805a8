//! HTTP/1.1 downloads over the TCP model: keep-alive connections without pipelining, opened
//! in parallel, compared with HTTP/2-style multiplexing on one connection.

mod tcp_support;

use std::time::Duration;

use tcp_support::{config, ms, pep, run, Dir, Net};
use transport::agent::{FlowAgent, FlowReport};
use transport::tcp::{HttpVersion, TcpFlow, TcpFlowConfig, TlsMode};
use transport::workload::Workload;

const LIMIT: Duration = Duration::from_secs(120);
/// Round trip of the long clean path.
const RTT: f64 = 0.200;

/// A download config; `http1_parallel`: HTTP/1.1 over that many connections, else HTTP/2.
fn dl(size: u64, streams: u32, connections: u32, http1_parallel: Option<u32>) -> TcpFlowConfig {
    let mut cfg = config(Workload::Download {
        size,
        streams,
        connections,
    });
    if let Some(k) = http1_parallel {
        cfg.knobs.http = HttpVersion::Http11;
        cfg.knobs.http1_connections = k;
    }
    cfg
}

fn completion(r: &FlowReport) -> f64 {
    r.connections[0].completion_s.expect("download completes")
}

/// Runs `w` on a clean 100 Mbit/s path with a 200 ms RTT.
fn long_path(cfg: TcpFlowConfig) -> (TcpFlow, FlowReport) {
    let (flow, r) = run(cfg, &mut Net::new(100_000_000, ms(100)), LIMIT);
    assert_eq!(r.error, None);
    (flow, r)
}

#[test]
fn one_keep_alive_connection_serializes_the_round_trips() {
    // Four 3 kB responses: all of them fit one initial window, so multiplexing needs a single
    // request round trip and HTTP/1.1 on one connection needs four.
    let (_, h2) = long_path(dl(12_000, 4, 1, None));
    let (flow, h1) = long_path(dl(12_000, 4, 1, Some(1)));
    assert_eq!((h2.bytes_delivered, h1.bytes_delivered), (12_000, 12_000));
    assert_eq!(h1.connections.len(), 1);
    let extra = (completion(&h1) - completion(&h2)) / RTT;
    assert!(
        (extra - 3.0).abs() < 0.25,
        "HTTP/1.1 takes {extra:.2} RTT more, want 3"
    );
    // The responses complete one round trip apart, in request order.
    let done: Vec<f64> = flow.response_completions()[0]
        .iter()
        .map(|d| d.expect("served").as_secs_f64())
        .collect();
    for w in done.windows(2) {
        assert!((w[1] - w[0] - RTT).abs() < 0.01, "{done:?}");
    }
    // The handshake and the first byte are those of a single exchange.
    let c = &h1.connections[0];
    assert!(
        c.handshake_s.is_some_and(|h| (h - RTT).abs() < 0.005),
        "{c:?}"
    );
    assert!(
        c.time_to_first_byte_s
            .is_some_and(|t| (t - 2.0 * RTT).abs() < 0.01),
        "{c:?}"
    );
}

#[test]
fn parallel_connections_come_close_to_multiplexing() {
    for size in [12_000, 400_000] {
        let (_, h2) = long_path(dl(size, 4, 1, None));
        let (flow, h1) = long_path(dl(size, 4, 1, Some(4)));
        assert_eq!((h2.bytes_delivered, h1.bytes_delivered), (size, size));
        let (t1, t2) = (completion(&h1), completion(&h2));
        if size < 14_480 {
            // Within one initial window both take one request round trip.
            assert!(
                (t1 - t2).abs() < 0.02,
                "{size} B: HTTP/1.1 ×4 {t1:.3} s vs multiplexed {t2:.3} s"
            );
        } else {
            // Four connections slow-start with four initial windows: never slower, and faster
            // here by whole round trips.
            assert!(
                t1 < t2 - RTT,
                "{size} B: HTTP/1.1 ×4 {t1:.3} s vs multiplexed {t2:.3} s"
            );
        }
        // One report per round, with the handshake of the first connection.
        assert_eq!(h1.connections.len(), 1);
        assert!(h1.connections[0]
            .handshake_s
            .is_some_and(|h| (h - RTT).abs() < 0.005));
        assert!(flow.response_completions()[0].iter().all(Option::is_some));
        assert!(flow.is_finished());
    }
    // More parallel connections than requests: only as many as there are requests open.
    let (_, r) = long_path(dl(12_000, 2, 1, Some(8)));
    assert_eq!(r.bytes_delivered, 12_000);
}

#[test]
fn a_loss_blocks_only_its_own_connection() {
    // 400 kB in four 100 kB responses on a 10 Mbit/s, 40 ms RTT path; connection 1 loses its
    // tenth data segment (the server's data flows down; connection 1 carries response 1).
    let lossy = || {
        let mut seen = 0u64;
        Net::new(10_000_000, ms(20)).dropping(move |s| {
            if s.dir != Dir::Down || s.seg.conn != 1 || s.seg.len == 0 {
                return false;
            }
            seen += 1;
            seen == 10
        })
    };
    let (flow, r) = run(dl(400_000, 4, 1, Some(4)), &mut lossy(), LIMIT);
    assert_eq!(r.error, None);
    assert_eq!(r.bytes_delivered, 400_000);
    assert!(r.packets_lost >= 1);
    let done: Vec<Duration> = flow.response_completions()[0]
        .iter()
        .map(|d| d.expect("served"))
        .collect();
    let last = done.iter().copied().max().expect("four responses");
    assert_eq!(
        done[1], last,
        "the response that lost a segment ends last: {done:?}"
    );
    for (i, d) in done.iter().enumerate().filter(|(i, _)| *i != 1) {
        assert!(
            *d + ms(10) < done[1],
            "response {i} waits for nobody else's loss: {done:?}"
        );
    }
    // Multiplexed, the same kind of loss early in the one stream holds back every response
    // behind it, so they all end together at the end of the stream.
    let mut seen = 0u64;
    let mut net = Net::new(10_000_000, ms(20)).dropping(move |s| {
        if s.dir != Dir::Down || s.seg.len == 0 {
            return false;
        }
        seen += 1;
        seen == 10
    });
    let (flow, r) = run(dl(400_000, 4, 1, None), &mut net, LIMIT);
    assert_eq!(r.bytes_delivered, 400_000);
    let h2: Vec<Duration> = flow.response_completions()[0]
        .iter()
        .map(|d| d.expect("served"))
        .collect();
    let spread = *h2.iter().max().expect("four") - *h2.iter().min().expect("four");
    assert!(
        spread < ms(60),
        "round-robin frames end the responses close together: {h2:?}"
    );
}

#[test]
fn rounds_reopen_their_parallel_connections() {
    let mut cfg = dl(300_001, 5, 2, Some(2));
    cfg.knobs.tls = TlsMode::Tls13;
    let (flow, r) = run(cfg, &mut Net::new(20_000_000, ms(20)), LIMIT);
    assert_eq!(r.error, None);
    assert_eq!(r.bytes_delivered, 600_002);
    assert_eq!(r.connections.len(), 2);
    let (a, b) = (&r.connections[0], &r.connections[1]);
    for c in [a, b] {
        // TLS 1.3 over TCP: two round trips before the first request.
        assert!(
            c.handshake_s.is_some_and(|h| (h - 0.080).abs() < 0.003),
            "{c:?}"
        );
        assert!(c.time_to_first_byte_s.is_some_and(|t| t > 0.12), "{c:?}");
    }
    let end_a = a.started_s + a.completion_s.expect("round 1 completes");
    assert!(
        b.started_s >= end_a - 1e-9,
        "round 2 starts after round 1: {r:?}"
    );
    assert!(
        (r.last_byte_s.expect("bytes") - (b.started_s + b.completion_s.expect("round 2"))).abs()
            < 1e-9
    );
    assert_eq!(flow.response_completions().len(), 2);
    assert!(flow
        .response_completions()
        .iter()
        .flatten()
        .all(Option::is_some));
}

#[test]
fn tiny_and_degenerate_request_patterns_complete() {
    // Zero-byte responses, zero streams and zero parallel connections are taken as 1.
    for (size, streams, k) in [(2, 4, 3), (0, 1, 1), (5_000, 0, 0), (7, 3, 5)] {
        let (flow, r) = run(
            dl(size, streams, 1, Some(k)),
            &mut Net::new(10_000_000, ms(20)),
            LIMIT,
        );
        assert_eq!(r.error, None);
        assert!(flow.is_finished(), "{size} {streams} {k}");
        assert_eq!(r.bytes_delivered, size, "{size} {streams} {k}");
    }
}

#[test]
fn each_parallel_connection_gets_its_own_pep_legs() {
    let mut cfg = dl(300_000, 6, 2, Some(3));
    cfg.knobs.tls = TlsMode::Tls12;
    cfg.pep = Some(pep(1 << 20));
    let (flow, r) = run(cfg, &mut Net::split(20_000_000, ms(5), ms(100)), LIMIT);
    assert_eq!(r.error, None);
    assert_eq!(r.bytes_delivered, 600_000);
    assert_eq!(r.connections.len(), 2);
    // Every round's connections pay the same: the TCP handshake with the PEP 10 ms away, the
    // PEP's own handshake across the 200 ms leg, then two TLS 1.2 round trips end to end.
    for c in &r.connections {
        assert!(
            c.handshake_s.is_some_and(|h| (h - 0.623).abs() < 0.01),
            "{c:?}"
        );
        assert!(c.completion_s.is_some(), "{c:?}");
    }
    assert!(flow.pep_max_held().downstream > 0);
}

#[test]
fn random_loss_is_survived_and_runs_are_deterministic() {
    let go = |seed: u64| {
        let mut cfg = dl(300_000, 5, 2, Some(3));
        cfg.knobs.tls = [TlsMode::None, TlsMode::Tls12, TlsMode::Tls13][(seed % 3) as usize];
        cfg.knobs.sack = seed.is_multiple_of(2);
        let mut net = Net::new(10_000_000, ms(20)).chaotic(seed, 0.05, 0.02, ms(5));
        let (flow, r) = run(cfg, &mut net, Duration::from_secs(600));
        assert_eq!(r.error, None, "seed {seed}");
        assert!(flow.is_finished(), "seed {seed}");
        assert_eq!(r.bytes_delivered, 600_000, "seed {seed}");
        assert!(r.packets_lost > 0, "seed {seed}");
        format!("{r:?} {:?}", flow.response_completions())
    };
    for seed in 0..6 {
        assert_eq!(go(seed), go(seed), "seed {seed}");
    }
}
