//! BBRv3's rules on hand-made rate samples and loss reports. Numbers: MSS 1000 B, minimum
//! RTT 10 ms, so a bandwidth of N packets per 10 ms is ⌈N · 2^24 / 10_000⌉ in BBR's units
//! (samples round up).

use super::*;

const MS: Duration = Duration::from_millis(1);
const MSS: u64 = 1000;

fn common() -> CommonCcConfig {
    CommonCcConfig {
        initial_window_packets: 10,
        loss_reduction_factor: 0.7,
        minimum_window_packets: 2,
    }
}

fn bw(n: u64) -> u64 {
    (n * BW_UNIT).div_ceil(10_000)
}

/// A BBRv3 and the transport's counters around it.
struct Path {
    b: Bbr3,
    now: Duration,
    delivered: u64,
}

impl Path {
    fn new(seed: u64) -> Path {
        Path {
            b: Bbr3::new(&common(), MSS, Duration::ZERO, seed),
            now: Duration::ZERO,
            delivered: 1,
        }
    }

    /// One ACK at `now + dt` delivering `acked` packets, whose sample is `n` packets over
    /// 10 ms; `round`: the sampled packet was sent after the current round (and loss round)
    /// began, so this ACK ends them.
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
        let (next, loss) = (self.b.next_round_delivered, self.b.loss_round_delivered);
        let prior = if round {
            next.max(loss)
        } else {
            next.min(loss).saturating_sub(1)
        };
        self.delivered += acked;
        let mut rs = RateSample {
            delivered: Some(n),
            interval: Some(10 * MS),
            prior_delivered: prior,
            prior_in_flight: in_flight + acked,
            acked_sacked: acked,
            rtt: Some(10 * MS),
            total_delivered: self.delivered,
            delivered_mstamp: self.now,
            srtt: 10 * MS,
            min_rtt: 10 * MS,
            next_departure: self.now,
            ..RateSample::default()
        };
        f(&mut rs);
        self.b.on_rate_sample(self.now, &rs, in_flight);
    }

    /// STARTUP through rounds of 10, 20, 40, 45, 45, 45 packets per 10 ms, then DRAIN
    /// down to 40 in flight (below the BDP of 46 with rounding): PROBE_BW's DOWN, which
    /// stays while the flight before the ACK (50) is above the BDP.
    fn enter_probe_bw(&mut self) {
        for n in [10, 20, 40, 45, 45, 45] {
            self.ack(10 * MS, n, n, true, 60);
        }
        assert_eq!(self.b.mode, Mode::Drain);
        self.ack(MS, 10, 45, false, 40);
        assert_eq!((self.b.mode, self.b.cycle), (Mode::ProbeBw, Cycle::Down));
    }

    /// DOWN with a flight below the BDP: CRUISE.
    fn enter_cruise(&mut self) {
        self.enter_probe_bw();
        self.ack(MS, 1, 45, false, 20);
        assert_eq!(self.b.cycle, Cycle::Cruise);
    }
}

/// The draft's gains: STARTUP 2.77 / 2, DRAIN 0.5 / 2, DOWN 0.9, CRUISE and REFILL 1, UP
/// 1.25 / 2.25, PROBE_RTT 1 / 0.5 (pacing / window, of 256).
#[test]
fn gains_per_state_are_the_drafts() {
    let g = Bbr3::gains;
    assert_eq!(g(Mode::Startup, Cycle::Down), (710, 512));
    assert_eq!(g(Mode::Drain, Cycle::Down), (128, 512));
    assert_eq!(g(Mode::ProbeBw, Cycle::Down), (230, 512));
    assert_eq!(g(Mode::ProbeBw, Cycle::Cruise), (256, 512));
    assert_eq!(g(Mode::ProbeBw, Cycle::Refill), (256, 512));
    assert_eq!(g(Mode::ProbeBw, Cycle::Up), (320, 576));
    assert_eq!(g(Mode::ProbeRtt, Cycle::Cruise), (256, 128));
    assert_eq!((BETA, LOSS_THRESH, HEADROOM), (180, 5, 38));
}

