//! Queue-discipline validation: each discipline against the behaviour its RFC or paper states,
//! in the simulator, on paths small enough for the test suite.
//!
//! - **CoDel's control law** (RFC 8289 §3.3): an unresponsive source at twice the link rate
//!   keeps the sojourn above target, so CoDel never leaves its dropping state and drops at
//!   `interval/√count` for count = 1, 2, …: the number of drops by the end of the run follows
//!   from the law alone.
//! - **CoDel's standing queue**: a saturating flow of each stack, whose round trip is eight
//!   targets long, is held at or below the 5 ms target.
//! - **RED's average queue** (Floyd & Jacobson 1993): an unresponsive source at rate λ into a
//!   link of rate μ must lose the fraction m = 1 − μ/λ; RED's count method loses
//!   2·p_b/(1 + p_b) of the packets at probability p_b, and p_b is linear in the average queue,
//!   so the average settles at `min + (max − min)·p_b/max_p`.
//! - **PIE** (RFC 8033): a saturating flow's queue delay settles around the 15 ms target.
//! - **FQ-CoDel** (RFC 8290): a sparse flow (a probe) beside bulk flows sees less than one
//!   target of queueing delay, and bulk flows of round trips from 20 to 160 ms share the link
//!   with Jain's index at least 0.99.
//! - **ECN**: with `ecn` on, CoDel marks the flow's packets instead of dropping them; the
//!   flow loses (almost) nothing.
//! - **DualPI2** (RFC 9332): beside a classic CUBIC flow, a scalable Prague flow's p99 queueing
//!   delay stays near the 1 ms step threshold.

use std::path::Path;

use scenario::model::Scenario;

use super::cases::{CaseRun, Measure};
use super::PointResult;

/// What an AQM run is judged on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AqmCheck {
    /// CoDel drops this many packets by the end (relative tolerance).
    ControlLaw { expected_drops: f64 },
    /// The mean queue delay over the series bins from `from_s` is within `tolerance` of
    /// `target_s` (`at_most`: anywhere up to it), with the link at least `min_utilisation` busy.
    SteadyDelay {
        target_s: f64,
        from_s: f64,
        tolerance: f64,
        at_most: bool,
        min_utilisation: f64,
    },
    /// The mean queue delay × rate (bytes) is RED's predicted average.
    RedAverage { expected_bytes: f64, rate_bps: f64 },
    /// The probe's p99 round trip exceeds `base_rtt_s` by less than `target_s`.
    SparseDelay { base_rtt_s: f64, target_s: f64 },
    /// The flows' Jain index over the measurement window is at least the minimum.
    Fairness,
    /// The flow's packets were marked, not dropped, and it lost at most this fraction.
    EcnMarks,
    /// The scalable flow (the first) queues at most `max_queue_s` at its p99 above the base
    /// one-way delay `base_owd_s`, beside the classic flow (the second).
    L4sDelay { base_owd_s: f64, max_queue_s: f64 },
}

/// CoDel's drops between `first_drop_s` and `end_s` by the control law: the largest n with
/// `first_drop + Σ_{k=1}^{n−1} interval/√k ≤ end`.
pub fn codel_drops(first_drop_s: f64, end_s: f64, interval_s: f64) -> f64 {
    let (mut t, mut n) = (first_drop_s, 0.0_f64);
    while t <= end_s {
        n += 1.0;
        t += interval_s / n.sqrt();
    }
    n
}

/// RED's average queue (bytes) when an unresponsive source must lose `m` of its packets.
pub fn red_average(m: f64, min: f64, max: f64, max_p: f64) -> f64 {
    // The count method's drop rate is 2·p_b/(1 + p_b); solve it for p_b.
    let p_b = m / (2.0 - m);
    min + (max - min) * p_b / max_p
}

/// Minimum Jain index of `fq-codel-rtt-fairness`.
const MIN_JAIN: f64 = 0.99;
/// Largest fraction of packets an ECN flow may lose to the AQM's queue.
const MAX_ECN_LOSS: f64 = 0.001;

fn parse(text: &str) -> Scenario {
    let loaded = scenario::parse_str(text, "validate-aqm.toml", Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("the validation scenario is valid: {e}\n{text}"));
    loaded.points[0].scenario.clone()
}

