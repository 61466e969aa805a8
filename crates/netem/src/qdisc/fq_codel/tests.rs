use super::*;
use crate::qdisc::testutil::{drive, drive_lazily, link, meta, ms, pkt, us};
use crate::qdisc::{Ecn, PacketMeta, QdiscConfig};
use crate::rng::{stream, streams};

const SEED: u64 = 7;

fn fq(f: impl FnOnce(&mut FqCodelConfig)) -> QdiscConfig {
    let mut c = FqCodelConfig::default();
    f(&mut c);
    QdiscConfig::FqCodel(c)
}

/// The discipline a link with `SEED` builds, to look at its buckets.
fn standalone(c: FqCodelConfig) -> FqCodel<u64> {
    FqCodel::new(c, stream(SEED, streams::QDISC))
}

#[test]
fn flows_in_distinct_buckets_for_the_tests() {
    let q = standalone(FqCodelConfig::default());
    let b: Vec<u32> = (1..=3).map(|f| q.bucket(f)).collect();
    assert!(b[0] != b[1] && b[1] != b[2] && b[0] != b[2], "{b:?}");
    assert!(b.iter().all(|b| *b < 1024));
}

#[test]
fn two_backlogged_flows_share_bytes_equally_whatever_their_packet_sizes() {
    // 12 Mbit/s. Flow 1 offers 1500-byte packets, flow 2 500-byte ones, each at twice the link
    // rate; CoDel is made inert (target 10 s) so only DRR decides. With a 1500-byte quantum a
    // round gives flow 1 one packet and flow 2 three: the same bytes.
    let mut arrivals: Vec<(Duration, PacketMeta)> = Vec::new();
    for i in 0..2000u64 {
        arrivals.push((us(i * 500), meta(1500, 1, Ecn::NotEct)));
        for j in 0..3 {
            arrivals.push((us(i * 500 + j * 166), meta(500, 2, Ecn::NotEct)));
        }
    }
    arrivals.sort_by_key(|a| a.0);
    let mut l = link(
        12_000_000,
        fq(|c| {
            c.codel.target = Duration::from_secs(10);
            c.limit_packets = 2000;
        }),
        SEED,
    );
    let out = drive(&mut l, &arrivals);
    let bytes = |flow: u64| -> u64 {
        out.iter()
            .filter(|d| d.at >= ms(200) && d.at < ms(900))
            .filter(|d| arrivals[d.item as usize].1.flow == flow)
            .map(|d| u64::from(d.ip_bytes))
            .sum()
    };
    let (a, b) = (bytes(1) as f64, bytes(2) as f64);
    assert!((a / b - 1.0).abs() < 0.05, "flow 1 {a} B, flow 2 {b} B");
    assert!(a + b > 0.99 * 1.5e6 * 0.7, "the link stays busy");
    assert!(
        l.stats().dropped_queue_packets > 0,
        "overflow drops happened"
    );
}

#[test]
fn a_sparse_flow_is_served_before_the_backlog() {
    // Flow 1 dumps 100 packets at zero (1 ms each at 12 Mbit/s); flow 2 sends one at 10.5 ms.
    let mut arrivals: Vec<(Duration, PacketMeta)> = (0..100)
        .map(|_| (Duration::ZERO, meta(1500, 1, Ecn::NotEct)))
        .collect();
    arrivals.push((us(10_500), meta(1500, 2, Ecn::NotEct)));
    let mut l = link(12_000_000, fq(|_| {}), SEED);
    let out = drive(&mut l, &arrivals);
    let pos = out.iter().position(|d| d.item == 100).expect("delivered");
    // Packet 10 is on the wire from 10 to 11 ms; the sparse one goes next.
    assert_eq!(out[pos - 1].item, 10);
    assert_eq!(out[pos].at, ms(12));
    assert_eq!(out[pos].queue_delay, us(500));
    // Without flow queueing it would have waited behind 89 packets.
    let mut fifo = link(12_000_000, QdiscConfig::Codel(Default::default()), SEED);
    let out = drive(&mut fifo, &arrivals);
    assert!(out.iter().find(|d| d.item == 100).unwrap().queue_delay > ms(80));
}

