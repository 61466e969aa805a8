use super::*;
use crate::qdisc::testutil::{drive, drive_lazily, link, meta, ms, pkt, us};
use crate::qdisc::{Ecn, PacketMeta, QdiscConfig};
use crate::rng::{stream, streams};

fn pie(c: PieConfig) -> Pie<u64> {
    Pie::new(c, stream(1, streams::QDISC))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-12)
}

#[test]
fn probability_follows_the_scaled_pi_update_over_a_delay_trace() {
    let mut q = pie(PieConfig::default());
    q.backlog = 30_000;
    // Each step: (qdelay seen by the update, p expected after it), by hand from sch_pie.c:
    //  1. p = 0 < 1e-6: gains / (2·4⁵) = /2048;
    //     Δ = (0.125·(0.030 − 0.015) + 1.25·(0.030 − 0)) / 2048 = 0.039375 / 2048.
    //  2. p ≈ 1.9e-5 ≥ 1e-5: gains /(2·4⁴) = /512... no: the loop divides by 4 while p < 1e-2,
    //     1e-3, 1e-4 (three times): /(2·4³) = /128; Δ = 0.125·0.015 / 128 = 1.46484375e-5.
    //  3. same scale: + 1.46484375e-5.
    let p1 = 0.039375 / 2048.0;
    let p2 = p1 + 0.125 * 0.015 / 128.0;
    let p3 = p2 + 0.125 * 0.015 / 128.0;
    for (qdelay, want) in [(30, p1), (30, p2), (30, p3)] {
        q.vars.qdelay = ms(qdelay);
        q.calculate_probability();
        assert!(close(q.vars.prob, want), "{} vs {want}", q.vars.prob);
        assert_eq!(q.vars.qdelay_old, ms(qdelay));
    }
    // Above 10 %: no scaling, rises capped at 2 %, and 2 % more above 250 ms of delay.
    q.vars.prob = 0.15;
    q.vars.qdelay_old = ms(50);
    q.vars.qdelay = ms(100); // Δ = 0.125·0.085 + 1.25·0.05 = 0.073125 → capped at 0.02
    q.calculate_probability();
    assert!(close(q.vars.prob, 0.17), "{}", q.vars.prob);
    q.vars.qdelay = ms(300); // capped 0.02, + 0.02
    q.calculate_probability();
    assert!(close(q.vars.prob, 0.21), "{}", q.vars.prob);
    // Below 10 % a fall is not capped: Δ = 0.0625·(0.001 − 0.015) + 0.625·(0.001 − 0.3).
    q.vars.prob = 0.5;
    q.vars.qdelay = ms(1);
    q.calculate_probability();
    assert!(
        close(q.vars.prob, 0.5 + 0.125 * -0.014 + 1.25 * -0.299),
        "{}",
        q.vars.prob
    );
}

#[test]
fn zero_delay_twice_decays_by_a_64th_and_rearms_the_burst_allowance_at_zero() {
    let mut q = pie(PieConfig::default());
    q.vars.prob = 0.05;
    q.vars.burst_time = Duration::ZERO;
    q.backlog = 0;
    // p < 10 %, ≥ 1 %: gains halved; Δ = 0.0625 · (0 − 0.015); then p −= p/64.
    q.calculate_probability();
    let want = (0.05 - 0.0625 * 0.015) * (63.0 / 64.0);
    assert!(close(q.vars.prob, want), "{} vs {want}", q.vars.prob);
    assert_eq!(q.vars.burst_time, Duration::ZERO, "p is not zero yet");
    q.vars.prob = 1e-9;
    q.calculate_probability();
    assert_eq!(q.vars.prob, 0.0);
    assert_eq!(q.vars.burst_time, Duration::from_millis(150));
}

#[test]
fn no_early_drop_below_half_the_target_while_p_is_under_a_fifth() {
    let mut q = pie(PieConfig::default());
    q.vars.burst_time = Duration::ZERO;
    q.vars.prob = 0.19;
    q.vars.qdelay = us(7_499);
    assert!((0..1000).all(|_| !q.drop_early(100_000, 1500)));
    q.vars.qdelay = us(7_500);
    let picked = (0..1000).filter(|_| q.drop_early(100_000, 1500)).count();
    // De-randomised (RFC 8033 §5.1): after a pick the next four packets cannot be picked (the
    // accumulated 4 · 0.19 < 0.85), from the fifth each is with probability p: the mean gap is
    // 4 + 1/p = 9.26 packets, 108 picks per 1000 (± 3 sd ≈ 25).
    assert!((83..=133).contains(&picked), "{picked}");
    q.vars.prob = 0.2;
    q.vars.qdelay = Duration::ZERO;
    assert!(
        (0..100).any(|_| q.drop_early(100_000, 1500)),
        "p ≥ 20 % drops anyway"
    );
    // Fewer than two MTUs queued: never.
    assert!((0..100).all(|_| !q.drop_early(2999, 1500)));
}