/// The pacing rate follows the state's gain once the pipe is full: DOWN paces at 0.9 of
/// the estimate (1% below, the pacing margin), CRUISE at 1.0.
#[test]
fn the_pacing_rate_applies_each_states_gain() {
    let mut p = Path::new(0);
    p.enter_probe_bw();
    let est = p.b.bw();
    assert_eq!(est, bw(45));
    assert_eq!(p.b.pacing_rate, rate_bytes_per_sec(est, MSS, 230));
    p.ack(MS, 1, 45, false, 20);
    assert_eq!(p.b.cycle, Cycle::Cruise);
    assert_eq!(p.b.pacing_rate, rate_bytes_per_sec(est, MSS, BBR_UNIT));
    assert_eq!(p.b.phase(), Phase::ProbeBw, "every phase is ProbeBw");
}

/// Three rounds in a row below 1.25 × the best rate (45 < 50 = 1.25 · 40) fill the pipe;
/// with 25% growth each round STARTUP goes on.
#[test]
fn startup_exits_on_a_bandwidth_plateau_of_three_rounds() {
    let mut p = Path::new(0);
    for (k, n) in [10, 20, 40, 45, 45].into_iter().enumerate() {
        p.ack(10 * MS, n, n, true, 60);
        assert_eq!(p.b.mode, Mode::Startup, "round {k}");
        assert_eq!((p.b.pacing_gain, p.b.cwnd_gain), (710, 512));
    }
    assert_eq!(p.b.full_bw_cnt, 2);
    p.ack(10 * MS, 45, 45, true, 60);
    assert!(p.b.full_bw_reached);
    assert_eq!(p.b.full_bw, bw(40), "the last rate that grew by 25%");
    assert_eq!(p.b.mode, Mode::Drain, "60 in flight is above the BDP of 45");
    assert_eq!(p.b.pacing_gain, DRAIN_PACING_GAIN);
    assert_eq!(p.b.ssthresh(), Some(p.b.inflight(bw(45), BBR_UNIT) * MSS));

    let mut q = Path::new(0);
    let mut n = 10;
    for _ in 0..8 {
        q.ack(10 * MS, n, n, true, 60);
        n = n * 5 / 4 + 1;
    }
    assert_eq!(q.b.mode, Mode::Startup, "25% growth every round");
}

/// DRAIN ends when the network holds at most a BDP, or after 3 rounds anyway.
#[test]
fn drain_ends_at_one_bdp_or_after_three_rounds() {
    let mut p = Path::new(0);
    for n in [10, 20, 40, 45, 45, 45] {
        p.ack(10 * MS, n, n, true, 200);
    }
    for k in 0..3 {
        assert_eq!(p.b.mode, Mode::Drain, "round {k} of DRAIN");
        p.ack(10 * MS, 45, 45, true, 200);
    }
    assert_eq!(p.b.mode, Mode::Drain, "3 rounds are not yet more than 3");
    p.ack(10 * MS, 45, 45, true, 200);
    assert_eq!((p.b.mode, p.b.cycle), (Mode::ProbeBw, Cycle::Down));
}

/// STARTUP rounds that double the rate, then one round of fast recovery with `events` ACKs
/// finding losses, ended by an ACK whose sampled flight of 100 lost `lost`.
fn startup_loss_round(events: u64, lost: u64) -> Path {
    let mut p = Path::new(0);
    for n in [10, 20, 40] {
        p.ack(10 * MS, n, n, true, 80);
    }
    for _ in 0..events {
        p.ack_with(MS, 5, 60, false, 80, |rs| {
            rs.losses = 1;
            rs.ca_state = CaState::Recovery;
        });
    }
    p.ack_with(MS, 5, 80, true, 80, |rs| {
        rs.ca_state = CaState::Recovery;
        rs.tx_in_flight = 100;
        rs.lost = lost;
    });
    p
}

