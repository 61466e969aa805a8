use super::*;
use crate::qdisc::testutil::{drive, drive_lazily, link, meta, ms, pkt, us};
use crate::qdisc::{Ecn, PacketMeta, QdiscConfig};
use crate::rng::{stream, streams};

fn red(c: RedConfig) -> Red<u64> {
    Red::new(c, Some(8_000_000), stream(1, streams::QDISC))
}

/// Mean gap between marks with Linux's count method at a constant `p_b`: the gap is
/// `X = ⌈R/p_b⌉` for a uniform `R`, so `E[X] = Σ_{k≥1} P(X ≥ k) = Σ_k max(0, 1 − (k−1)·p_b)`.
fn mean_gap(p_b: f64) -> f64 {
    (1..)
        .map(|k| 1.0 - (k - 1) as f64 * p_b)
        .take_while(|x| *x > 0.0)
        .sum()
}

#[test]
fn wlog_follows_tc_from_the_burst() {
    // a = 55 + 1 − 30000/1000 = 26; (1 − (31/32)^55)·32 = 26.42 ≥ 26 > (1 − (15/16)^55)·16.
    assert_eq!(wlog_for_burst(30_000, 55, 1000), Some(5));
    assert_eq!(RedConfig::default().wlog, 5);
    assert_eq!(
        wlog_for_burst(30_000, 20, 1000),
        None,
        "burst below min/avpkt"
    );
}

#[test]
fn average_is_an_ewma_of_the_backlog_seen_by_arrivals() {
    let mut q = red(RedConfig {
        wlog: 1,
        ..RedConfig::default()
    });
    let mut stats = LinkStats::default();
    // W = 1/2; backlogs seen: 0 (idle start: decays 0 to 0), 1000, 2000, 3000.
    for (i, want) in [0.0, 500.0, 1250.0, 2125.0].into_iter().enumerate() {
        q.enqueue(
            Duration::ZERO,
            pkt(i as u64, 1000, 0, Ecn::NotEct),
            &mut stats,
        );
        assert_eq!(q.qavg, want, "after arrival {i}");
    }
}

#[test]
fn idle_time_decays_the_average_as_if_empty_arrivals_came_at_line_rate() {
    // 8 Mbit/s and avpkt 1000: one packet time s = 1 ms; 10 ms idle = 10 packets of (1 − W).
    let mut q = red(RedConfig::default());
    let mut stats = LinkStats::default();
    q.qavg = 10_000.0;
    q.idle_since = None;
    assert!(
        q.dequeue(ms(5), &mut stats).is_none(),
        "empty: idle from 5 ms"
    );
    q.enqueue(ms(15), pkt(0, 1000, 0, Ecn::NotEct), &mut stats);
    let want = 10_000.0 * (31.0f64 / 32.0).powi(10);
    assert!((q.qavg - want).abs() < 1e-9, "{} vs {want}", q.qavg);
}

#[test]
fn marking_rate_between_the_thresholds_follows_p_b_with_uniform_gaps() {
    for (frac, max_p) in [(0.5, 0.1), (0.25, 0.02), (0.9, 0.3)] {
        let mut q = red(RedConfig {
            max_p,
            ..RedConfig::default()
        });
        let (min, max) = (30_000.0, 90_000.0);
        q.qavg = min + frac * (max - min);
        let p_b = max_p * frac;
        let n = 200_000;
        let mut gaps = Vec::new();
        let mut since = 0;
        for _ in 0..n {
            since += 1;
            if q.action() == Action::Early {
                gaps.push(since);
                since = 0;
            }
        }
        // The first packet in the region only draws R; afterwards no gap exceeds ⌈1/p_b⌉.
        assert!(gaps[0] >= 2);
        assert!(
            gaps[1..].iter().all(|g| *g as f64 <= (1.0 / p_b).ceil()),
            "p_b {p_b}"
        );
        let rate = gaps.len() as f64 / n as f64;
        let want = 1.0 / mean_gap(p_b);
        assert!(
            (rate / want - 1.0).abs() < 0.03,
            "p_b {p_b}: {rate} vs {want}"
        );
    }
}

