//! A split-connection PEP inside `TcpFlow`: the client's connection ends at the PEP, which
//! relays the bytes over its own connection to the server.

mod tcp_support;

use std::time::Duration;

use tcp_support::{config, cubic, download, ms, pep, run, Dir, Net};
use transport::agent::{FlowAgent, FlowReport, Side};
use transport::tcp::segment::{Segment, ACK, FIN, RST, SYN};
use transport::tcp::{TcpFlow, TcpFlowConfig, TlsMode};
use transport::workload::Workload;

const LIMIT: Duration = Duration::from_secs(120);
/// Link next to the client, and next to the server.
const CLIENT_LINK: usize = 0;
const SERVER_LINK: usize = 1;

fn completion(r: &FlowReport) -> f64 {
    r.connections[0].completion_s.expect("download completes")
}

/// A 100 kB TLS 1.3 download over client —300 ms— middle —5 ms— server, with and without
/// a PEP in the middle running `controller`; returns (end to end, split) completion times.
fn far_end(pep_iw: u64) -> (f64, f64) {
    let mut cfg = config(download(100_000));
    cfg.knobs.tls = TlsMode::Tls13;
    let (_, e2e) = run(
        cfg.clone(),
        &mut Net::split(10_000_000, ms(300), ms(5)),
        LIMIT,
    );
    let mut p = pep(1 << 20);
    p.cc = cubic(pep_iw);
    cfg.pep = Some(p);
    let (_, split) = run(cfg, &mut Net::split(10_000_000, ms(300), ms(5)), LIMIT);
    assert_eq!(
        (e2e.bytes_delivered, split.bytes_delivered),
        (100_000, 100_000)
    );
    (completion(&e2e), completion(&split))
}

#[test]
fn a_pep_at_the_far_end_of_a_long_link_speeds_up_a_download() {
    // With the same controller the long leg's slow start is clocked by the same 600 ms RTT
    // as end to end; the split saves only the short leg.
    let (e2e, same) = far_end(10);
    assert!(
        same < e2e && e2e - same < 0.05,
        "same controller: {same:.3} s vs {e2e:.3} s"
    );
    // What a satellite PEP buys: its own (larger) initial window on the long leg, without
    // touching the server, while the server's leg finishes in a few 10 ms round trips.
    let (e2e, big) = far_end(100);
    assert!(big < 0.8 * e2e, "split {big:.3} s vs end to end {e2e:.3} s");
}

#[test]
fn the_client_shakes_hands_with_a_pep_near_it() {
    // client —5 ms— PEP —300 ms— server.
    let go = |tls: TlsMode, with_pep: bool| {
        let mut cfg = config(Workload::Download {
            size: 20_000,
            streams: 1,
            connections: 2,
        });
        cfg.knobs.tls = tls;
        cfg.pep = with_pep.then(|| pep(1 << 20));
        let (_, r) = run(cfg, &mut Net::split(100_000_000, ms(5), ms(300)), LIMIT);
        assert_eq!(r.bytes_delivered, 40_000);
        assert_eq!(r.connections.len(), 2);
        r.connections
            .iter()
            .map(|c| c.handshake_s.expect("handshake"))
            .collect::<Vec<_>>()
    };
    let near = |got: f64, want: f64| (got - want).abs() < 0.003;
    // Plain TCP: the handshake is the one with the PEP, for every sequential connection.
    assert!(go(TlsMode::None, false).iter().all(|&h| near(h, 0.610)));
    assert!(
        go(TlsMode::None, true).iter().all(|&h| near(h, 0.010)),
        "{:?}",
        go(TlsMode::None, true)
    );
    // TLS stays end to end: the ClientHello waits at the PEP for its connection to the
    // server (started by the client's SYN), then takes the long round trip. So TLS 1.3
    // costs about what it costs end to end.
    let e2e = go(TlsMode::Tls13, false);
    let split = go(TlsMode::Tls13, true);
    for (e, s) in e2e.iter().zip(&split) {
        assert!(
            near(*e, 1.220) && near(*s, 0.010 + 1.200),
            "TLS 1.3: {e} s end to end, {s} s split"
        );
    }
}

/// Data segments on `link` going down, and how many of them repeat a sequence number.
fn repeats(net: &Net, link: usize) -> (usize, usize) {
    let data: Vec<u64> = net
        .seen(link, Dir::Down)
        .iter()
        .filter(|(_, s)| s.len > 0)
        .map(|(_, s)| s.seq)
        .collect();
    let mut unique = data.clone();
    unique.sort_unstable();
    unique.dedup();
    (data.len(), data.len() - unique.len())
}