fn run(case: &'static str, label: String, text: &str, check: AqmCheck) -> CaseRun {
    CaseRun {
        case,
        label,
        expected_bps: 0.0,
        scenario: parse(text),
        seed: 1,
        measure: Measure::Aqm(check),
        loss: None,
        drawn_at: None,
    }
}

/// Bulk download of `stack` over 10 Mbit/s and 40 ms with a 16-BDP buffer under `qdisc`,
/// measured from 5 s.
fn saturating(stack: &str, qdisc: &str) -> String {
    let cc = if stack == "tcp" { "cubic" } else { "newreno" };
    format!(
        "[run]\nduration = \"20s\"\nmeasure_from = \"5s\"\n\
         [link]\nrate = \"10Mbit\"\nrtt = \"40ms\"\nqueue = \"16bdp\"\nqdisc = {qdisc}\n\
         [[flow]]\nname = \"bulk\"\nstack = \"{stack}\"\ncc = \"{cc}\"\ndirection = \"down\"\n"
    )
}

/// An unresponsive UDP source at `rate` into 10 Mbit/s under `qdisc` for `secs`; the one
/// flow a scenario needs starts 10 ms before the end.
fn overload(rate: &str, qdisc: &str, secs: u32) -> String {
    format!(
        "[run]\nduration = \"{secs}s\"\n\
         [link]\nrate = \"10Mbit\"\nrtt = \"40ms\"\nqdisc = {qdisc}\n\
         [[flow]]\nname = \"idle\"\nstack = \"tcp\"\nstart = \"{}ms\"\n\
         [[cross]]\nname = \"cbr\"\ndirection = \"down\"\npattern = \"cbr\"\nrate = \"{rate}\"\n",
        secs * 1000 - 10
    )
}

const STACKS: [&str; 3] = ["tcp", "quic", "quic-model"];

