use super::*;
use crate::qdisc::testutil::{drive, drive_lazily, link, meta, ms, pkt, us};
use crate::qdisc::{PacketMeta, QdiscConfig};
use crate::rng::{stream, streams};

fn dualpi2(c: DualPi2Config) -> DualPi2<u64> {
    DualPi2::new(c, stream(1, streams::QDISC))
}

#[test]
fn pi2_update_over_a_known_delay_trace() {
    let mut q = dualpi2(DualPi2Config::default());
    let mut stats = LinkStats::default();
    assert_eq!(q.next_timer(), Some(ms(16)));
    q.enqueue(Duration::ZERO, pkt(0, 1500, 0, Ecn::NotEct), &mut stats);
    // Classic head sojourn 25 ms, previous 0: Δ = (41/256)·(0.025 − 0.015) + (819/256)·0.025.
    q.on_timer(ms(25), ms(25));
    let p1 = 41.0 / 256.0 * 0.010 + 819.0 / 256.0 * 0.025;
    assert!((q.prob - p1).abs() < 1e-12, "{} vs {p1}", q.prob);
    assert_eq!(q.next_timer(), Some(ms(41)));
    q.dequeue(ms(25), &mut stats);
    q.enqueue(ms(30), pkt(1, 1500, 0, Ecn::NotEct), &mut stats);
    q.enqueue(ms(20), pkt(2, 1500, 0, Ecn::Ect1), &mut stats);
    // At 45 ms: classic head 15 ms, L head 25 ms: the larger counts (Linux).
    q.on_timer(ms(45), ms(45));
    let p2 = p1 + 41.0 / 256.0 * (0.025 - 0.015) + 819.0 / 256.0 * (0.025 - 0.025);
    assert!((q.prob - p2).abs() < 1e-12, "{} vs {p2}", q.prob);
    // Empty queues pull it down: Δ = 0.16·(0 − 0.015) + 3.2·(0 − 0.025) ...
    q.dequeue(ms(45), &mut stats);
    q.dequeue(ms(45), &mut stats);
    q.on_timer(ms(61), ms(61));
    let p3 = p2 + 41.0 / 256.0 * -0.015 + 819.0 / 256.0 * -0.025;
    assert!((q.prob - p3).abs() < 1e-12, "{} vs {p3}", q.prob);
    // ... and it never goes below zero.
    q.on_timer(ms(77), ms(77));
    assert_eq!(q.prob, 0.0);
}

#[test]
fn coupling_marks_l_with_k_p_and_classic_with_p_squared() {
    // p' = 0.1 held fixed, deep queues, every dequeue at its enqueue instant (no step marks):
    // p_L = 2·p' = 0.2 and p_C = p'² = 0.01, i.e. p_L = 2·√p_C.
    let n = 200_000u64;
    let mut q = dualpi2(DualPi2Config {
        limit_packets: 10 * n,
        ..DualPi2Config::default()
    });
    q.prob = 0.1;
    let mut stats = LinkStats::default();
    for i in 0..n {
        q.enqueue(Duration::ZERO, pkt(2 * i, 1000, 0, Ecn::Ect1), &mut stats);
        q.enqueue(
            Duration::ZERO,
            pkt(2 * i + 1, 1000, 0, Ecn::Ect0),
            &mut stats,
        );
    }
    let (mut l_marks, mut c_marks) = (0u64, 0u64);
    while let Some(p) = q.dequeue(Duration::ZERO, &mut stats) {
        if p.meta.ecn == Ecn::Ce {
            if p.item % 2 == 0 {
                l_marks += 1;
            } else {
                c_marks += 1;
            }
        }
    }
    let (p_l, p_c) = (l_marks as f64 / n as f64, c_marks as f64 / n as f64);
    // ± 3 standard deviations of a binomial proportion.
    let sd = |p: f64| 3.0 * (p * (1.0 - p) / n as f64).sqrt();
    assert!((p_l - 0.2).abs() < sd(0.2), "p_L {p_l}");
    assert!((p_c - 0.01).abs() < sd(0.01), "p_C {p_c}");
    assert!(
        (p_l / (2.0 * p_c.sqrt()) - 1.0).abs() < 0.05,
        "{p_l} vs 2·√{p_c}"
    );
    assert_eq!(
        stats.aqm_dropped_packets, 0,
        "ECN-capable: marked, never dropped"
    );
}

