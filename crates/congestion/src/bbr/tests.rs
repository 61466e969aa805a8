//! BBR's state machine on hand-made rate samples. Numbers: MSS 1000 B, minimum RTT 10 ms, so
//! a bandwidth of N packets per 10 ms is `N · 2^24 / 10_000` in BBR's units.

use super::*;

const MS: Duration = Duration::from_millis(1);
const MSS: u64 = 1000;

fn common() -> CommonCcConfig {
    CommonCcConfig {
        initial_window_packets: 10,
        loss_reduction_factor: 0.5,
        minimum_window_packets: 2,
    }
}

/// A BBR and the transport's counters around it.
struct Path {
    b: Bbr,
    now: Duration,
    delivered: u64,
    lost: u64,
}

impl Path {
    fn new(seed: u64) -> Path {
        Path {
            b: Bbr::new(&common(), MSS, Duration::ZERO, seed),
            now: Duration::ZERO,
            delivered: 1,
            lost: 0,
        }
    }

    /// One ACK at `now + dt` delivering `acked` packets, whose sample is `n` packets over
    /// 10 ms; `round`: the sample's packet was sent after the previous round started.
    fn ack(&mut self, dt: Duration, acked: u64, n: u64, round: bool, in_flight: u64) {
        self.ack_with(dt, acked, n, round, in_flight, |_| {});
    }

    fn ack_with(
        &mut self,
        dt: Duration,
        acked: u64,
        n: u64,
        round: bool,
        in_flight: u64,
        f: impl FnOnce(&mut RateSample),
    ) {
        self.now += dt;
        let prior = if round {
            self.b.next_rtt_delivered
        } else {
            self.b.next_rtt_delivered.saturating_sub(1)
        };
        self.delivered += acked;
        let mut rs = RateSample {
            delivered: Some(n),
            interval: Some(10 * MS),
            prior_delivered: prior,
            prior_in_flight: in_flight + acked,
            is_app_limited: false,
            is_ack_delayed: false,
            losses: 0,
            acked_sacked: acked,
            rtt: Some(10 * MS),
            total_delivered: self.delivered,
            total_lost: self.lost,
            delivered_mstamp: self.now,
            srtt: 10 * MS,
            min_rtt: 10 * MS,
            next_departure: self.now,
            ca_state: CaState::Open,
            tx_in_flight: 0,
            lost: 0,
            is_cwnd_limited: false,
        };
        f(&mut rs);
        self.lost = rs.total_lost;
        self.b.on_rate_sample(self.now, &rs, in_flight);
    }

    /// STARTUP through rounds of 10, 20, 40, 45, 45, 45 packets per 10 ms: the pipe is
    /// full at the third round without 25% growth.
    fn fill_pipe(&mut self, last_in_flight: u64) {
        for (k, n) in [10, 20, 40, 45, 45].into_iter().enumerate() {
            self.ack(10 * MS, n, n, true, 20);
            assert_eq!(self.b.mode, Mode::Startup, "round {k}");
        }
        self.ack(10 * MS, 45, 45, true, last_in_flight);
    }
}

fn bw(n: u64) -> u64 {
    n * BW_UNIT / 10_000
}

#[test]
fn constants_are_linuxs() {
    assert_eq!((HIGH_GAIN, DRAIN_GAIN, CWND_GAIN), (739, 88, 512));
    assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
    assert_eq!(BW_RTTS, 10);
}

/// bbr_init paces at high_gain · cwnd / RTT: a nominal 1 ms before any RTT sample, the SRTT
/// at the first ACK. 10 packets / 10 ms = 16777 units; · 1000 B · 739 / 256 · 0.99 → 2857814 B/s.
#[test]
fn initial_pacing_rate_comes_from_the_window_and_the_srtt() {
    let mut p = Path::new(0);
    // 10 · 2^24 / 1000 = 167772 units: 10 packets per ms.
    assert_eq!(p.b.pacing_rate, p.b.rate_bytes_per_sec(167_772, HIGH_GAIN));
    assert_eq!(p.b.phase(), Phase::Startup);
    assert_eq!(p.b.window(), 10 * MSS);
    // The first ACK: no bandwidth above the SRTT-based rate yet.
    p.ack(10 * MS, 1, 1, true, 9);
    assert!(p.b.has_seen_rtt);
    assert_eq!(bw(10), 16_777);
    assert_eq!(p.b.pacing_rate, 2_857_814);
    // STARTUP grows the window by what was acknowledged (below target, or early).
    assert_eq!(p.b.cwnd, 11);
}

