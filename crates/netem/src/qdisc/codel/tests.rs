use super::*;
use crate::qdisc::testutil::{drive, link, meta, missing, ms};
use crate::qdisc::{Ecn, QdiscConfig};

/// 12 Mbit/s: a 1500-byte packet takes exactly 1 ms.
const RATE: u64 = 12_000_000;

/// `n` packets of 1500 bytes offered at time zero: packet 0 is served at once, packet `k` is
/// dequeued at `k` ms with a sojourn of `k` ms (until drops shift the later ones forward).
fn burst(n: u64, ecn: Ecn) -> Vec<(Duration, crate::qdisc::PacketMeta)> {
    (0..n)
        .map(|_| (Duration::ZERO, meta(1500, 0, ecn)))
        .collect()
}

/// The drop times of Linux's CoDel on the burst above, by hand from `codel_impl.h`:
/// - sojourn reaches target (5 ms) at the dequeue at 5 ms: `first_above_time` = 105 ms; the
///   first dequeue strictly after it (106 ms) drops packet 106 and sends 107;
/// - `count` = 1, `rec_inv_sqrt` = 0xFFFF: `drop_next` = 106 ms + ⌊100 ms · 0xFFFF0000 / 2³²⌋
///   = 205.998474 ms → the second drop at the 206 ms dequeue;
/// - each later drop: `count` += 1, one Newton step of `rec_inv_sqrt` (32769, 36864, 31968,
///   28935, 26481, 24588, 23037 for `count` 2..8), `drop_next` += ⌊100 ms · rec · 2¹⁶ / 2³²⌋
///   (50.001525, 56.25, 48.779296, 44.151306, 40.406799, 37.51831, 35.151672 ms), each from the
///   previous `drop_next`, so the drops fall on the dequeues at 256, 313, 362, 406, 446, 484,
///   519 ms.
///
/// After `j` drops the packet dequeued at `t` ms is `t + j`, so drop `j` (from 1) removes item
/// `t_j + j − 1`.
const DROP_TIMES_MS: [u64; 9] = [106, 206, 256, 313, 362, 406, 446, 484, 519];

fn codel(f: impl FnOnce(&mut CodelConfig)) -> QdiscConfig {
    let mut c = CodelConfig::default();
    f(&mut c);
    QdiscConfig::Codel(c)
}

#[test]
fn first_drop_one_interval_after_target_then_the_linux_control_law() {
    let mut l = link(RATE, codel(|_| {}), 1);
    let out = drive(&mut l, &burst(1000, Ecn::NotEct));
    let expected: Vec<u64> = DROP_TIMES_MS
        .iter()
        .enumerate()
        .map(|(j, t)| t + j as u64)
        .collect();
    let dropped = missing(&out, 1000);
    assert_eq!(&dropped[..expected.len()], &expected[..]);
    assert_eq!(l.stats().aqm_dropped_packets, dropped.len() as u64);
    assert_eq!(l.stats().aqm_dropped_bytes, 1500 * dropped.len() as u64);
    assert_eq!(l.stats().dropped_queue_packets, 0);
    assert_eq!(l.stats().ce_marked_packets, 0);
}

#[test]
fn drop_spacing_converges_to_interval_over_sqrt_count() {
    // The hand-computed spacings above, against interval/sqrt(count): Linux's one Newton step
    // per drop lags at count 2 (50 ms instead of 70.7 ms) and is within 1.5 % from count 5.
    let spacing_ms = [50.001525, 56.25, 48.779296, 44.151306, 40.406799, 37.51831];
    for (i, s) in spacing_ms.iter().enumerate() {
        let count = i as f64 + 2.0;
        let exact = 100.0 / count.sqrt();
        if count >= 5.0 {
            assert!(
                (s / exact - 1.0).abs() < 0.015,
                "count {count}: {s} vs {exact}"
            );
        }
        let mut v = CodelVars {
            count: 1,
            rec_inv_sqrt: u16::MAX,
            ..CodelVars::default()
        };
        for c in 2..=count as u32 {
            v.count = c;
            v.newton_step();
        }
        let got = control_law(Duration::ZERO, ms(100), v.rec_inv_sqrt);
        assert_eq!(got, Duration::from_nanos((s * 1e6).round() as u64));
    }
}

#[test]
fn ecn_capable_packets_are_marked_at_the_same_times_instead_of_dropped() {
    let mut l = link(RATE, codel(|c| c.ecn = true), 1);
    let out = drive(&mut l, &burst(1000, Ecn::Ect0));
    assert_eq!(out.len(), 1000, "nothing dropped");
    let marked: Vec<u64> = out
        .iter()
        .filter(|d| d.ecn == Ecn::Ce)
        .map(|d| d.item)
        .collect();
    // A mark sends the packet, so the schedule is not shifted: item = dequeue time.
    assert_eq!(&marked[..DROP_TIMES_MS.len()], &DROP_TIMES_MS[..]);
    assert_eq!(l.stats().aqm_dropped_packets, 0);
    assert_eq!(l.stats().ce_marked_packets, marked.len() as u64);
    // The same load without ECN capability is dropped even with `ecn` on.
    let mut l = link(RATE, codel(|c| c.ecn = true), 1);
    let out = drive(&mut l, &burst(1000, Ecn::NotEct));
    assert_eq!(missing(&out, 1000)[..3], [106, 207, 258]);
    assert_eq!(l.stats().ce_marked_packets, 0);
    // And with `ecn` off ECT packets are dropped too (Linux's `codel` default).
    let mut l = link(RATE, codel(|_| {}), 1);
    let out = drive(&mut l, &burst(1000, Ecn::Ect0));
    assert_eq!(missing(&out, 1000)[..3], [106, 207, 258]);
}