#[test]
fn overflow_drops_half_of_the_fattest_flow_from_its_head() {
    let mut q = standalone(FqCodelConfig {
        limit_packets: 10,
        ..FqCodelConfig::default()
    });
    let mut stats = LinkStats::default();
    let mut item = 0;
    let mut offer = |q: &mut FqCodel<u64>, flow: u64, stats: &mut LinkStats| {
        item += 1;
        q.enqueue(Duration::ZERO, pkt(item, 1500, flow, Ecn::NotEct), stats)
    };
    for _ in 0..8 {
        assert_eq!(offer(&mut q, 1, &mut stats), EnqueueResult::Accepted);
    }
    for _ in 0..2 {
        assert_eq!(offer(&mut q, 2, &mut stats), EnqueueResult::Accepted);
    }
    // The 11th packet: flow 1 holds 12000 bytes, the most; half of it (4 packets) goes.
    assert_eq!(offer(&mut q, 2, &mut stats), EnqueueResult::Accepted);
    assert_eq!(
        (stats.dropped_queue_packets, stats.dropped_queue_bytes),
        (4, 6000)
    );
    assert_eq!(q.len(), (7, 10500));
    let fat = q.bucket(1) as usize;
    assert_eq!(q.flows[fat].cvars.count, 4, "CoDel told to signal harder");
    let left: Vec<u64> = q.flows[fat].queue.iter().map(|p| p.item).collect();
    assert_eq!(left, vec![5, 6, 7, 8], "dropped from the head");
    // A lone packet of the fattest flow is dropped when it is all there is (limit 1).
    let mut q = standalone(FqCodelConfig {
        limit_packets: 1,
        ..FqCodelConfig::default()
    });
    let mut stats = LinkStats::default();
    assert_eq!(
        q.enqueue(Duration::ZERO, pkt(0, 1500, 1, Ecn::NotEct), &mut stats),
        EnqueueResult::Accepted
    );
    assert_eq!(
        q.enqueue(Duration::ZERO, pkt(1, 1000, 2, Ecn::NotEct), &mut stats),
        EnqueueResult::Accepted,
        "flow 1 is fatter: its packet goes"
    );
    assert_eq!(
        q.enqueue(Duration::ZERO, pkt(2, 1500, 3, Ecn::NotEct), &mut stats),
        EnqueueResult::DroppedQueueFull,
        "the arrival is the fattest flow's only packet"
    );
}

#[test]
fn ecn_is_on_by_default_marking_instead_of_dropping() {
    // 10 Mbit/s offered 15 Mbit/s by one flow for 3 s: CoDel controls the flow's queue.
    let load = |ecn| -> Vec<(Duration, PacketMeta)> {
        (0..3750u64)
            .map(|i| (us(i * 800), meta(1500, 1, ecn)))
            .collect()
    };
    let mut l = link(10_000_000, fq(|_| {}), SEED);
    drive(&mut l, &load(Ecn::Ect0));
    let s = l.stats();
    assert!(s.ce_marked_packets > 10, "{s:?}");
    assert_eq!(s.aqm_dropped_packets, 0);
    let mut l = link(10_000_000, fq(|_| {}), SEED);
    drive(&mut l, &load(Ecn::NotEct));
    let s = l.stats();
    assert!(s.aqm_dropped_packets > 10, "{s:?}");
    assert_eq!(s.ce_marked_packets, 0);
}

#[test]
fn results_do_not_depend_on_poll_cadence() {
    let arrivals: Vec<_> = (0..8000u64)
        .map(|i| {
            let flow = i % 5;
            let ecn = if flow < 2 { Ecn::Ect0 } else { Ecn::NotEct };
            let bytes = 200 + (i * 37 % 1300) as u32;
            (us(i * 150), meta(bytes, flow, ecn))
        })
        .collect();
    let config = fq(|c| c.limit_packets = 300);
    let mut a = link(20_000_000, config.clone(), SEED);
    let eager = drive(&mut a, &arrivals);
    let mut b = link(20_000_000, config, SEED);
    let polls: Vec<_> = (0..200).map(|i| ms(i * 7 + 3)).collect();
    let lazy = drive_lazily(&mut b, &arrivals, &polls);
    assert_eq!(eager, lazy);
    assert_eq!(a.stats(), b.stats());
    let s = a.stats();
    assert!(
        s.aqm_dropped_packets > 0 && s.ce_marked_packets > 0,
        "{s:?}"
    );
}