/// Every AQM validation run, in the order of [`super::CASES`], filtered by `want`.
pub fn plan(want: &dyn Fn(&str) -> bool) -> Vec<CaseRun> {
    let mut runs = Vec::new();
    if want("codel-control-law") {
        // Twice the link rate: the queue grows at the link rate, the sojourn passes the 5 ms
        // target after 5 ms, the packet that shows it leaves 5 ms later, and the first drop
        // comes one interval after that.
        let first_drop = 0.010 + 0.100;
        runs.push(run(
            "codel-control-law",
            "20 Mbit/s into 10 Mbit/s, 10 s".into(),
            &overload("20Mbit", "\"codel\"", 10),
            AqmCheck::ControlLaw {
                expected_drops: codel_drops(first_drop, 10.0, 0.100),
            },
        ));
    }
    if want("codel-standing-queue") {
        for stack in STACKS {
            runs.push(run(
                "codel-standing-queue",
                format!("{stack}, 10 Mbit/s 40 ms"),
                &saturating(stack, "\"codel\""),
                // One flow whose round trip is 8 targets long drains the queue after each drop:
                // CoDel holds it at or below the target, and gives up a little throughput.
                AqmCheck::SteadyDelay {
                    target_s: 0.005,
                    from_s: 5.0,
                    tolerance: 0.0,
                    at_most: true,
                    min_utilisation: 0.8,
                },
            ));
        }
    }
    if want("red-average-queue") {
        // tc-red's example thresholds with max_p 50%, so the early region carries the drops.
        for (rate, lambda) in [("12.5Mbit", 12.5e6), ("11Mbit", 11e6)] {
            let m = 1.0 - 10e6 / lambda;
            runs.push(run(
                "red-average-queue",
                format!("{rate} into 10 Mbit/s (loses {:.1}%)", m * 100.0),
                &overload(rate, "{ model = \"red\", probability = \"50%\" }", 20),
                AqmCheck::RedAverage {
                    expected_bytes: red_average(m, 30_000.0, 90_000.0, 0.5),
                    rate_bps: 10e6,
                },
            ));
        }
    }
    if want("pie-target") {
        for stack in STACKS {
            runs.push(run(
                "pie-target",
                format!("{stack}, 10 Mbit/s 40 ms"),
                &saturating(stack, "\"pie\""),
                AqmCheck::SteadyDelay {
                    target_s: 0.015,
                    from_s: 5.0,
                    tolerance: 0.3,
                    at_most: false,
                    min_utilisation: 0.85,
                },
            ));
        }
    }
    let rtt_mix = "[run]\nduration = \"30s\"\nmeasure_from = \"10s\"\n\
         [link]\nrate = \"10Mbit\"\nrtt = \"20ms\"\nqueue = \"16bdp\"\nqdisc = \"fq_codel\"\n\
         [[flow]]\nname = \"r20\"\nstack = \"tcp\"\ncc = \"cubic\"\ndirection = \"down\"\n\
         [[flow]]\nname = \"r40\"\nstack = \"tcp\"\ncc = \"cubic\"\ndirection = \"down\"\n\
         server_access = { delay = \"10ms\" }\n\
         [[flow]]\nname = \"r80\"\nstack = \"quic\"\ncc = \"cubic\"\ndirection = \"down\"\n\
         server_access = { delay = \"30ms\" }\n\
         [[flow]]\nname = \"r160\"\nstack = \"tcp\"\ncc = \"cubic\"\ndirection = \"down\"\n\
         server_access = { delay = \"70ms\" }\n\
         [[probe]]\nflow = \"r20\"\ninterval = \"50ms\"\n";
    if want("fq-codel-sparse") {
        runs.push(run(
            "fq-codel-sparse",
            "probe beside 4 bulk flows".into(),
            rtt_mix,
            AqmCheck::SparseDelay {
                base_rtt_s: 0.020,
                target_s: 0.005,
            },
        ));
    }
    if want("fq-codel-rtt-fairness") {
        runs.push(run(
            "fq-codel-rtt-fairness",
            "RTT 20, 40, 80, 160 ms".into(),
            rtt_mix,
            AqmCheck::Fairness,
        ));
    }
    if want("aqm-ecn") {
        for stack in STACKS {
            let text = saturating(stack, "{ model = \"codel\", ecn = true }") + "ecn = true\n";
            runs.push(run(
                "aqm-ecn",
                format!("{stack} through CoDel with ECN"),
                &text,
                AqmCheck::EcnMarks,
            ));
        }
    }
    if want("dualpi2-l4s") {
        for stack in ["tcp", "quic-model"] {
            let text = format!(
                "[run]\nduration = \"20s\"\nmeasure_from = \"5s\"\n\
                 [link]\nrate = \"40Mbit\"\nrtt = \"20ms\"\nqueue = \"8bdp\"\nqdisc = \"dualpi2\"\n\
                 [[flow]]\nname = \"prague\"\nstack = \"{stack}\"\ncc = \"prague\"\ndirection = \"down\"\n\
                 [[flow]]\nname = \"cubic\"\nstack = \"{stack}\"\ncc = \"cubic\"\ndirection = \"down\"\n\
                 ecn = true\n"
            );
            // 10 ms of propagation and one 1500-byte serialization at 40 Mbit/s.
            let base = 0.010 + 1500.0 * 8.0 / 40e6;
            runs.push(run(
                "dualpi2-l4s",
                format!("{stack}: Prague + CUBIC, 40 Mbit/s 20 ms"),
                &text,
                AqmCheck::L4sDelay {
                    base_owd_s: base,
                    max_queue_s: 0.002,
                },
            ));
        }
    }
    runs
}