/// STARTUP's loss exit: a round of recovery with at least 6 loss events and more than 2%
/// of the sampled flight lost fills the pipe, and inflight_hi is the larger of the BDP and
/// the most the round delivered. Fewer events, or 2% or less, do not.
#[test]
fn startup_exits_on_loss_above_two_percent_with_six_loss_events() {
    let p = startup_loss_round(6, 3);
    assert!(p.b.full_bw_reached);
    assert_eq!(p.b.mode, Mode::Drain);
    let bdp = p.b.inflight(p.b.max_bw(), BBR_UNIT);
    assert_eq!(p.b.inflight_hi, bdp.max(80), "max(BDP, 80 delivered)");
    assert_ne!(p.b.inflight_hi, UNSET);

    let p = startup_loss_round(5, 3);
    assert!(!p.b.full_bw_reached, "5 loss events are too few");
    assert_eq!(p.b.inflight_hi, UNSET);
    // 2 of 100 is 2%, not above it (100 · 5/256 rounds down to 1 packet).
    let p = startup_loss_round(6, 1);
    assert!(!p.b.full_bw_reached, "a loss rate of 1%");
    let p = startup_loss_round(6, 2);
    assert!(p.b.full_bw_reached, "2 > 1.95 packets");
}

/// A PROBE_BW flow in UP, probing: `inflight_hi` set, the window at 60.
fn probing_up() -> Path {
    let mut p = Path::new(0);
    p.enter_cruise();
    p.b.start_probe_refill();
    p.b.bw_probe_samples = true;
    p.b.start_probe_up(bw(45));
    p.b.cwnd = 60;
    p
}

/// A lost packet sent while probing, whose flight lost more than 2% since it was sent,
/// sets inflight_hi to the volume where the loss rate crossed 2% and ends UP; once per
/// probe. Outside probing, or at 2%, it does not.
#[test]
fn inflight_hi_comes_from_the_flight_of_a_lost_packet() {
    let mut p = probing_up();
    // 2 of a flight of 200: below 2% (200 · 5/256 = 3).
    let low = LostPacket {
        tx_in_flight: 200,
        lost: 2,
        is_app_limited: false,
    };
    p.b.on_packet_lost(p.now, &low);
    assert_eq!(p.b.inflight_hi, UNSET);
    assert!(p.b.loss_in_round, "any loss marks the round");
    assert_eq!(p.b.cycle, Cycle::Up);
    // 2 of 100: 99 were in flight before it with 1 lost; the budget of 2% of 99 is 2
    // packets, 1 short, which 1 · 256/251 more packets of flight cover: 99 + 1 = 100.
    let high = LostPacket {
        tx_in_flight: 100,
        lost: 2,
        is_app_limited: false,
    };
    assert_eq!(Bbr3::inflight_at_loss(&high), 100);
    p.b.on_packet_lost(p.now, &high);
    assert_eq!(p.b.inflight_hi, 100, "above 0.7 of the target of 60");
    assert!(p.b.prev_probe_too_high);
    assert_eq!(p.b.cycle, Cycle::Down, "UP ends");
    // Once per probe: a later loss of the same probe changes nothing.
    let worse = LostPacket {
        tx_in_flight: 80,
        lost: 10,
        is_app_limited: false,
    };
    p.b.on_packet_lost(p.now, &worse);
    assert_eq!(p.b.inflight_hi, 100);

    // The same loss outside probing only marks the loss round.
    let mut q = Path::new(0);
    q.enter_cruise();
    q.b.on_packet_lost(q.now, &high);
    assert_eq!(q.b.inflight_hi, UNSET);
    assert_eq!(q.b.cycle, Cycle::Cruise);
}