#[test]
fn a_loss_is_repaired_on_its_own_leg() {
    for lossy in [SERVER_LINK, CLIENT_LINK] {
        let mut cfg = config(download(300_000));
        cfg.pep = Some(pep(1 << 20));
        let mut net = Net::split(10_000_000, ms(20), ms(20))
            .traced()
            .dropping(move |s| s.link == lossy && s.dir == Dir::Down && s.data_index == Some(30));
        let (_, r) = run(cfg, &mut net, LIMIT);
        assert_eq!(r.bytes_delivered, 300_000);
        assert_eq!(
            r.packets_lost, 1,
            "link {lossy}: the PEP's retransmissions count too"
        );
        let (sent, repeated) = repeats(&net, lossy);
        assert!(
            sent > 200 && repeated == 1,
            "link {lossy}: {sent} data segments, {repeated} repeated"
        );
        let (sent, repeated) = repeats(&net, 1 - lossy);
        assert!(
            sent > 200 && repeated == 0,
            "the other leg never sees a retransmission"
        );
    }
}

#[test]
fn the_pep_never_holds_more_than_its_buffer() {
    const BUFFER: u64 = 40_000;
    // Download: a fast server leg feeds a slow long leg to the client.
    let mut cfg = config(download(1_000_000));
    cfg.pep = Some(pep(BUFFER));
    let (flow, r) = run(cfg, &mut Net::split(10_000_000, ms(150), ms(5)), LIMIT);
    assert_eq!(r.bytes_delivered, 1_000_000);
    let held = flow.pep_max_held();
    // Full, but never beyond: the server leg's window closed instead.
    assert!(
        held.downstream <= BUFFER && held.downstream > BUFFER - 1448,
        "{held:?}"
    );
    // What the PEP holds includes the client leg's unacknowledged data, so the buffer caps
    // that leg's flight: at most BUFFER per 300 ms round trip.
    let t = completion(&r);
    let cap = BUFFER as f64 / 0.3;
    assert!(
        t > 1_000_000.0 / cap && t < 1.3 * 1_000_000.0 / cap,
        "completion {t} s"
    );

    // Upload: a fast client leg feeds a slow long leg to the server; the client's stop
    // resets both legs.
    let mut cfg = config(Workload::Bulk { upload: true });
    cfg.plan.stop = Some(Duration::from_secs(4));
    cfg.pep = Some(pep(BUFFER));
    let mut net = Net::split(10_000_000, ms(5), ms(150)).traced();
    net.until_idle = true;
    let (flow, r) = run(cfg, &mut net, LIMIT);
    assert!(flow.is_finished());
    assert_eq!(r.error, None);
    let held = flow.pep_max_held();
    assert!(
        held.upstream <= BUFFER && held.upstream > BUFFER - 1448,
        "{held:?}"
    );
    // Again BUFFER per 300 ms round trip of the server leg, for most of the 4 s.
    assert!(
        r.bytes_delivered > 400_000 && r.bytes_delivered < 540_000,
        "{}",
        r.bytes_delivered
    );
    let resets = |link| {
        net.seen(link, Dir::Up)
            .iter()
            .filter(|(_, s)| s.has(RST))
            .count()
    };
    assert_eq!(
        (resets(CLIENT_LINK), resets(SERVER_LINK)),
        (1, 1),
        "the reset crosses the PEP"
    );
}

#[test]
fn fins_cross_the_pep_after_the_data() {
    let mut cfg = config(Workload::Download {
        size: 200_000,
        streams: 2,
        connections: 2,
    });
    cfg.knobs.tls = TlsMode::Tls12;
    cfg.pep = Some(pep(30_000));
    let mut net = Net::split(10_000_000, ms(20), ms(10)).traced();
    net.until_idle = true;
    let (flow, r) = run(cfg, &mut net, LIMIT);
    assert_eq!(r.bytes_delivered, 400_000);
    assert_eq!(r.error, None);
    assert!(flow.is_finished());
    for link in [CLIENT_LINK, SERVER_LINK] {
        for dir in [Dir::Up, Dir::Down] {
            let segs = net.seen(link, dir);
            for conn in 0..2 {
                let of_conn = |s: &&(Duration, Segment)| s.1.conn == conn;
                let fin = segs
                    .iter()
                    .filter(of_conn)
                    .find(|(_, s)| s.has(FIN))
                    .map(|(_, s)| s.seq);
                let data_end = segs
                    .iter()
                    .filter(of_conn)
                    .filter(|(_, s)| s.len > 0)
                    .map(|(_, s)| s.seq + u64::from(s.len))
                    .max();
                assert!(
                    fin.is_some() && fin == data_end,
                    "link {link} {dir:?} conn {conn}: FIN {fin:?}, data end {data_end:?}"
                );
            }
        }
    }
    // Both legs of a connection carry the client's connection number (same 4-tuple).
    let syns = |link| {
        net.seen(link, Dir::Up)
            .iter()
            .filter(|(_, s)| s.has(SYN) && !s.has(ACK))
            .map(|(_, s)| s.conn)
            .collect::<Vec<_>>()
    };
    assert_eq!(syns(CLIENT_LINK), vec![0, 1]);
    assert_eq!(syns(SERVER_LINK), vec![0, 1]);
}