/// Full-pipe detection: the third round in a row with less than 25% growth over the best
/// (40 → 45 < 50) ends STARTUP; DRAIN runs until the packets in the network are at most one
/// BDP plus the quantization budget, then PROBE_BW starts.
#[test]
fn three_rounds_without_growth_end_startup_and_drain_ends_at_one_bdp() {
    let mut p = Path::new(0);
    p.fill_pipe(200);
    assert!(p.b.full_bw_reached);
    assert_eq!(p.b.full_bw, bw(40), "the last bandwidth that grew by 25%");
    assert_eq!(
        p.b.mode,
        Mode::Drain,
        "200 packets in flight are above a BDP"
    );
    assert_eq!(p.b.pacing_gain, DRAIN_GAIN);
    assert_eq!(p.b.cwnd_gain, HIGH_GAIN);
    // ssthresh = BDP 45 + 3 · TSO goal + rounding. The pacing rate then was STARTUP's:
    // 45 packets/10 ms · 739/256 · 0.99 ≈ 12.86 MB/s; >> 10 = 12561 B = 12 segments.
    assert_eq!(p.b.ssthresh(), Some((45u64 + 3 * 12).div_ceil(2) * 2 * MSS));
    // With the queue drained below that, PROBE_BW starts, at a phase other than 3/4.
    p.ack(MS, 1, 45, false, 40);
    assert_eq!(p.b.mode, Mode::ProbeBw);
    assert_ne!(p.b.cycle_idx, 1);
    assert_eq!(p.b.cwnd_gain, CWND_GAIN);
    assert_eq!(p.b.pacing_gain, PACING_GAIN[p.b.cycle_idx]);
}

/// The start phase is bbr_reset_probe_bw_mode's: 7 − rand(7), then one step on: every
/// phase but 3/4, from the seed alone.
#[test]
fn the_random_start_phase_is_seeded_and_never_the_drain_phase() {
    let mut seen = [false; CYCLE_LEN];
    for seed in 0..200 {
        let mut p = Path::new(seed);
        p.fill_pipe(10);
        assert_eq!(p.b.mode, Mode::ProbeBw);
        seen[p.b.cycle_idx] = true;
        // Same seed, same phase.
        let mut q = Path::new(seed);
        q.fill_pipe(10);
        assert_eq!(q.b.cycle_idx, p.b.cycle_idx);
    }
    assert_eq!(seen, [true, false, true, true, true, true, true, true]);
}

/// The gain cycle: 5/4 lasts at least a minimum RTT and until in flight reaches 5/4 BDP (or
/// a loss); 3/4 ends as soon as in flight is down to one BDP; the others last one min RTT.
#[test]
fn the_gain_cycle_probes_drains_and_cruises() {
    let mut p = Path::new(0);
    p.fill_pipe(10);
    p.b.cycle_idx = 0;
    p.b.cycle_mstamp = p.now;
    p.b.pacing_gain = PACING_GAIN[0];
    // BDP at 45 packets/10 ms is 45; at gain 5/4, ⌈56.25⌉ = 57, plus 3 · TSO goal + even
    // rounding + 2 (phase 0) = 57 + 3·g → even, + 2.
    let g = p.b.tso_segs_goal();
    let probe_target = (57 + 3 * g).div_ceil(2) * 2 + 2;
    assert_eq!(p.b.inflight(bw(45), PACING_GAIN[0]), probe_target);
    // Not yet a min RTT: stays, whatever is in flight.
    p.ack(5 * MS, 1, 45, false, probe_target + 10);
    assert_eq!(p.b.cycle_idx, 0);
    // A min RTT (strictly more) but in flight short of the target (+ TSO goal counted at
    // the next departure while probing) and no loss: stays.
    p.ack(
        5 * MS + Duration::from_micros(1),
        1,
        45,
        false,
        probe_target - g - 2,
    );
    assert_eq!(p.b.cycle_idx, 0);
    // A loss ends the probe.
    p.ack_with(MS, 1, 45, false, 10, |rs| {
        rs.losses = 1;
        rs.total_lost += 1;
    });
    assert_eq!(p.b.cycle_idx, 1);
    assert_eq!(p.b.pacing_gain, PACING_GAIN[1]);
    // 3/4: in flight at most one BDP (+ budget) ends it at once.
    let cruise = p.b.inflight(bw(45), BBR_UNIT);
    p.ack(MS, 1, 45, false, cruise + 5);
    assert_eq!(p.b.cycle_idx, 1, "in flight still above a BDP");
    p.ack(MS, 1, 45, false, cruise - 1);
    assert_eq!(p.b.cycle_idx, 2);
    // Gain 1: one phase per min RTT.
    p.ack(10 * MS, 1, 45, false, cruise);
    assert_eq!(
        p.b.cycle_idx, 2,
        "exactly 10 ms is not more than the min RTT"
    );
    p.ack(Duration::from_micros(1), 1, 45, false, cruise);
    assert_eq!(p.b.cycle_idx, 3);
}

