//! Receiver flow control with a slow reader: the window closes on unread data, a read
//! reopens it with a window update, and the persist timer's zero-window probes recover a
//! lost update.

mod tcp_support;

use std::time::Duration;

use tcp_support::{config, download, ms, Dir, Net};
use transport::agent::{FlowAgent, Side};
use transport::tcp::TcpFlow;

const WINDOW: u64 = 64 * 1024;
/// Sequence number after the first window of response data (the SYN took 0).
const STALL_SEQ: u64 = 1 + WINDOW;

/// A 1 MB download whose client reads nothing until `resume` (if ever).
fn stalled(net: &mut Net, resume: Option<Duration>) -> TcpFlow {
    let mut flow = TcpFlow::new(config(download(1_000_000))).expect("valid");
    flow.pause_reading(Side::Client);
    if let Some(t) = resume {
        net.run(&mut flow, t);
        flow.resume_reading(Side::Client, t);
    }
    net.run(&mut flow, Duration::from_secs(60));
    flow
}

/// Highest sequence number the server's data reached on the wire.
fn data_edge(net: &Net) -> u64 {
    net.seen(0, Dir::Down)
        .iter()
        .map(|(_, s)| s.seq + u64::from(s.len))
        .max()
        .unwrap_or(0)
}

#[test]
fn a_reader_that_reads_nothing_stalls_the_sender_at_exactly_the_receive_window() {
    let mut net = Net::new(10_000_000, ms(20)).traced();
    let mut flow = TcpFlow::new(config(download(1_000_000))).expect("valid");
    flow.pause_reading(Side::Client);
    net.run(&mut flow, Duration::from_secs(20));
    let r = flow.report();
    assert_eq!(r.bytes_delivered, 0);
    assert_eq!(
        data_edge(&net),
        STALL_SEQ,
        "exactly one receive window of data"
    );
    assert!(!flow.is_finished());
    assert_eq!(r.error, None);
    // Probes are no losses and no congestion signal.
    assert_eq!((r.packets_lost, r.congestion_events), (0, 0));
    // Zero-window probes: bare segments one below the acknowledged data, with the RTO's
    // backoff between them.
    let probes: Vec<Duration> = net
        .seen(0, Dir::Down)
        .iter()
        .filter(|(_, s)| s.len == 0 && s.seq == STALL_SEQ - 1)
        .map(|(t, _)| *t)
        .collect();
    assert!(probes.len() >= 4, "probes at {probes:?}");
    for w in probes.windows(3) {
        let (a, b) = (w[1] - w[0], w[2] - w[1]);
        assert!(
            b.as_secs_f64() > 1.9 * a.as_secs_f64() && b.as_secs_f64() < 2.1 * a.as_secs_f64(),
            "backoff {a:?} → {b:?}"
        );
    }
    // Every probe is answered with the (still zero) window.
    let zero_acks = net
        .seen(0, Dir::Up)
        .iter()
        .filter(|(_, s)| s.ack == STALL_SEQ && s.window == 0)
        .count();
    assert!(
        zero_acks > probes.len(),
        "{zero_acks} zero-window ACKs for {} probes",
        probes.len()
    );
}

#[test]
fn reading_again_resumes_the_transfer_with_a_window_update() {
    let resume = Duration::from_secs(2);
    let mut net = Net::new(10_000_000, ms(20)).traced();
    let flow = stalled(&mut net, Some(resume));
    let r = flow.report();
    assert_eq!(r.bytes_delivered, 1_000_000);
    assert_eq!((r.packets_lost, r.congestion_events), (0, 0));
    // The read announces itself at once: a pure ACK opening the window at the resume.
    let update = net
        .seen(0, Dir::Up)
        .into_iter()
        .find(|(t, s)| *t >= resume && s.window > 0);
    assert_eq!(update.map(|(t, s)| (t, s.ack)), Some((resume, STALL_SEQ)));
    // New data follows one round trip later, not at the next probe.
    let next_data = net
        .seen(0, Dir::Down)
        .into_iter()
        .find(|(_, s)| s.seq == STALL_SEQ && s.len > 0);
    let t = next_data
        .map(|(t, _)| t.as_secs_f64())
        .expect("transfer resumed");
    assert!(t > 2.0 && t < 2.025, "new data at {t}");
    // About 0.8 s of transfer remains (1 MB at 10 Mbit/s after a window).
    let done = r.connections[0].completion_s.expect("completes");
    assert!(done < 3.2, "completion {done}");
}

#[test]
fn a_lost_window_update_is_recovered_by_a_persist_probe() {
    let resume = Duration::from_secs(2);
    let mut dropped = 0;
    let mut net = Net::new(10_000_000, ms(20)).traced().dropping(move |s| {
        let update = s.dir == Dir::Up && s.seg.ack == STALL_SEQ && s.seg.window > 0;
        dropped += u32::from(update);
        update && dropped == 1
    });
    let flow = stalled(&mut net, Some(resume));
    let r = flow.report();
    assert_eq!(net.dropped, 1);
    assert_eq!(r.bytes_delivered, 1_000_000);
    assert_eq!(
        (r.packets_lost, r.congestion_events),
        (0, 0),
        "a probe is not a retransmission"
    );
    // The transfer resumed only after a probe drew the open window out of the client.
    let probe = net
        .seen(0, Dir::Down)
        .into_iter()
        .find(|(t, s)| *t > resume && s.len == 0 && s.seq == STALL_SEQ - 1);
    let probe_t = probe
        .map(|(t, _)| t)
        .expect("a probe after the lost update");
    let next_data = net
        .seen(0, Dir::Down)
        .into_iter()
        .find(|(_, s)| s.seq == STALL_SEQ && s.len > 0);
    let t = next_data.map(|(t, _)| t).expect("transfer resumed");
    assert!(
        t > probe_t && t < probe_t + ms(45),
        "probe at {probe_t:?}, new data at {t:?}"
    );
}