/// When the flight at loss is small, inflight_hi is lowered by β only: 0.7 of the target
/// (the BDP, or the window if smaller). An application-limited flight leaves it alone.
#[test]
fn inflight_hi_falls_at_most_to_beta_of_the_target() {
    let mut p = probing_up();
    let target = p.b.target_inflight();
    let floor = (target * BETA) >> BBR_SCALE;
    assert!(floor > 20, "the floor {floor} decides");
    // On an ACK: 5 lost of a sampled flight of 20.
    p.ack_with(MS, 1, 45, false, 40, |rs| {
        rs.tx_in_flight = 20;
        rs.lost = 5;
    });
    assert_eq!(p.b.inflight_hi, floor);
    assert_eq!(p.b.cycle, Cycle::Down);

    let mut q = probing_up();
    q.b.on_packet_lost(
        q.now,
        &LostPacket {
            tx_in_flight: 20,
            lost: 5,
            is_app_limited: true,
        },
    );
    assert_eq!(
        q.b.inflight_hi, UNSET,
        "app-limited: not a probe of the volume"
    );
    assert!(q.b.prev_probe_too_high);
}

/// Each loss round outside probing cuts bw_lo and inflight_lo to 0.7 of themselves (from
/// max_bw and the window at the first), no lower than what the round delivered; REFILL
/// forgets both.
#[test]
fn the_short_term_model_falls_by_beta_per_loss_round_and_resets_at_refill() {
    let mut p = Path::new(0);
    p.enter_cruise();
    let cwnd = p.b.cwnd;
    // A loss round delivering 10 packets per 10 ms.
    p.ack(10 * MS, 10, 10, true, 30);
    p.ack_with(MS, 10, 10, false, 30, |rs| rs.losses = 1);
    p.ack(10 * MS, 10, 10, true, 30);
    assert_eq!(p.b.bw_lo, (bw(45) * BETA) >> BBR_SCALE);
    assert_eq!(p.b.inflight_lo, (cwnd * BETA) >> BBR_SCALE);
    assert_eq!(p.b.bw(), p.b.bw_lo, "the short-term rate bounds the model");
    assert!(p.b.cwnd <= p.b.inflight_lo);
    // A second loss round: 0.7 of 0.7.
    let (bw_lo, inflight_lo) = (p.b.bw_lo, p.b.inflight_lo);
    p.ack_with(MS, 10, 10, false, 30, |rs| rs.losses = 1);
    p.ack(10 * MS, 10, 10, true, 30);
    assert_eq!(p.b.bw_lo, (bw_lo * BETA) >> BBR_SCALE);
    assert_eq!(p.b.inflight_lo, (inflight_lo * BETA) >> BBR_SCALE);
    // A round without loss keeps them.
    p.ack(10 * MS, 10, 10, true, 30);
    assert_eq!(p.b.bw_lo, (bw_lo * BETA) >> BBR_SCALE);
    // Time to probe (the wait is at most 3 s): REFILL, both reset.
    p.ack(3000 * MS, 10, 10, false, 30);
    assert_eq!(p.b.cycle, Cycle::Refill);
    assert_eq!((p.b.bw_lo, p.b.inflight_lo), (UNSET, UNSET));
}

/// A loss round cuts no lower than what the round delivered: a volume of 0.9 of the window
/// (above 0.7 of it) becomes inflight_lo as it is, and bw_lo the round's best rate.
#[test]
fn the_short_term_cut_stops_at_the_latest_delivery() {
    let mut p = Path::new(0);
    p.enter_cruise();
    let cwnd = p.b.cwnd;
    let high = cwnd * 9 / 10;
    assert!(high > (cwnd * BETA) >> BBR_SCALE);
    // `high` packets over 20 ms per sample.
    let slow = |rs: &mut RateSample| rs.interval = Some(20 * MS);
    p.ack_with(10 * MS, 10, high, true, 30, slow);
    p.ack_with(MS, 10, high, false, 30, |rs| {
        slow(rs);
        rs.losses = 1;
    });
    p.ack_with(10 * MS, 10, high, true, 30, slow);
    assert_eq!(p.b.inflight_lo, high);
    let latest = (high * BW_UNIT).div_ceil(20_000);
    assert!(latest > (bw(45) * BETA) >> BBR_SCALE);
    assert_eq!(p.b.bw_lo, latest);
}