/// PROBE_RTT: the 10 s old minimum RTT sends BBR to a 4-packet window; 200 ms after in
/// flight first fell to 4, and a round later, the saved window comes back and PROBE_BW
/// resumes with a fresh 10 s window.
#[test]
fn probe_rtt_enters_after_ten_seconds_and_exits_after_200_ms_and_a_round() {
    let mut p = Path::new(0);
    p.fill_pipe(10);
    assert_eq!(p.b.mode, Mode::ProbeBw);
    let before = p.b.cwnd;
    // RTT samples above the minimum until the filter is 10 s old: then PROBE_RTT.
    let rtt = |rs: &mut RateSample| rs.rtt = Some(12 * MS);
    let start = p.b.min_rtt_stamp;
    p.now = start + MIN_RTT_WIN;
    p.ack_with(Duration::ZERO, 1, 45, false, 50, rtt);
    assert_eq!(p.b.mode, Mode::ProbeBw, "exactly 10 s is not expired");
    p.ack_with(MS, 1, 45, false, 50, rtt);
    assert_eq!(p.b.mode, Mode::ProbeRtt);
    assert_eq!(p.b.phase(), Phase::ProbeRtt);
    assert_eq!(
        p.b.min_rtt_us,
        Some(12_000),
        "the expired filter took the sample"
    );
    assert_eq!(p.b.cwnd, CWND_MIN_TARGET);
    assert_eq!(p.b.prior_cwnd, before, "saved for the exit");
    assert!(p.b.marks_app_limited());
    assert_eq!((p.b.pacing_gain, p.b.cwnd_gain), (BBR_UNIT, BBR_UNIT));
    // In flight falls to 4: the 200 ms start now.
    p.ack(MS, 1, 45, false, 4);
    let done = p.b.probe_rtt_done_stamp.expect("200 ms running");
    assert_eq!(done, p.now + PROBE_RTT_MODE);
    // After 200 ms but no round yet: stays.
    p.ack(201 * MS, 1, 4, false, 4);
    assert_eq!(p.b.mode, Mode::ProbeRtt);
    // A round start: exit, window restored, filter window restarted.
    p.ack(MS, 4, 4, true, 4);
    assert_eq!(p.b.mode, Mode::ProbeBw);
    assert_eq!(p.b.min_rtt_stamp, p.now);
    assert!(p.b.cwnd >= before.min(p.b.inflight(bw(45), CWND_GAIN)));
}

/// Packet conservation: the first recovery ACK sets the window to in flight + acked and
/// keeps at least that for the round; leaving recovery restores the window saved on entry.
#[test]
fn recovery_starts_with_packet_conservation_and_restores_the_window() {
    let mut p = Path::new(0);
    p.fill_pipe(10);
    let saved = p.b.cwnd;
    p.b.on_congestion_event(p.now, p.now, false, 3 * MSS);
    assert_eq!(p.b.prior_cwnd, saved);
    let recovery = |rs: &mut RateSample| {
        rs.ca_state = CaState::Recovery;
        rs.losses = 3;
        rs.total_lost += 3;
    };
    p.ack_with(MS, 2, 45, false, 30, recovery);
    assert!(p.b.packet_conservation);
    assert_eq!(p.b.cwnd, 30 + 2, "in flight + acked");
    // Still the first round: an ACK of 1 with 25 in flight keeps max(cwnd, 26).
    p.ack_with(MS, 1, 45, false, 25, |rs| rs.ca_state = CaState::Recovery);
    assert_eq!(p.b.cwnd, 32);
    // Recovery ends: the saved window is back.
    p.ack(MS, 1, 45, false, 25);
    assert!(!p.b.packet_conservation);
    assert!(p.b.cwnd >= saved.min(p.b.inflight(bw(45), CWND_GAIN)));
}