#[test]
fn classic_not_ect_is_dropped_with_p_squared_and_overload_drops_l_too() {
    let n = 100_000u64;
    let run = |prob: f64, ecn: Ecn| -> LinkStats {
        let mut q = dualpi2(DualPi2Config {
            limit_packets: 10 * n,
            ..DualPi2Config::default()
        });
        q.prob = prob;
        let mut stats = LinkStats::default();
        for i in 0..n {
            q.enqueue(Duration::ZERO, pkt(i, 1000, 0, ecn), &mut stats);
        }
        while q.dequeue(Duration::ZERO, &mut stats).is_some() {}
        stats
    };
    let s = run(0.2, Ecn::NotEct);
    let rate = s.aqm_dropped_packets as f64 / n as f64;
    assert!((rate - 0.04).abs() < 0.002, "p_C {rate}");
    assert_eq!(s.ce_marked_packets, 0);
    // k·p' = 1.2 > 1: overload; L packets are dropped with p'² = 0.36 and marked otherwise.
    let s = run(0.6, Ecn::Ect1);
    let rate = s.aqm_dropped_packets as f64 / n as f64;
    assert!((rate - 0.36).abs() < 0.005, "overload drop {rate}");
    assert!(s.ce_marked_packets > n * 6 / 10, "{s:?}");
}

#[test]
fn step_marks_l_packets_whose_sojourn_exceeds_one_millisecond() {
    // 12 Mbit/s: packet k (k ≥ 1) of a burst at zero leaves the queue at k ms.
    let burst = |ecn| -> Vec<(Duration, PacketMeta)> {
        (0..6)
            .map(|_| (Duration::ZERO, meta(1500, 0, ecn)))
            .collect()
    };
    let mut l = link(12_000_000, QdiscConfig::DualPi2(Default::default()), 1);
    let out = drive(&mut l, &burst(Ecn::Ect1));
    let ce: Vec<u64> = out
        .iter()
        .filter(|d| d.ecn == Ecn::Ce)
        .map(|d| d.item)
        .collect();
    assert_eq!(
        ce,
        vec![2, 3, 4, 5],
        "sojourn 1 ms is not above the threshold"
    );
    assert_eq!(out[1].queue_delay, ms(1));
    // Classic packets see no step (and p' = 0 before the first update at 16 ms).
    let mut l = link(12_000_000, QdiscConfig::DualPi2(Default::default()), 1);
    let out = drive(&mut l, &burst(Ecn::Ect0));
    assert!(out.iter().all(|d| d.ecn == Ecn::Ect0));
}

#[test]
fn wrr_gives_the_classic_queue_its_ten_percent() {
    let mut q = dualpi2(DualPi2Config::default());
    let mut stats = LinkStats::default();
    for i in 0..200 {
        q.enqueue(Duration::ZERO, pkt(i, 1500, 0, Ecn::Ect1), &mut stats);
        q.enqueue(
            Duration::ZERO,
            pkt(1000 + i, 1500, 0, Ecn::Ect0),
            &mut stats,
        );
    }
    // Credit starts at 1500·(10 − 90) = −120000; each L packet adds 10·1500, each classic one
    // subtracts 90·1500: nine L, then one classic, and again.
    let order: Vec<bool> = (0..100)
        .map(|_| q.dequeue(Duration::ZERO, &mut stats).unwrap().item < 1000)
        .collect();
    for (i, from_l) in order.iter().enumerate() {
        assert_eq!(*from_l, i % 10 != 9, "dequeue {i}");
    }
}