/// PROBE_BW goes DOWN → CRUISE → REFILL → UP: CRUISE once the flight is at most the BDP,
/// REFILL when the seeded wait (2–3 s) is over, UP after one round of REFILL. In UP, while
/// the window is limited by inflight_hi, inflight_hi grows by 1, 2, 4, 8 packets in
/// successive rounds.
#[test]
fn probe_bw_cycles_down_cruise_refill_up_and_up_doubles_its_growth() {
    let mut p = Path::new(7);
    p.enter_probe_bw();
    assert_eq!(p.b.cycle, Cycle::Down);
    let wait = p.b.probe_wait;
    assert!(wait >= 2000 * MS && wait < 3000 * MS, "{wait:?}");
    // A flight above the BDP keeps DOWN.
    p.ack(MS, 1, 45, false, 80);
    assert_eq!(p.b.cycle, Cycle::Down);
    p.ack(MS, 1, 45, false, 20);
    assert_eq!(p.b.cycle, Cycle::Cruise);
    // Not yet: the wait runs from DOWN's start.
    p.ack(wait - 10 * MS, 1, 45, false, 40);
    assert_eq!(p.b.cycle, Cycle::Cruise);
    p.ack(20 * MS, 1, 45, false, 40);
    assert_eq!(p.b.cycle, Cycle::Refill);
    assert_eq!(
        (p.b.pacing_gain, p.b.cwnd_gain),
        (BBR_UNIT, DEFAULT_CWND_GAIN)
    );
    // A long-term volume to grow: 40 packets, the window held to it.
    p.b.inflight_hi = 40;
    p.ack(MS, 1, 45, false, 40);
    assert_eq!(p.b.cwnd, 40);
    p.ack(10 * MS, 40, 45, true, 40);
    assert_eq!(p.b.cycle, Cycle::Up);
    assert_eq!(
        (p.b.pacing_gain, p.b.cwnd_gain),
        (UP_PACING_GAIN, UP_CWND_GAIN)
    );
    assert!(p.b.bw_probe_samples);
    assert_eq!(p.b.bw_probe_up_cnt, 40, "round 1: one packet per window");
    // Rounds of one-packet ACKs, a window's worth each, the window always full: the last
    // ACK of each round ends it. Round k adds a packet to inflight_hi every ⌊cwnd / 2^k⌋
    // packets acknowledged (from k = 0), so it grows by about 1, 2, 4, 8 (a little more where
    // the division rounds down).
    let limited = |rs: &mut RateSample| rs.is_cwnd_limited = true;
    let mut growth = Vec::new();
    for k in 0..4 {
        assert_eq!(p.b.bw_probe_up_rounds, k + 1);
        let before = p.b.inflight_hi;
        let n = p.b.cwnd;
        for i in 1..=n {
            let cwnd = p.b.cwnd;
            p.ack_with(MS, 1, 45, i == n, cwnd, limited);
            assert_eq!(
                p.b.cycle,
                Cycle::Up,
                "inflight_hi limits the rate: no plateau"
            );
            assert_eq!(p.b.cwnd, p.b.inflight_hi, "the window follows inflight_hi");
        }
        growth.push(p.b.inflight_hi - before);
        // The round's end doubles the slope for the next one.
        assert_eq!(p.b.bw_probe_up_cnt, (p.b.cwnd - 1) / (2 << k));
    }
    assert_eq!(growth, [1, 2, 4, 10]);
    assert_eq!(p.b.cwnd, p.b.inflight_hi, "the window follows inflight_hi");
}