fn chaotic(seed: u64) -> (TcpFlow, FlowReport) {
    let mut cfg: TcpFlowConfig = config(Workload::Download {
        size: 300_000,
        streams: 3,
        connections: 2,
    });
    cfg.knobs.tls = [TlsMode::None, TlsMode::Tls12, TlsMode::Tls13][(seed % 3) as usize];
    cfg.knobs.sack = seed.is_multiple_of(2);
    cfg.knobs.timestamps = seed % 4 < 2;
    cfg.pep = Some(pep(50_000));
    let mut net = Net::split(10_000_000, ms(40), ms(10)).chaotic(seed, 0.03, 0.02, ms(5));
    run(cfg, &mut net, Duration::from_secs(600))
}

#[test]
fn random_loss_duplication_and_reordering_on_both_legs_are_survived_deterministically() {
    for seed in 0..8u64 {
        let (flow, r) = chaotic(seed);
        assert_eq!(r.error, None, "seed {seed}");
        assert!(flow.is_finished(), "seed {seed}: {r:?}");
        assert_eq!(r.bytes_delivered, 600_000, "seed {seed}");
        assert!(r.connections.iter().all(|c| c.completion_s.is_some()));
        assert!(r.packets_lost > 0, "seed {seed}");
        let held = flow.pep_max_held();
        assert!(
            held.downstream <= 50_000 && held.upstream <= 50_000,
            "seed {seed}: {held:?}"
        );
        let (again, r2) = chaotic(seed);
        assert_eq!(format!("{r:?}"), format!("{r2:?}"), "seed {seed}");
        assert_eq!(held, again.pep_max_held());
    }
}

#[test]
fn the_middle_ignores_what_it_cannot_place() {
    let mut cfg = config(download(10_000));
    cfg.pep = Some(pep(10_000));
    let mut flow = TcpFlow::new(cfg).expect("valid");
    flow.handle_timeout(Side::Client, Duration::ZERO);
    let syn = flow
        .poll_transmit(Side::Client, Duration::ZERO)
        .expect("SYN");
    assert_eq!(syn.to, Side::Middle);
    // Garbage, a SYN that claims to come from the server or from the middle, and data for a
    // connection the PEP has never seen.
    flow.handle_datagram(Side::Middle, Side::Client, ms(1), vec![1, 2, 3]);
    flow.handle_datagram(Side::Middle, Side::Server, ms(1), syn.bytes.clone());
    flow.handle_datagram(Side::Middle, Side::Middle, ms(1), syn.bytes.clone());
    let mut data = Vec::new();
    Segment {
        flags: ACK,
        seq: 1,
        ack: 1,
        len: 100,
        ..Default::default()
    }
    .encode(&mut data);
    flow.handle_datagram(Side::Middle, Side::Client, ms(1), data);
    assert_eq!(flow.malformed_segments(), 1);
    assert_eq!(flow.stray_segments(), 3);
    assert!(flow.poll_transmit(Side::Middle, ms(1)).is_none());
    // The real SYN from the client is answered as the server, and opens leg B.
    flow.handle_datagram(Side::Middle, Side::Client, ms(2), syn.bytes);
    let to: Vec<Side> = std::iter::from_fn(|| flow.poll_transmit(Side::Middle, ms(2)))
        .map(|t| t.to)
        .collect();
    assert_eq!(to, vec![Side::Client, Side::Server]);
    assert!(
        flow.poll_timeout(Side::Middle).is_some(),
        "the legs' handshake timers"
    );
}

#[test]
fn an_invalid_pep_is_an_error() {
    let mut cfg = config(download(10_000));
    cfg.pep = Some(pep(0));
    assert!(TcpFlow::new(cfg.clone()).is_err());
    let mut p = pep(10_000);
    p.send_buffer = 0;
    cfg.pep = Some(p);
    let e = TcpFlow::new(cfg).err().map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.starts_with("PEP:")));
}