#[test]
fn results_do_not_depend_on_poll_cadence() {
    // A classic Not-ECT flow and an L flow overloading 20 Mbit/s together.
    let arrivals: Vec<(Duration, PacketMeta)> = (0..10_000u64)
        .map(|i| {
            let ecn = if i % 2 == 0 { Ecn::Ect1 } else { Ecn::NotEct };
            (us(i * 500), meta(1500, i % 2, ecn))
        })
        .collect();
    let config = QdiscConfig::DualPi2(DualPi2Config::default());
    let mut a = link(20_000_000, config.clone(), 4);
    let eager = drive(&mut a, &arrivals);
    let mut b = link(20_000_000, config, 4);
    let polls: Vec<_> = (0..100).map(|i| ms(i * 43 + 2)).collect();
    let lazy = drive_lazily(&mut b, &arrivals, &polls);
    assert_eq!(eager, lazy);
    assert_eq!(a.stats(), b.stats());
    // Bursts with idle gaps longer than tupdate, polled only at arrivals.
    let arrivals = crate::qdisc::testutil::bursts(
        30,
        150,
        ms(100),
        1500,
        &[Ecn::NotEct, Ecn::Ect1, Ecn::Ect0],
        2,
    );
    let config = QdiscConfig::DualPi2(DualPi2Config::default());
    let mut c = link(15_000_000, config.clone(), 4);
    let eager_bursts = drive(&mut c, &arrivals);
    let mut d = link(15_000_000, config, 4);
    assert_eq!(eager_bursts, drive_lazily(&mut d, &arrivals, &[]));
    assert_eq!(c.stats(), d.stats());
    assert!(c.stats().aqm_dropped_packets > 0 && c.stats().ce_marked_packets > 0);
    let s = a.stats();
    assert!(
        s.aqm_dropped_packets > 0 && s.ce_marked_packets > 0,
        "{s:?}"
    );
}

#[test]
fn l4s_packets_keep_a_shallow_queue_while_pi2_holds_the_classic_one_at_its_target() {
    // 20 Mbit/s: classic Not-ECT traffic at 16 Mbit/s and L traffic at 6 Mbit/s (1500-byte
    // packets every 750 µs and 2 ms), unresponsive: 10 % overload for 8 s.
    let mut arrivals: Vec<(Duration, PacketMeta)> = Vec::new();
    for i in 0..10_667u64 {
        arrivals.push((us(i * 750), meta(1500, 1, Ecn::NotEct)));
    }
    for i in 0..4000u64 {
        arrivals.push((us(i * 2000 + 333), meta(1500, 2, Ecn::Ect1)));
    }
    arrivals.sort_by_key(|a| a.0);
    let mut l = link(
        20_000_000,
        QdiscConfig::DualPi2(DualPi2Config::default()),
        2,
    );
    let out = drive(&mut l, &arrivals);
    let late = |ecn: Ecn| -> Vec<f64> {
        let mut v: Vec<f64> = out
            .iter()
            .filter(|d| d.at > ms(5000) && arrivals[d.item as usize].1.ecn == ecn)
            .map(|d| d.queue_delay.as_secs_f64())
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let l_delays = late(Ecn::Ect1);
    let p99 = l_delays[l_delays.len() * 99 / 100];
    assert!(p99 < 0.002, "L p99 sojourn {p99}");
    let c_delays = late(Ecn::NotEct);
    let mean = c_delays.iter().sum::<f64>() / c_delays.len() as f64;
    assert!(
        (0.008..0.022).contains(&mean),
        "classic mean sojourn {mean}"
    );
    let s = l.stats();
    assert!(
        s.aqm_dropped_packets > 0 && s.ce_marked_packets > 0,
        "{s:?}"
    );
}