/// UP ends on a rate plateau when inflight_hi does not limit it, and the round after UP
/// advances the bandwidth filter by a cycle.
#[test]
fn up_ends_on_a_plateau_and_the_filter_advances_a_round_later() {
    let mut p = Path::new(0);
    p.enter_cruise();
    p.b.start_probe_refill();
    p.ack(10 * MS, 45, 45, true, 40);
    assert_eq!(p.b.cycle, Cycle::Up);
    for _ in 0..3 {
        assert_eq!(p.b.cycle, Cycle::Up);
        p.ack(10 * MS, 45, 45, true, 40);
    }
    assert_eq!(p.b.cycle, Cycle::Down, "three rounds without 25% growth");
    assert!(!p.b.prev_probe_too_high);
    let cycles = p.b.cycle_count;
    p.ack(10 * MS, 45, 45, true, 40);
    assert_eq!(p.b.cycle_count, cycles + 1);
}

/// PROBE_RTT comes 5 s after the last RTT sample that undercut the minimum, holds the
/// window at half the BDP (⌈45 / 2⌉ = 23) for 200 ms and a round, then restores the
/// window and cruises.
#[test]
fn probe_rtt_after_five_seconds_at_half_the_bdp() {
    let mut p = Path::new(0);
    p.enter_cruise();
    let stamp = p.b.probe_rtt_min_stamp;
    let rtt12 = |rs: &mut RateSample| rs.rtt = Some(12 * MS);
    // Higher RTTs every 100 ms up to 5 s after the minimum's stamp: no PROBE_RTT.
    while p.now + 100 * MS <= stamp + PROBE_RTT_INTERVAL {
        p.ack_with(100 * MS, 45, 45, true, 40, rtt12);
        assert_ne!(p.b.mode, Mode::ProbeRtt, "at {:?}", p.now);
    }
    let saved = p.b.cwnd;
    p.ack_with(100 * MS, 45, 45, true, 40, rtt12);
    assert_eq!(p.b.mode, Mode::ProbeRtt);
    assert_eq!(p.b.probe_rtt_cwnd(), 23);
    assert_eq!(p.b.cwnd, 23.min(saved));
    assert!(p.b.marks_app_limited());
    assert_eq!(
        (p.b.pacing_gain, p.b.cwnd_gain),
        (BBR_UNIT, PROBE_RTT_CWND_GAIN)
    );
    // The flight falls to 23: 200 ms and a round from now.
    p.ack_with(MS, 10, 45, false, 20, rtt12);
    let done = p.b.probe_rtt_done_stamp.expect("started");
    assert_eq!(done, p.now + PROBE_RTT_DURATION);
    p.ack_with(100 * MS, 10, 45, true, 20, rtt12);
    assert_eq!(p.b.mode, Mode::ProbeRtt, "a round, but not 200 ms");
    p.ack_with(101 * MS, 10, 45, true, 20, rtt12);
    assert_eq!((p.b.mode, p.b.cycle), (Mode::ProbeBw, Cycle::Cruise));
    assert!(p.b.cwnd >= saved.min(p.b.prior_cwnd));
    assert_eq!(p.b.probe_rtt_min_stamp, p.now, "the next one is 5 s away");
}

/// The probe wait is 2–3 s and the round bound 0–1 extra rounds, both from the seed.
#[test]
fn the_probe_wait_is_seeded() {
    let waits = |seed| {
        let mut p = Path::new(seed);
        p.enter_probe_bw();
        (p.b.probe_wait, p.b.rounds_since_probe)
    };
    assert_eq!(waits(3), waits(3));
    let all: Vec<_> = (0..16).map(waits).collect();
    assert!(all.iter().all(|(w, _)| *w >= 2000 * MS && *w < 3000 * MS));
    assert!(
        all.iter().any(|a| a.0 != all[0].0),
        "different seeds differ"
    );
}

/// Leaving recovery restores the window saved at its start; the model's bounds then apply.
#[test]
fn recovery_saves_and_restores_the_window() {
    let mut p = Path::new(0);
    p.enter_cruise();
    let before = p.b.cwnd;
    p.b.on_congestion_event(p.now, p.now, false, 1000);
    p.b.cwnd = 10;
    p.ack_with(MS, 1, 45, false, 10, |rs| rs.ca_state = CaState::Recovery);
    p.ack(MS, 1, 45, false, 10);
    assert_eq!(p.b.cwnd, before);
}