#[test]
fn ce_threshold_marks_every_packet_whose_sojourn_exceeds_it() {
    let mut l = link(
        RATE,
        codel(|c| c.ce_threshold = Some(Duration::from_micros(2500))),
        1,
    );
    let out = drive(&mut l, &burst(10, Ecn::Ect1));
    for d in &out {
        assert_eq!(d.queue_delay, ms(d.item), "sojourn of packet {}", d.item);
        let expect = if d.item >= 3 { Ecn::Ce } else { Ecn::Ect1 };
        assert_eq!(d.ecn, expect, "packet {}", d.item);
    }
    assert_eq!(l.stats().ce_marked_packets, 7);
}

#[test]
fn one_packet_of_backlog_is_never_a_standing_queue() {
    // 1.2 Mbit/s: 10 ms per packet. Two packets always wait, so every sojourn is 20 ms (four
    // times the target) for two seconds, but the backlog behind each dequeued packet is one
    // 1500-byte packet: not more than one MTU.
    let arrivals: Vec<_> = (0..200u64)
        .map(|i| (ms(10 * i.saturating_sub(2)), meta(1500, 0, Ecn::NotEct)))
        .collect();
    let mut l = link(1_200_000, codel(|_| {}), 1);
    let out = drive(&mut l, &arrivals);
    assert_eq!(out.len(), 200);
    assert!(out[5..].iter().all(|d| d.queue_delay == ms(20)));
    // With an MTU one byte smaller the same load is a standing queue and gets dropped.
    let mut l = link(1_200_000, codel(|c| c.mtu = 1499), 1);
    drive(&mut l, &arrivals);
    assert!(l.stats().aqm_dropped_packets > 0);
}

#[test]
fn limit_in_packets_tail_drops_beyond_it() {
    let mut l = link(RATE, codel(|c| c.limit_packets = 1000), 1);
    for i in 0..1100 {
        let r = l.enqueue(Duration::ZERO, 1500, i);
        let want = if i <= 1000 {
            EnqueueResult::Accepted
        } else {
            EnqueueResult::DroppedQueueFull
        };
        assert_eq!(r, want, "packet {i}");
    }
    let s = l.stats();
    assert_eq!(
        (s.dropped_queue_packets, s.dropped_queue_bytes),
        (99, 99 * 1500)
    );
    assert_eq!((s.max_queue_packets, s.max_queue_bytes), (1000, 1_500_000));
    assert_eq!(s.aqm_dropped_packets, 0);
}

#[test]
fn reentry_soon_after_resumes_at_count_minus_lastcount() {
    // Drive the state machine directly: a dropping cycle that reached count 5 from lastcount 1,
    // left, and re-entered within 16 intervals resumes at count 4 (RFC 8289 §5.5).
    let params = CodelConfig::default();
    let mut q = Fifo {
        queue: VecDeque::new(),
        bytes: 0,
    };
    for i in 0..10 {
        let mut p = crate::qdisc::testutil::pkt(i, 1500, 0, Ecn::NotEct);
        p.enqueued = Duration::ZERO;
        q.bytes += 1500;
        q.queue.push_back(p);
    }
    let mut vars = CodelVars {
        count: 5,
        lastcount: 1,
        dropping: false,
        rec_inv_sqrt: 28935,
        first_above_time: Some(ms(900)),
        drop_next: ms(950),
        ldelay: Duration::ZERO,
    };
    let mut stats = LinkStats::default();
    let now = ms(1000);
    let p = codel_dequeue(&mut q, &mut vars, &params, now, &mut stats).expect("a packet");
    assert_eq!(p.item, 1, "packet 0 dropped");
    assert!(vars.dropping);
    assert_eq!((vars.count, vars.lastcount), (4, 4));
    // Far from the last cycle it starts over at 1.
    let mut vars2 = CodelVars {
        count: 5,
        lastcount: 1,
        dropping: false,
        rec_inv_sqrt: 28935,
        first_above_time: Some(ms(900)),
        drop_next: ms(400),
        ldelay: Duration::ZERO,
    };
    let later = ms(2000); // exactly 16 intervals after drop_next: not "before"
    codel_dequeue(&mut q, &mut vars2, &params, later, &mut stats).expect("a packet");
    assert_eq!((vars2.count, vars2.rec_inv_sqrt), (1, u16::MAX));
    assert_eq!(vars2.drop_next, control_law(later, ms(100), u16::MAX));
}

#[test]
fn results_do_not_depend_on_poll_cadence() {
    // Two flows of mixed sizes and ECN capability overloading a 10 Mbit/s link by 50 %.
    let arrivals: Vec<_> = (0..6000u64)
        .map(|i| {
            let ecn = if i % 3 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
            let bytes = if i % 2 == 0 {
                1500
            } else {
                300 + (i % 7) as u32 * 100
            };
            (crate::qdisc::testutil::us(i * 600), meta(bytes, i % 2, ecn))
        })
        .collect();
    let config = codel(|c| {
        c.ecn = true;
        c.ce_threshold = Some(ms(8));
    });
    let mut a = link(10_000_000, config.clone(), 3);
    let eager = drive(&mut a, &arrivals);
    let mut b = link(10_000_000, config, 3);
    let polls: Vec<_> = (0..400).map(|i| ms(i * 9 + 1)).collect();
    let lazy = crate::qdisc::testutil::drive_lazily(&mut b, &arrivals, &polls);
    assert_eq!(eager, lazy);
    assert_eq!(a.stats(), b.stats());
    assert!(a.stats().aqm_dropped_packets > 0 && a.stats().ce_marked_packets > 0);
}