#[test]
fn above_max_every_packet_is_dropped_or_marked_and_below_min_none() {
    let run = |c: RedConfig, qavg: f64, ecn: Ecn| -> LinkStats {
        let mut q = red(c);
        let mut stats = LinkStats::default();
        for i in 0..100 {
            q.idle_since = None;
            q.qavg = qavg;
            q.backlog = 0;
            q.queue.clear();
            let _ = q.enqueue(Duration::ZERO, pkt(i, 1000, 0, ecn), &mut stats);
        }
        stats
    };
    // With W = 1/32 and an empty queue the average falls by 1/32 per arrival: start high.
    let above = 200_000.0;
    let s = run(RedConfig::default(), above, Ecn::Ect0);
    assert_eq!((s.aqm_dropped_packets, s.ce_marked_packets), (100, 0));
    let ecn = RedConfig {
        ecn: true,
        ..RedConfig::default()
    };
    let s = run(ecn.clone(), above, Ecn::Ect0);
    assert_eq!((s.aqm_dropped_packets, s.ce_marked_packets), (0, 100));
    let s = run(ecn.clone(), above, Ecn::NotEct);
    assert_eq!((s.aqm_dropped_packets, s.ce_marked_packets), (100, 0));
    let s = run(
        RedConfig {
            harddrop: true,
            ..ecn
        },
        above,
        Ecn::Ect0,
    );
    assert_eq!((s.aqm_dropped_packets, s.ce_marked_packets), (100, 0));
    let s = run(RedConfig::default(), 29_000.0, Ecn::NotEct);
    assert_eq!((s.aqm_dropped_packets, s.ce_marked_packets), (0, 0));
}

#[test]
fn gentle_ramps_from_max_p_to_one_between_max_and_twice_max() {
    let mut q = red(RedConfig {
        gentle: true,
        max_p: 0.1,
        ..RedConfig::default()
    });
    // avg = 1.5 · max: p_b = 0.1 + 0.9 · 0.5 = 0.55.
    q.qavg = 135_000.0;
    let n = 100_000;
    let marks = (0..n).filter(|_| q.action() == Action::Early).count();
    let want = 1.0 / mean_gap(0.55);
    assert!(
        (marks as f64 / n as f64 / want - 1.0).abs() < 0.03,
        "{marks}"
    );
    q.qavg = 180_000.0;
    assert_eq!(q.action(), Action::Hard);
}

#[test]
fn adaptive_max_p_steps_every_half_second() {
    let mut q = red(RedConfig {
        adaptive: true,
        ..RedConfig::default()
    });
    assert_eq!(q.next_timer(), Some(ms(500)));
    q.idle_since = None;
    // Targets: 30000 + 2·12000 = 54000 and 30000 + 3·12000 = 66000.
    q.qavg = 80_000.0;
    let mut want = 0.02;
    for k in 1..=6u64 {
        let at = q.next_timer().unwrap();
        assert_eq!(at, ms(500 * k));
        q.on_timer(at, at);
        want += f64::min(0.01, want / 4.0); // 0.025, 0.03125, 0.0390625, 0.048828125, +0.01, ...
        assert!((q.max_p - want).abs() < 1e-12, "step {k}: {}", q.max_p);
    }
    q.qavg = 60_000.0; // between the targets: unchanged
    q.on_timer(ms(3500), ms(3500));
    assert!((q.max_p - want).abs() < 1e-12);
    q.qavg = 50_000.0;
    q.on_timer(ms(4000), ms(4000));
    assert!((q.max_p - want * 0.9).abs() < 1e-12);
}

#[test]
fn results_do_not_depend_on_poll_cadence() {
    // 10 Mbit/s offered 14 Mbit/s by mixed ECT and Not-ECT packets, adaptive RED with ECN.
    let arrivals: Vec<(Duration, PacketMeta)> = (0..8000u64)
        .map(|i| {
            let ecn = if i % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
            (us(i * 500), meta(400 + (i % 4) as u32 * 200, i % 3, ecn))
        })
        .collect();
    let config = QdiscConfig::Red(RedConfig {
        ecn: true,
        adaptive: true,
        ..RedConfig::default()
    });
    let mut a = link(10_000_000, config.clone(), 9);
    let eager = drive(&mut a, &arrivals);
    let mut b = link(10_000_000, config, 9);
    let polls: Vec<_> = (0..100).map(|i| ms(i * 41 + 5)).collect();
    let lazy = drive_lazily(&mut b, &arrivals, &polls);
    assert_eq!(eager, lazy);
    assert_eq!(a.stats(), b.stats());
    // Bursts with idle gaps longer than the adaptation period, polled only at arrivals.
    let arrivals =
        crate::qdisc::testutil::bursts(20, 400, ms(600), 1000, &[Ecn::NotEct, Ecn::Ect0], 3);
    let config = QdiscConfig::Red(RedConfig {
        ecn: true,
        adaptive: true,
        ..RedConfig::default()
    });
    let mut c = link(10_000_000, config.clone(), 9);
    let eager_bursts = drive(&mut c, &arrivals);
    let mut d = link(10_000_000, config, 9);
    assert_eq!(eager_bursts, drive_lazily(&mut d, &arrivals, &[]));
    assert_eq!(c.stats(), d.stats());
    let s = a.stats();
    assert!(
        s.aqm_dropped_packets > 0 && s.ce_marked_packets > 0,
        "{s:?}"
    );
    // RED keeps the queue between its thresholds, far below the 400 kB limit.
    assert_eq!(s.dropped_queue_packets, 0);
}