/// Long-term sampling: two 4-round intervals with ≥ 20% loss and the same delivery rate
/// mean a policer: BBR then uses their average at gain 1 for 48 rounds.
#[test]
fn a_policer_is_detected_from_two_lossy_intervals_with_one_rate() {
    let mut p = Path::new(0);
    p.fill_pipe(10);
    let lossy = |lost: u64| {
        move |rs: &mut RateSample| {
            rs.losses = lost;
            rs.total_lost += lost;
        }
    };
    // The first loss starts sampling (the interval starts at this ACK's counters; not a
    // round start, so the interval's rounds are the four below).
    p.ack_with(MS, 1, 45, false, 10, lossy(1));
    assert!(p.b.lt_is_sampling);
    // Each interval: 4 rounds of 10 ms delivering 10 packets and losing 3 (30%): 40
    // packets over 40 ms = 10 packets per 10 ms, ending at the loss in round 4.
    for interval in 0..2 {
        for r in 0..4 {
            p.ack_with(10 * MS, 10, 45, true, 10, lossy(3));
            assert_eq!(p.b.lt_use_bw, interval == 1 && r == 3, "{interval} {r}");
        }
        if interval == 0 {
            assert_eq!(p.b.lt_bw, 40 * BW_UNIT / 40_000);
        }
    }
    assert_eq!(p.b.lt_bw, bw(10));
    assert_eq!(
        p.b.bw(),
        bw(10),
        "the policed rate, not the 45 of the filter"
    );
    assert_eq!(p.b.pacing_gain, BBR_UNIT);
    // 48 rounds later BBR probes again.
    for _ in 0..47 {
        p.ack(10 * MS, 10, 10, true, 10);
        assert!(p.b.lt_use_bw);
    }
    p.ack(10 * MS, 10, 10, true, 10);
    assert!(!p.b.lt_use_bw);
}

/// A retransmission timeout: the transport's window, a round end for the models, and the
/// saved window back once the Loss state ends.
#[test]
fn a_timeout_takes_the_transports_window_and_restores_after_loss() {
    let mut p = Path::new(0);
    p.fill_pipe(10);
    let saved = p.b.cwnd;
    p.b.on_retransmission_timeout(p.now, true, MSS);
    assert_eq!(p.b.cwnd, 1);
    assert_eq!(p.b.prev_ca_state, CaState::Loss);
    assert_eq!(p.b.full_bw, 0);
    // In the Loss state the window grows by what is acknowledged, from BBR's floor of 4.
    p.ack_with(MS, 1, 45, false, 1, |rs| rs.ca_state = CaState::Loss);
    assert_eq!(p.b.cwnd, CWND_MIN_TARGET);
    // Leaving it restores the saved window (then capped by the target as usual: 2 BDP plus
    // the aggregation allowance and the quantization budget).
    p.ack(MS, 1, 45, false, 1);
    let target =
        p.b.quantization_budget(p.b.bdp(bw(45), CWND_GAIN) + p.b.ack_aggregation_cwnd());
    assert_eq!(p.b.cwnd, (saved + 1).min(target));
    assert!(p.b.cwnd > CWND_MIN_TARGET);
}

/// ACK aggregation: an ACK delivering far more than the bandwidth estimate predicts over its
/// epoch raises the window target by the excess (once the pipe is full).
#[test]
fn aggregated_acks_raise_the_window_target() {
    let mut p = Path::new(0);
    p.fill_pipe(10);
    // A new epoch: bw · 0 expected, 40 acknowledged at once.
    p.b.ack_epoch_mstamp = p.now;
    p.b.ack_epoch_acked = 0;
    p.b.extra_acked = [0, 0];
    p.ack(Duration::ZERO, 40, 45, false, 10);
    assert_eq!(p.b.extra_acked(), 40.min(p.b.cwnd));
    assert_eq!(p.b.ack_aggregation_cwnd(), p.b.extra_acked());
}