#[test]
fn burst_allowance_is_consumed_by_time_between_dequeues() {
    let mut q = pie(PieConfig::default());
    q.vars.prob = 1.0;
    q.vars.qdelay = ms(100);
    let mut stats = LinkStats::default();
    for i in 0..200 {
        q.enqueue(Duration::ZERO, pkt(i, 1500, 0, Ecn::NotEct), &mut stats);
    }
    assert_eq!(
        stats.aqm_dropped_packets, 0,
        "allowance left: nothing dropped"
    );
    // Dequeues 1 ms apart: the first only starts the clock, then 150 of them use it up.
    for t in 0..=150 {
        q.dequeue(ms(t), &mut stats);
        assert_eq!(q.vars.burst_time, ms(150 - t));
    }
    assert_eq!(q.vars.burst_time, Duration::ZERO);
    q.vars.qdelay = ms(100);
    let r = q.enqueue(ms(150), pkt(999, 1500, 0, Ecn::NotEct), &mut stats);
    assert_eq!(r, EnqueueResult::DroppedAqm);
}

#[test]
fn ecn_marks_while_p_is_at_most_ten_percent_and_drops_above() {
    let run = |prob: f64, ecn: Ecn| -> LinkStats {
        let mut q = pie(PieConfig {
            ecn: true,
            ..PieConfig::default()
        });
        q.vars.burst_time = Duration::ZERO;
        q.vars.qdelay = ms(20);
        q.backlog = 1_000_000; // as if deep: only the decision is under test
        let mut stats = LinkStats::default();
        for i in 0..2000 {
            q.vars.prob = prob;
            if let EnqueueResult::Accepted = q.enqueue(ms(1), pkt(i, 1000, 0, ecn), &mut stats) {
                q.queue.pop_back();
                q.backlog -= 1000;
            }
        }
        stats
    };
    let s = run(0.1, Ecn::Ect0);
    assert!(
        s.ce_marked_packets > 100 && s.aqm_dropped_packets == 0,
        "{s:?}"
    );
    let s = run(0.11, Ecn::Ect1);
    assert!(
        s.ce_marked_packets == 0 && s.aqm_dropped_packets > 100,
        "{s:?}"
    );
    let s = run(0.05, Ecn::NotEct);
    assert!(
        s.ce_marked_packets == 0 && s.aqm_dropped_packets > 50,
        "{s:?}"
    );
}

#[test]
fn first_update_half_a_second_in_then_every_tupdate_and_results_do_not_depend_on_polls() {
    // 10 Mbit/s offered 12 Mbit/s: the queue grows 0.2 ms per ms; PIE only acts after 500 ms.
    let arrivals: Vec<(Duration, PacketMeta)> = (0..8000u64)
        .map(|i| (us(i * 1000), meta(1500, 0, Ecn::NotEct)))
        .collect();
    let config = QdiscConfig::Pie(PieConfig::default());
    let mut a = link(10_000_000, config.clone(), 5);
    let eager = drive(&mut a, &arrivals);
    let mut b = link(10_000_000, config, 5);
    let polls: Vec<_> = (0..100).map(|i| ms(i * 37 + 11)).collect();
    let lazy = drive_lazily(&mut b, &arrivals, &polls);
    assert_eq!(eager, lazy);
    assert_eq!(a.stats(), b.stats());
    // Bursts with idle gaps: the lazy caller's polls are up to 100 ms apart while the queue
    // drains, so every update must be replayed at its own time.
    let arrivals =
        crate::qdisc::testutil::bursts(40, 110, ms(100), 1500, &[Ecn::NotEct, Ecn::Ect0], 1);
    let config = QdiscConfig::Pie(PieConfig {
        ecn: true,
        ..PieConfig::default()
    });
    let mut c = link(10_000_000, config.clone(), 5);
    let eager_bursts = drive(&mut c, &arrivals);
    let mut d = link(10_000_000, config, 5);
    let lazy_bursts = drive_lazily(&mut d, &arrivals, &[]);
    assert_eq!(eager_bursts, lazy_bursts);
    assert_eq!(c.stats(), d.stats());
    let s = c.stats();
    assert!(s.aqm_dropped_packets > 0, "{s:?}");
    // No early drop can happen before the first update gives p > 0.
    let first_drop = crate::qdisc::testutil::missing(&eager, 8000)[0];
    assert!(
        arrivals[first_drop as usize].0 > FIRST_UPDATE,
        "{first_drop}"
    );
    // Under this unresponsive overload PIE must shed a sixth of the packets and, once its
    // integral has wound down from the start-up overshoot, hold the delay at its target: the
    // last two seconds' sojourns average 15 ms ± 5 ms.
    let s = a.stats();
    assert!(s.aqm_dropped_packets > 1000, "{s:?}");
    let tail: Vec<f64> = eager
        .iter()
        .filter(|d| d.at > ms(6000))
        .map(|d| d.queue_delay.as_secs_f64())
        .collect();
    let mean = tail.iter().sum::<f64>() / tail.len() as f64;
    assert!((0.010..0.020).contains(&mean), "mean sojourn {mean}");
}

#[test]
fn idle_updates_are_skipped_at_the_fixed_point() {
    let mut l = link(10_000_000, QdiscConfig::Pie(PieConfig::default()), 5);
    let _ = l.enqueue(Duration::ZERO, 1500, 0);
    // A day of idle time must not take a day's worth of 15 ms updates.
    let t = std::time::Instant::now();
    while l.poll(Duration::from_secs(86_400)).is_some() {}
    let _ = l.enqueue(Duration::from_secs(86_400), 1500, 1);
    assert!(t.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(l.stats().offered_packets, 2);
}
