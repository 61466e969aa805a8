//! End-to-end engine behaviour on small scenarios.

mod common;
use common::*;
use scenario::model::{FlowTransport, Workload};

#[test]
fn download_completes_and_reports_timings() {
    let s = dumbbell(
        10_000_000,
        ms(15),
        25,
        vec![flow(
            "d",
            Workload::Download {
                size: 1_000_000,
                streams: 1,
                connections: 1,
            },
        )],
        ms(20_000),
    );
    let r = run(&s, 1);
    let f = &r.flows[0];
    assert_eq!(f.error, None);
    assert_eq!(f.bytes_delivered, 1_000_000);
    let hs = f.handshake_s.expect("handshake");
    assert!((0.030..0.040).contains(&hs), "1 RTT handshake, got {hs}");
    let c = f.completion_s.expect("completed");
    // 1 MB at 10 Mbit/s is at least 0.8 s plus slow start.
    assert!(c > 0.8 && c < 3.0, "completion {c}");
}

#[test]
fn same_seed_same_json_different_seed_differs() {
    let mut fl = flow("b", Workload::Bulk { upload: true });
    fl.stop = Some(ms(2_000));
    let mut s = dumbbell(10_000_000, ms(10), 20, vec![fl], ms(3_000));
    s.bottleneck.up.loss = netem::config::LossConfig::Bernoulli { p: 0.01 };
    let a = serde_json::to_string(&run(&s, 7)).unwrap();
    let b = serde_json::to_string(&run(&s, 7)).unwrap();
    let c = serde_json::to_string(&run(&s, 8)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn zero_rtt_second_connection_saves_a_round_trip() {
    let mut f = flow(
        "z",
        Workload::Download {
            size: 20_000,
            streams: 1,
            connections: 2,
        },
    );
    f.quic_mut().expect("a quic flow").common.zero_rtt = true;
    let s = dumbbell(10_000_000, ms(50), 100, vec![f], ms(10_000));
    let r = run(&s, 5);
    let c = &r.flows[0].connections;
    assert_eq!(c.len(), 2);
    assert!(!c[0].zero_rtt_accepted);
    assert!(
        c[1].zero_rtt_accepted,
        "second connection resumes with 0-RTT"
    );
    // 100 ms RTT: the request rides in the first flight, so the first byte comes one RTT sooner.
    let (f1, f2) = (
        c[0].time_to_first_byte_s.unwrap(),
        c[1].time_to_first_byte_s.unwrap(),
    );
    assert!(
        f1 - f2 > 0.095 && f1 - f2 < 0.105,
        "TTFB 1-RTT {f1} vs 0-RTT {f2}"
    );
    assert!(c[1].completion_s.unwrap() < c[0].completion_s.unwrap());
}

/// The resumed (second) connection of a 0-RTT 100 kB page at 100 ms RTT.
fn zero_rtt_page(address_token: bool) -> results::Connection {
    let mut f = flow(
        "z",
        Workload::Download {
            size: 100_000,
            streams: 1,
            connections: 2,
        },
    );
    f.quic_mut().expect("a quic flow").common.zero_rtt = true;
    f.quic_mut().expect("a quic flow").common.address_token = address_token;
    let s = dumbbell(10_000_000, ms(50), 100, vec![f], ms(10_000));
    let r = run(&s, 5);
    let f = &r.flows[0];
    assert_eq!(f.error, None);
    assert_eq!(
        f.config.as_ref().and_then(|c| c.address_token),
        Some(address_token)
    );
    assert!(f.connections[1].zero_rtt_accepted);
    f.connections[1].clone()
}

#[test]
fn an_address_token_saves_a_round_trip_on_a_zero_rtt_page() {
    // Without a token the server may send 3 × the ~1.5 kB it received before the client's
    // Handshake packet validates its address half an RTT later: three datagrams of the page,
    // then the rest. With the first connection's NEW_TOKEN the whole initial window goes at
    // once, and the page completes about half an RTT (here 42 ms of 100) sooner.
    let (with, without) = (zero_rtt_page(true), zero_rtt_page(false));
    let (a, b) = (with.completion_s.unwrap(), without.completion_s.unwrap());
    assert!(b - a > 0.035, "with a token {a} s, without {b} s");
    for c in [&with, &without] {
        assert_eq!(c.bytes_delivered, Some(100_000));
        let g = c.goodput_bps.expect("goodput");
        assert!((g - 800_000.0 / c.completion_s.unwrap()).abs() < 1e-6);
    }
}

#[test]
fn small_zero_rtt_downloads_close_cleanly_on_every_connection() {
    // With a 1-byte response the client has it all before the handshake is confirmed and
    // closes at once; the server saw that close as an error, which stopped the flow before
    // its third connection.
    for connections in [3, 5] {
        let mut f = flow(
            "z",
            Workload::Download {
                size: 1,
                streams: 1,
                connections,
            },
        );
        f.quic_mut().expect("a quic flow").common.zero_rtt = true;
        let s = dumbbell(10_000_000, ms(10), 100, vec![f], ms(5_000));
        let r = run(&s, 5);
        let f = &r.flows[0];
        assert_eq!(f.error, None, "{connections} connections");
        assert_eq!(f.connections.len(), connections as usize);
        assert!(
            f.connections.iter().all(|c| c.completion_s.is_some()),
            "{:?}",
            f.connections
        );
        if connections == 3 {
            // The first connection brings two session tickets; each later one uses one.
            // (Closing before the handshake is confirmed, the 0-RTT connections get none, so
            // a fourth would start without 0-RTT, as a real client's would.)
            assert!(f.connections[1..].iter().all(|c| c.zero_rtt_accepted));
        }
        assert_eq!(f.bytes_delivered, u64::from(connections));
    }
}

#[test]
fn several_streams_share_one_download() {
    let s = dumbbell(
        10_000_000,
        ms(10),
        25,
        vec![flow(
            "m",
            Workload::Download {
                size: 1_000_000,
                streams: 8,
                connections: 1,
            },
        )],
        ms(10_000),
    );
    let r = run(&s, 2);
    assert_eq!(r.flows[0].bytes_delivered, 1_000_000);
    assert!(r.flows[0].completion_s.is_some());
}

#[test]
fn cross_traffic_and_corruption_are_counted() {
    let mut fl = flow("b", Workload::Bulk { upload: false });
    fl.stop = Some(ms(1_500));
    let mut s = dumbbell(10_000_000, ms(10), 25, vec![fl], ms(2_000));
    s.bottleneck.down.corrupt = 0.02;
    s.cross.push(scenario::model::CrossSpec {
        name: "cbr".into(),
        up: false,
        start: ms(0),
        stop: None,
        pattern: scenario::model::CrossPattern::Cbr {
            rate_bps: 1_000_000,
            payload: 972,
        },
    });
    let r = run(&s, 9);
    let down = &r.links["bottleneck_down"];
    assert!(down.corrupted_packets > 10);
    assert!(
        r.flows[0].packets_lost > Some(0),
        "corrupted packets are lost to QUIC"
    );
    // 1 Mbit/s of 1000-byte IP packets = 125 per second until the run ends (the flow stopped).
    let expected = (r.end_s * 125.0).ceil() as u64;
    assert!(
        r.cross[0].sent_packets.abs_diff(expected) <= 1,
        "{} vs {expected}",
        r.cross[0].sent_packets
    );
}

#[test]
fn a_quic_error_is_recorded_not_a_crash() {
    // Invalid knob: QUIC cannot run with an IP MTU below 1228.
    let mut f = flow("bad", Workload::Bulk { upload: true });
    f.quic_mut().expect("a quic flow").mtu = 1000;
    let s = dumbbell(10_000_000, ms(10), 25, vec![f], ms(1_000));
    let point = scenario::model::SweepPoint {
        axes: vec![],
        scenario: s,
    };
    let err = sim::run(
        &point,
        &scenario::model::RunSpec {
            id: "x".into(),
            point: 0,
            rep: 0,
            seed: 1,
        },
        &Default::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("1200"), "{err}");
}

#[test]
fn sampling_beyond_the_limits_is_refused_before_the_run() {
    // Scenarios built in code skip the parser's check: 1 ns samples over 1 s never finished.
    let mut s = dumbbell(
        10_000_000,
        ms(10),
        25,
        vec![flow("b", Workload::Bulk { upload: true })],
        ms(1_000),
    );
    s.sample_interval = std::time::Duration::from_nanos(1);
    let point = scenario::model::SweepPoint {
        axes: vec![],
        scenario: s.clone(),
    };
    let spec = scenario::model::RunSpec {
        id: "x".into(),
        point: 0,
        rep: 0,
        seed: 1,
    };
    let err = sim::run(&point, &spec, &Default::default()).unwrap_err();
    assert!(err.to_string().contains("samples per run"), "{err}");
    // Within the sample cap, but 11 flows × 100,000 samples of series rows are too many.
    let mut many = s;
    many.sample_interval = std::time::Duration::from_micros(10);
    many.flows = (0..11)
        .map(|i| flow(&format!("b{i}"), Workload::Bulk { upload: true }))
        .collect();
    let point = scenario::model::SweepPoint {
        axes: vec![],
        scenario: many,
    };
    let opts = sim::RunOptions {
        series: true,
        ..Default::default()
    };
    let err = sim::run(&point, &spec, &opts).unwrap_err();
    assert!(err.to_string().contains("--no-series"), "{err}");
}

fn tcp_download(size: u64, streams: u32) -> scenario::model::FlowSpec {
    let f = flow(
        "t",
        Workload::Download {
            size,
            streams,
            connections: 1,
        },
    );
    scenario::builder::on_stack(f, scenario::model::Stack::Tcp)
}

#[test]
fn tcp_http1_parallel_connections_deliver_the_page() {
    let mut f = tcp_download(400_000, 8);
    f.tcp_mut().expect("a tcp flow").http = scenario::model::HttpVersion::Http11;
    f.tcp_mut().expect("a tcp flow").http1_connections = 4;
    let r = run(&dumbbell(10_000_000, ms(50), 100, vec![f], ms(30_000)), 4);
    assert_eq!(r.flows[0].error, None);
    assert_eq!(r.flows[0].bytes_delivered, 400_000);
    assert!(r.flows[0].completion_s.is_some());
}

#[test]
fn a_gateway_pep_splits_the_connection_across_the_engine() {
    // 600 ms RTT satellite hop; the server 10 ms behind the gateway.
    let mut base = tcp_download(1_000_000, 1);
    base.server_access.up.delay = ms(5);
    base.server_access.down.delay = ms(5);
    let mut with_pep = base.clone();
    let mut cc = our_cubic();
    if let congestion::config::CcConfig::Cubic { common, .. } = &mut cc {
        common.initial_window_packets = 100;
    }
    let FlowTransport::Tcp { pep, .. } = &mut with_pep.transport else {
        panic!("a TCP flow")
    };
    *pep = Some(scenario::model::PepSpec {
        position: scenario::model::PepPosition::ServerSide,
        buffer: 4 << 20,
        cc,
        receive_window_max: 16 << 20,
        send_buffer: 16 << 20,
    });
    let end_to_end = run(
        &dumbbell(20_000_000, ms(295), 1000, vec![base], ms(60_000)),
        1,
    );
    let split = run(
        &dumbbell(20_000_000, ms(295), 1000, vec![with_pep], ms(60_000)),
        1,
    );
    for r in [&end_to_end, &split] {
        assert_eq!(r.flows[0].error, None);
        assert_eq!(r.flows[0].bytes_delivered, 1_000_000);
    }
    let (a, b) = (
        end_to_end.flows[0].completion_s.unwrap(),
        split.flows[0].completion_s.unwrap(),
    );
    assert!(b < a - 0.5, "PEP {b} s vs end to end {a} s");
}

fn our_cubic() -> congestion::config::CcConfig {
    match scenario::builder::cubic_hystart() {
        scenario::model::CcChoice::Ours(c) => c,
        _ => unreachable!("cubic_hystart is ours"),
    }
}

#[test]
fn flow_level_timings_of_a_multi_connection_download_describe_the_whole_flow() {
    // Regression: the flow's `ttfb_s` came from the first connection, `completion_s` from the
    // last (measured from *its* first packet) and `goodput_bps` from the whole flow. Every
    // flow-level time is now measured from the flow's first packet: handshake and first byte
    // of the first connection, completion = last byte of the last connection.
    for stack in [scenario::model::Stack::Quic, scenario::model::Stack::Tcp] {
        let f = flow(
            "z",
            Workload::Download {
                size: 200_000,
                streams: 1,
                connections: 2,
            },
        );
        let f = scenario::builder::on_stack(f, stack);
        let s = dumbbell(10_000_000, ms(20), 100, vec![f], ms(10_000));
        let r = run(&s, 3);
        let f = &r.flows[0];
        let c = &f.connections;
        assert_eq!(f.error, None, "{stack:?}");
        assert_eq!(c.len(), 2, "{stack:?}");
        assert!(c[1].started_s > c[0].started_s);
        assert_eq!(f.handshake_s, c[0].handshake_s, "{stack:?}");
        assert_eq!(f.ttfb_s, c[0].time_to_first_byte_s, "{stack:?}");
        let whole = c[1].started_s - c[0].started_s + c[1].completion_s.unwrap();
        let got = f.completion_s.unwrap();
        assert!(
            (got - whole).abs() < 1e-9,
            "{stack:?}: completion {got} s, whole flow {whole} s ({c:?})"
        );
        let goodput = f.goodput_bps.unwrap();
        let expect = f.bytes_delivered as f64 * 8.0 / got;
        assert!(
            (goodput - expect).abs() <= 1e-6 * expect,
            "{stack:?}: goodput {goodput} vs bytes over completion {expect}"
        );
    }
}

#[test]
fn fairness_of_two_bulk_flows_over_the_measurement_window() {
    // Regression: Jain's index per run and per sample bin, and each flow's share, in results.
    let mut a = flow("a", Workload::Bulk { upload: false });
    a.stop = Some(ms(4_000));
    let mut b = flow("b", Workload::Bulk { upload: false });
    b.stop = Some(ms(4_000));
    let mut s = dumbbell(10_000_000, ms(10), 50, vec![a, b.clone()], ms(5_000));
    s.measure_from = ms(1_000);
    s.measure_until = Some(ms(4_000));
    let r = run(&s, 1);
    let fair = r.fairness.clone().expect("two flows have a fairness index");
    let w: Vec<f64> = r
        .flows
        .iter()
        .map(|f| f.window_goodput_bps.unwrap())
        .collect();
    let jain = (w[0] + w[1]).powi(2) / (2.0 * (w[0] * w[0] + w[1] * w[1]));
    assert!(
        (fair.jain.unwrap() - jain).abs() < 1e-12,
        "{fair:?} vs {jain}"
    );
    assert!(fair.jain.unwrap() > 0.5 && fair.jain.unwrap() <= 1.0);
    // Every sample bin ending inside the window (1 s, 4 s] where some flow delivered data
    // (the run ends when both stop at 4 s, so the last bin ends at 3.9 s).
    let mut ends: Vec<f64> = r
        .series
        .iter()
        .filter(|x| x.t_s > 1.0 && x.t_s <= 4.0 && x.goodput_bps > 0.0)
        .map(|x| x.t_s)
        .collect();
    ends.dedup();
    assert!(ends.len() >= 25, "{ends:?}");
    assert_eq!(fair.bins, Some(ends.len() as u64), "{fair:?}");
    let (mean, min) = (fair.jain_bins_mean.unwrap(), fair.jain_bins_min.unwrap());
    assert!(min <= mean && mean <= 1.0 && min >= 0.5, "{fair:?}");
    let shares: Vec<f64> = r.flows.iter().map(|f| f.share.unwrap()).collect();
    assert!((shares[0] + shares[1] - 1.0).abs() < 1e-12, "{shares:?}");
    assert!((shares[0] - w[0] / (w[0] + w[1])).abs() < 1e-12);

    // One flow: no fairness and no share.
    let one = dumbbell(10_000_000, ms(10), 50, vec![b], ms(5_000));
    let r = run(&one, 1);
    assert_eq!(r.fairness, None);
    assert_eq!(r.flows[0].share, None);
}