/// Rates (bit/s) of a scalable flow (window 2/p_L) and a classic one (Reno-friendly 1.22/√p_C,
/// or CUBIC's 1.054·(RTT/p_C)^¾ when larger) sharing `capacity_bps` through DualPI2 with
/// coupling `k` (p_C = (p_L/k)², RFC 9332 §2.1), at their round trips: the fluid model's
/// prediction of the split.
pub fn dualpi2_split(capacity_bps: f64, mss: f64, rtt_l: f64, rtt_c: f64, k: f64) -> (f64, f64) {
    let rates = |p_l: f64| {
        let p_c = (p_l / k).powi(2);
        let w_c = (1.22 / p_c.sqrt()).max(1.054 * (rtt_c / p_c).powf(0.75));
        (2.0 / p_l * mss * 8.0 / rtt_l, w_c * mss * 8.0 / rtt_c)
    };
    // The total falls as p_L rises: bisect on a log scale.
    let (mut lo, mut hi) = (1e-9_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        let (l, c) = rates(mid);
        if l + c > capacity_bps {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    rates(lo)
}

/// The verdict on one AQM run.
pub fn judge(r: &CaseRun, check: AqmCheck, result: &results::Run) -> PointResult {
    let down = &result.links["bottleneck_down"];
    let point = |expected: f64, measured: f64, tolerance: f64, unit: &str| PointResult {
        case: r.case.into(),
        label: r.label.clone(),
        expected,
        measured,
        error: measured / expected - 1.0,
        tolerance,
        pass: (measured / expected - 1.0).abs() <= tolerance,
        note: String::new(),
        unit: unit.into(),
        drawn_at: None,
    };
    let failed = result.flows.iter().find_map(|f| f.error.clone());
    let mut p = match check {
        AqmCheck::ControlLaw { expected_drops } => {
            let mut p = point(expected_drops, down.aqm_dropped_packets as f64, 0.02, "");
            p.note = format!(
                "interval/√count from the first drop at 110 ms; {} tail drops at the limit",
                down.dropped_queue_packets
            );
            p
        }
        AqmCheck::SteadyDelay {
            target_s,
            from_s,
            tolerance,
            at_most,
            min_utilisation,
        } => {
            let bins: Vec<f64> = result
                .series
                .iter()
                .filter(|row| row.t_s > from_s)
                .filter_map(|row| row.queue_delay_down_mean_ms)
                .collect();
            let mean = bins.iter().sum::<f64>() / bins.len().max(1) as f64 / 1e3;
            let mut p = point(target_s, mean, tolerance, "s");
            if at_most {
                p.pass = mean <= target_s;
            }
            p.pass &= down.utilisation >= min_utilisation;
            p.note = format!(
                "mean of {} bins from {from_s} s{}; p50 {:.1} ms, p95 {:.1} ms over the run; \
                 utilisation {:.1}% (min {:.0}%)",
                bins.len(),
                if at_most { ", at most the target" } else { "" },
                down.queue_delay_p50_s.unwrap_or(f64::NAN) * 1e3,
                down.queue_delay_p95_s.unwrap_or(f64::NAN) * 1e3,
                down.utilisation * 100.0,
                min_utilisation * 100.0
            );
            p
        }
        AqmCheck::RedAverage {
            expected_bytes,
            rate_bps,
        } => {
            let queued = down.queue_delay_mean_s.unwrap_or(f64::NAN) * rate_bps / 8.0;
            let mut p = point(expected_bytes, queued, 0.05, "B");
            p.note = format!(
                "mean queue delay × rate; lost {:.2}% early, {} tail drops",
                down.aqm_dropped_packets as f64 / down.offered_packets.max(1) as f64 * 100.0,
                down.dropped_queue_packets
            );
            p
        }
        AqmCheck::SparseDelay {
            base_rtt_s,
            target_s,
        } => {
            let rtt = result.probes.first().and_then(|p| p.rtt);
            let extra = rtt.map_or(f64::NAN, |d| d.p99_s - base_rtt_s);
            let mut p = point(target_s, extra, 0.0, "s");
            // One-sided: any queueing delay under one target passes.
            p.pass = extra <= target_s;
            p.note = format!(
                "probe p99 RTT − base RTT (at most one target); bulk flows' queue p50 {:.1} ms",
                down.queue_delay_p50_s.unwrap_or(f64::NAN) * 1e3
            );
            p
        }
        AqmCheck::Fairness => {
            let jain = result.fairness.as_ref().and_then(|f| f.jain).unwrap_or(0.0);
            let mut p = point(1.0, jain, 1.0 - MIN_JAIN, "");
            p.error = 1.0 - jain;
            p.pass = jain >= MIN_JAIN;
            let shares: Vec<String> = result
                .flows
                .iter()
                .map(|f| {
                    format!(
                        "{}: {}",
                        f.name,
                        units::si(f.window_goodput_bps.unwrap_or(f64::NAN), "bit/s")
                    )
                })
                .collect();
            p.note = shares.join(", ");
            p
        }
        AqmCheck::EcnMarks => {
            let f = &result.flows[0];
            let lost = f.packets_lost.unwrap_or(u64::MAX) as f64;
            let sent = f.packets_sent.unwrap_or(0).max(1) as f64;
            let mut p = point(MAX_ECN_LOSS, lost / sent, 0.0, "");
            p.error = lost / sent;
            p.pass = lost / sent <= MAX_ECN_LOSS
                && down.ce_marked_packets > 0
                && down.aqm_dropped_packets == 0;
            p.note = format!(
                "lost/sent (at most {MAX_ECN_LOSS}); {} CE marks, {} AQM drops",
                down.ce_marked_packets, down.aqm_dropped_packets
            );
            p
        }
        AqmCheck::L4sDelay {
            base_owd_s,
            max_queue_s,
        } => {
            let (l, c) = (&result.flows[0], &result.flows[1]);
            let queue = l.one_way_delay.map_or(f64::NAN, |d| d.p99_s - base_owd_s);
            let mut p = point(max_queue_s, queue, 0.0, "s");
            p.pass = queue <= max_queue_s;
            let rate = |f: &results::Flow| f.window_goodput_bps.unwrap_or(f64::NAN);
            // Round trips: the data direction's mean one-way delay and the idle return path.
            let rtt = |f: &results::Flow| f.one_way_delay.map_or(f64::NAN, |d| d.mean_s) + 0.010;
            let (pl, pc) = dualpi2_split(40e6, 1448.0, rtt(l), rtt(c), 2.0);
            p.note = format!(
                "Prague's p99 one-way delay above the base (at most {:.0} ms); CUBIC's queue p99 \
                 {:.1} ms; Prague {} : CUBIC {} (ratio {:.2}; the fluid model at their round trips \
                 predicts {:.2})",
                max_queue_s * 1e3,
                c.one_way_delay.map_or(f64::NAN, |d| d.p99_s - base_owd_s) * 1e3,
                units::si(rate(l), "bit/s"),
                units::si(rate(c), "bit/s"),
                rate(l) / rate(c),
                pl / pc
            );
            p
        }
    };
    if let Some(e) = failed {
        p.pass = false;
        p.note = e;
    }
    p
}

/// The point of a run that did not complete.
pub fn failed(r: &CaseRun, error: &str) -> PointResult {
    PointResult {
        case: r.case.into(),
        label: r.label.clone(),
        expected: f64::NAN,
        measured: f64::NAN,
        error: f64::NAN,
        tolerance: 0.0,
        pass: false,
        note: error.to_string(),
        unit: String::new(),
        drawn_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_law_counts_drops_by_hand() {
        // Drops at 0, 1, 1 + 1/√2 = 1.707, 1.707 + 1/√3 = 2.285: four by t = 2.3.
        assert_eq!(codel_drops(0.0, 2.3, 1.0), 4.0);
        assert_eq!(codel_drops(0.0, 2.28, 1.0), 3.0);
        assert_eq!(codel_drops(5.0, 4.0, 1.0), 0.0);
    }

    #[test]
    fn red_settles_where_its_drop_rate_meets_the_excess() {
        // m = 0.2 → p_b = 0.2 / 1.8 = 1/9 → avg = 30000 + 60000 · (1/9) / 0.5.
        let avg = red_average(0.2, 30_000.0, 90_000.0, 0.5);
        assert!((avg - (30_000.0 + 60_000.0 * 2.0 / 9.0)).abs() < 1e-6);
        assert_eq!(red_average(0.0, 30_000.0, 90_000.0, 0.5), 30_000.0);
    }

    #[test]
    fn the_fluid_split_meets_the_capacity_and_favours_the_shorter_round_trip() {
        let (l, c) = dualpi2_split(40e6, 1448.0, 0.0207, 0.0349, 2.0);
        assert!(((l + c) / 40e6 - 1.0).abs() < 1e-6, "{l} {c}");
        assert!((l / c - 1.38).abs() < 0.01, "{}", l / c);
        let (l, c) = dualpi2_split(40e6, 1448.0, 0.03, 0.03, 2.0);
        assert!(l < c * 1.0 && l > 0.5 * c, "equal round trips: {l} {c}");
    }

    #[test]
    fn every_case_has_runs_and_its_scenarios_parse() {
        // The queue cases close the suite's list, from CoDel's control law on.
        let first = super::super::CASES
            .iter()
            .position(|c| *c == "codel-control-law")
            .expect("listed");
        for &case in &super::super::CASES[first..] {
            let runs = plan(&|c| c == case);
            assert!(!runs.is_empty(), "{case}");
            assert!(runs.iter().all(|r| r.case == case));
        }
    }
}
