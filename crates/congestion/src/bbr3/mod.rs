//! BBRv3 as the IETF CCWG draft (draft-ietf-ccwg-bbr) specifies it, in the TCP model. The
//! sender keeps two models of the path: a long-term one (the maximum bandwidth over the last
//! two probing cycles, `max_bw`, and the in-flight volume that last caused a loss rate above
//! 2%, `inflight_hi`, the draft's `inflight_longterm`) and a short-term one (`bw_lo` and
//! `inflight_lo`, the draft's `bw_shortterm` and `inflight_shortterm`, cut to 0.7 of
//! themselves, but never below what the last round delivered, in every round with a loss while
//! it is not probing). It paces at `pacing_gain · min(max_bw, bw_lo)` and caps what is in
//! flight at the BDP times `cwnd_gain`, plus the ACK aggregation allowance, bounded by the two
//! volume estimates.
//!
//! - **STARTUP**: pacing gain 2.77 (4 ln 2), window gain 2, until three rounds in a row (not
//!   application-limited) deliver less than 25% more than the best rate so far, or until a
//!   round of fast recovery ends with at least 6 ACKs that found losses and a loss rate
//!   above 2% of the sampled flight (then `inflight_hi` = max(BDP, the most the round
//!   delivered)).
//! - **DRAIN**: pacing gain 0.5 until the packets in the network are at most one BDP, or
//!   after 3 rounds.
//! - **PROBE_BW**, four phases: DOWN (pacing 0.9) until in flight is at most the BDP and
//!   leaves 15% of `inflight_hi` as headroom; CRUISE (1.0, capped at 85% of `inflight_hi`)
//!   until it is time to probe: 2–3 s after DOWN began (a random wait from the controller's
//!   seed) or after as many rounds as a Reno flow with our BDP would wait (at most 63, minus
//!   a random 0–1); REFILL (1.0, the short-term model forgotten) for one round; UP (pacing
//!   1.25, window gain 2.25) until the rate plateaus, the loss rate of a probing flight
//!   exceeds 2% or, after a probe that went too high, in flight reaches `inflight_hi`. In
//!   UP, while the window is limited by `inflight_hi`, `inflight_hi` grows by 1, 2, 4, 8 …
//!   packets in successive rounds. The bandwidth filter advances one cycle a round after UP
//!   ends.
//! - **PROBE_RTT**: when no RTT sample has undercut the 5 s minimum for 5 s, the window is
//!   half the BDP (at least 4 packets) for 200 ms and one round; samples meanwhile are
//!   marked application-limited. The minimum RTT filter spans 10 s.
//! - **Loss while probing**: each lost packet sent while probing is judged with the flight it
//!   was sent in (`on_packet_lost`): if more than 2% of what was in flight at its send has
//!   been lost since, `inflight_hi` becomes the in-flight volume at which the loss rate
//!   crossed 2% (at least 0.7 of the target in flight) and UP ends.
//!
//! Units are Linux's (see [`crate::bbr_common`]). Where the draft leaves a detail open, we
//! follow Google's BBRv3 `tcp_bbr.c` (v3 branch):
//! - STARTUP's loss exit counts ACKs that found losses as the draft's "discontiguous lost
//!   ranges" (the TCP model's SACK scoreboard does not name ranges) and checks the sample's
//!   loss rate at the end of each round of fast recovery.
//! - In-flight checks of DRAIN and DOWN use the packets in the network at the next departure
//!   time, since the pacing layer may hold a segment back past the ACK.
//! - Entering CRUISE clamps `inflight_lo` to `inflight_hi`; a retransmission timeout outside
//!   probing starts `inflight_lo` from the window before it, so the next loss round cuts from
//!   there.
//! - The round counter only advances on ACKs with a valid rate sample (an ACK without one
//!   says nothing about which flight it ends), and bandwidth samples are rounded up (so a
//!   low rate can still grow in integer units).
//!
//! Where the two differ in a constant we take the draft's: DRAIN paces at 0.5 and DOWN at 0.9
//! (Linux: 0.35 and 0.91), and DRAIN also ends after 3 rounds.
//!
//! Not modelled: a response to ECN marks (the draft leaves it experimental; CE feedback
//! only saves the window here, as a congestion event does), the undo of a spurious recovery
//! (the TCP model does not undo) and the offload allowance of a receiver's GRO.

#[cfg(test)]
mod tests;

use std::time::Duration;

use crate::bbr_common::filter::MaxFilter;
use crate::bbr_common::{
    bdp, micros, packets_in_net_at_edt, rate_bytes_per_sec, tso_segs_goal, window_per_rtt,
    SeededRng, BBR_SCALE, BBR_UNIT, BW_UNIT,
};
use crate::config::CommonCcConfig;
use crate::{CaState, CongestionController, LostPacket, Phase, RateSample, RttSample};

/// 4 ln 2, rounded up: the smallest gain that doubles the sending rate every round.
const STARTUP_PACING_GAIN: u64 = BBR_UNIT * 277 / 100 + 1;
/// The window gain outside UP and PROBE_RTT.
const DEFAULT_CWND_GAIN: u64 = BBR_UNIT * 2;
/// DRAIN's pacing gain: at most 1 / STARTUP's window gain empties its queue within a round.
const DRAIN_PACING_GAIN: u64 = BBR_UNIT / 2;
/// DOWN's pacing gain: the least slowdown that still lets flows converge on shares.
const DOWN_PACING_GAIN: u64 = BBR_UNIT * 90 / 100;
/// UP's pacing gain.
const UP_PACING_GAIN: u64 = BBR_UNIT * 5 / 4;
/// UP's window gain: sending faster must not be capped by the window it had.
const UP_CWND_GAIN: u64 = BBR_UNIT * 9 / 4;
/// PROBE_RTT's window: half the BDP.
const PROBE_RTT_CWND_GAIN: u64 = BBR_UNIT / 2;
/// The multiplicative cut of a loss round: 0.7 (Linux: 1 − 30%, 180/256).
const BETA: u64 = BBR_UNIT - BBR_UNIT * 30 / 100;
/// The loss rate a probing flight may reach: 2% (5/256).
const LOSS_THRESH: u64 = BBR_UNIT * 2 / 100;
/// The share of `inflight_hi` CRUISE leaves free for other flows: 15%.
const HEADROOM: u64 = BBR_UNIT * 15 / 100;
/// The smallest window BBR uses, in packets: enough for ACKs of every other packet.
const MIN_PIPE_CWND: u64 = 4;
/// The pipe is full when the rate grew less than 5/4 ...
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
/// ... in this many rounds in a row.
const FULL_BW_CNT: u32 = 3;
/// STARTUP's loss exit needs at least this many ACKs with new losses in a round.
const FULL_LOSS_CNT: u32 = 6;
/// DRAIN ends after this many rounds even with a queue left (an overestimated bandwidth).
const DRAIN_MAX_ROUNDS: u64 = 3;
/// The bandwidth filter keeps the current and the previous probing cycle: samples whose
/// cycle is more than one behind expire.
const MAX_BW_FILTER_CYCLES: u64 = 1;
/// The aggregation filter's window after STARTUP, in rounds ...
const EXTRA_ACKED_FILTER_LEN: u64 = 10;
/// ... and in STARTUP, where the rate changes every round.
const EXTRA_ACKED_STARTUP_LEN: u64 = 1;
/// The minimum-RTT filter's window.
const MIN_RTT_WIN: Duration = Duration::from_secs(10);
/// PROBE_RTT comes when the short minimum-RTT estimate is this old.
const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
/// How long PROBE_RTT holds the window down.
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// The wall-clock wait before probing is this ...
const PROBE_WAIT_BASE_US: u64 = 2_000_000;
/// ... plus a random part below this.
const PROBE_WAIT_RAND_US: u64 = 1_000_000;
/// Reno-coexistence probing waits at most this many rounds ...
const PROBE_MAX_ROUNDS: u64 = 63;
/// ... less a random 0 or 1 (drawn below this).
const PROBE_RAND_ROUNDS: u64 = 2;
/// UP's growth doubles at most this many times.
const PROBE_UP_MAX_DOUBLINGS: u32 = 30;
/// "Infinity" for the volume and rate bounds.
const UNSET: u64 = u64::MAX;

/// BBR's state (PROBE_BW's phase is [`Cycle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// PROBE_BW's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cycle {
    Down,
    Cruise,
    Refill,
    Up,
}

/// What the ACKs being received say about bandwidth probing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    /// Not probing, no probing feedback.
    Init,
    /// Sending at the estimate to fill the pipe.
    Refilling,
    /// In flight rising to probe; its ACKs are a round away.
    ProbeStarting,
    /// ACKs of the probing flight.
    ProbeFeedback,
    /// Probing stopped; its ACKs still arriving.
    ProbeStopping,
}

/// What the transport knows at the current ACK.
#[derive(Debug, Clone, Copy, Default)]
struct Conn {
    now: Duration,
    delivered: u64,
    delivered_mstamp: Duration,
    srtt: Duration,
    next_departure: Duration,
}

/// BBRv3's state.
#[derive(Debug, Clone)]
pub(crate) struct Bbr3 {
    mss: u64,
    initial_window: u64,
    /// Window in packets.
    cwnd: u64,
    /// Packets; set when STARTUP ends (for metrics only).
    ssthresh: Option<u64>,
    mode: Mode,
    cycle: Cycle,
    pacing_gain: u64,
    cwnd_gain: u64,
    /// Bytes per second.
    pacing_rate: u64,
    has_seen_rtt: bool,
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    rounds_since_probe: u64,
    max_bw: MaxFilter,
    cycle_count: u64,
    bw_lo: u64,
    inflight_lo: u64,
    inflight_hi: u64,
    bw_latest: u64,
    inflight_latest: u64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_events_in_round: u32,
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: u64,
    full_bw_cnt: u32,
    drain_start_round: u64,
    ack_phase: AckPhase,
    /// ACKs (and losses) now are of packets sent while probing.
    bw_probe_samples: bool,
    bw_probe_up_rounds: u32,
    bw_probe_up_acks: u64,
    /// Packets acknowledged per `inflight_hi` increment in UP.
    bw_probe_up_cnt: u64,
    probe_wait: Duration,
    cycle_stamp: Duration,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    /// µs; `None` before any RTT sample.
    min_rtt_us: Option<u64>,
    min_rtt_stamp: Duration,
    probe_rtt_min_us: Option<u64>,
    probe_rtt_min_stamp: Duration,
    probe_rtt_done_stamp: Option<Duration>,
    probe_rtt_round_done: bool,
    prior_cwnd: u64,
    prev_ca_state: CaState,
    idle_restart: bool,
    extra_acked_start: Duration,
    extra_acked_delivered: u64,
    extra_acked: MaxFilter,
    /// PROBE_RTT asked the transport to mark the connection application-limited.
    mark_app_limited: bool,
    conn: Conn,
    rng: SeededRng,
}

impl Bbr3 {
    /// BBRv3 at connection start; `seed` drives the probe waits.
    pub(crate) fn new(common: &CommonCcConfig, mss: u64, now: Duration, seed: u64) -> Self {
        let iw = common.initial_window_packets.max(1);
        let mut b = Bbr3 {
            mss: mss.max(1),
            initial_window: iw,
            cwnd: iw,
            ssthresh: None,
            mode: Mode::Startup,
            cycle: Cycle::Down,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            pacing_rate: 0,
            has_seen_rtt: false,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            rounds_since_probe: 0,
            max_bw: MaxFilter::default(),
            cycle_count: 0,
            bw_lo: UNSET,
            inflight_lo: UNSET,
            inflight_hi: UNSET,
            bw_latest: 0,
            inflight_latest: 0,
            // The first loss round ends once the first flight is acknowledged.
            loss_round_delivered: 2,
            loss_round_start: false,
            loss_in_round: false,
            loss_events_in_round: 0,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0,
            full_bw_cnt: 0,
            drain_start_round: 0,
            ack_phase: AckPhase::Init,
            bw_probe_samples: false,
            bw_probe_up_rounds: 0,
            bw_probe_up_acks: 0,
            bw_probe_up_cnt: UNSET,
            probe_wait: Duration::ZERO,
            cycle_stamp: now,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            min_rtt_us: None,
            min_rtt_stamp: now,
            probe_rtt_min_us: None,
            probe_rtt_min_stamp: now,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            idle_restart: false,
            extra_acked_start: now,
            extra_acked_delivered: 0,
            extra_acked: MaxFilter::default(),
            mark_app_limited: false,
            conn: Conn {
                now,
                delivered: 1,
                delivered_mstamp: now,
                ..Conn::default()
            },
            rng: SeededRng::new(seed),
        };
        b.init_pacing_rate_from_rtt();
        b
    }

    fn max_bw(&self) -> u64 {
        self.max_bw.get()
    }

    /// The rate the model allows: the long-term maximum, bounded by the short-term one.
    fn bw(&self) -> u64 {
        self.max_bw().min(self.bw_lo)
    }

    fn tso_segs_goal(&self) -> u64 {
        tso_segs_goal(self.pacing_rate, self.mss)
    }

    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        bdp(bw, self.min_rtt_us, gain, self.initial_window)
    }

    /// The offload budget (three send quanta), the pipelining floor and UP's extra 2
    /// packets, which keep UP above the BDP even when the BDP is tiny.
    fn quantization_budget(&self, inflight: u64) -> u64 {
        let mut cap = inflight.max(3 * self.tso_segs_goal()).max(MIN_PIPE_CWND);
        if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
            cap += 2;
        }
        cap
    }

    /// The draft's `Inflight(gain)`.
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// What the flow wants in flight: its BDP, unless congestion cut the window.
    fn target_inflight(&self) -> u64 {
        self.inflight(self.bw(), BBR_UNIT).min(self.cwnd)
    }

    /// `inflight_hi` less the headroom left for other flows.
    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = ((self.inflight_hi * HEADROOM) >> BBR_SCALE).max(1);
        self.inflight_hi.saturating_sub(headroom).max(MIN_PIPE_CWND)
    }

    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp(self.bw(), PROBE_RTT_CWND_GAIN).max(MIN_PIPE_CWND)
    }

    fn packets_in_net_at_edt(&self, inflight_now: u64) -> u64 {
        let departing = if self.pacing_gain > BBR_UNIT {
            self.tso_segs_goal()
        } else {
            0
        };
        packets_in_net_at_edt(
            self.conn.now,
            self.conn.next_departure,
            self.bw(),
            inflight_now,
            departing,
        )
    }

    /// Whether a loss count `lost` out of a flight of `tx_in_flight` exceeds 2%.
    fn is_inflight_too_high(lost: u64, tx_in_flight: u64) -> bool {
        lost > 0 && tx_in_flight > 0 && lost > (tx_in_flight * LOSS_THRESH) >> BBR_SCALE
    }

    /// The in-flight volume at which the loss rate crossed 2% within the flight of a lost
    /// packet: the `lost_prefix` solving (lost_prev + x) / (inflight_prev + x) = 2%.
    fn inflight_at_loss(p: &LostPacket) -> u64 {
        let inflight_prev = p.tx_in_flight.saturating_sub(1);
        let lost_prev = p.lost.saturating_sub(1);
        let loss_budget = (inflight_prev * LOSS_THRESH).div_ceil(BBR_UNIT);
        let lost_prefix = if lost_prev >= loss_budget {
            0
        } else {
            ((loss_budget - lost_prev) << BBR_SCALE) / (BBR_UNIT - LOSS_THRESH)
        };
        inflight_prev + lost_prefix
    }

    fn init_pacing_rate_from_rtt(&mut self) {
        let rtt_us = if self.conn.srtt.is_zero() {
            1000
        } else {
            self.has_seen_rtt = true;
            micros(self.conn.srtt).max(1)
        };
        let bw = window_per_rtt(self.cwnd, rtt_us);
        self.pacing_rate = rate_bytes_per_sec(bw, self.mss, STARTUP_PACING_GAIN);
    }

    /// Until the pipe is first full the pacing rate only goes up.
    fn set_pacing_rate(&mut self, bw: u64, gain: u64) {
        let rate = rate_bytes_per_sec(bw, self.mss, gain);
        if !self.has_seen_rtt && !self.conn.srtt.is_zero() {
            self.init_pacing_rate_from_rtt();
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    fn start_round(&mut self) {
        self.next_round_delivered = self.conn.delivered;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET;
        self.inflight_lo = UNSET;
    }

    /// Both random bounds on the wait before the next probe: rounds and wall clock.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(PROBE_RAND_ROUNDS);
        let us = PROBE_WAIT_BASE_US + self.rng.below(PROBE_WAIT_RAND_US);
        self.probe_wait = Duration::from_micros(us);
    }

    fn start_probe_down(&mut self) {
        self.mode = Mode::ProbeBw;
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_stamp = self.conn.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.cycle = Cycle::Down;
    }

    fn start_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.cycle = Cycle::Cruise;
    }

    /// REFILL forgets the short-term model: the probe measures the path, not the losses
    /// cross traffic caused.
    fn start_probe_refill(&mut self) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.cycle = Cycle::Refill;
    }

    fn start_probe_up(&mut self, sample_bw: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.cycle_stamp = self.conn.now;
        self.reset_full_bw();
        self.full_bw = sample_bw;
        self.cycle = Cycle::Up;
        self.raise_inflight_hi_slope();
    }

    /// Each round of UP doubles the growth of `inflight_hi`: 1, 2, 4 … packets per round,
    /// spread over the round's ACKs.
    fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(PROBE_UP_MAX_DOUBLINGS);
        self.bw_probe_up_cnt = (self.cwnd / growth_this_round).max(1);
    }

    fn probe_inflight_hi_upward(&mut self, rs: &RateSample) {
        // Not using all of inflight_hi: it says nothing about a larger one.
        if !rs.is_cwnd_limited || self.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi += delta;
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    /// A probing flight lost too much: `inflight_hi` comes down to the volume where it
    /// did (not below 0.7 of the target), once per probe; UP ends.
    fn handle_inflight_too_high(&mut self, is_app_limited: bool, tx_in_flight: u64) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        // An application-limited flight did not probe the volume it had.
        if !is_app_limited {
            let floor = (self.target_inflight() * BETA) >> BBR_SCALE;
            self.inflight_hi = tx_in_flight.max(floor);
        }
        if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
            self.start_probe_down();
        }
    }

    /// The long-term model from the ACKs of probing flights; true if it changed the phase.
    fn adapt_upper_bounds(&mut self, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            // The round after UP carries the cycle's best chance at the highest rate: the
            // previous cycle's samples may go now.
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.cycle_count += 1;
            }
            // A cautious probe reached the old inflight_hi without losing too much: probe
            // again at once, this time holding inflight_hi for a round.
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_probe_refill();
                return true;
            }
        }
        if Self::is_inflight_too_high(rs.lost, rs.tx_in_flight) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(rs.is_app_limited, rs.tx_in_flight);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false;
            }
            // A flight larger than inflight_hi went through without much loss.
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
                self.probe_inflight_hi_upward(rs);
            }
        }
        false
    }

    fn is_reno_coexistence_probe_time(&self) -> bool {
        let rounds = self.target_inflight().min(PROBE_MAX_ROUNDS);
        self.rounds_since_probe >= rounds
    }

    fn check_time_to_probe_bw(&mut self) -> bool {
        let waited = self.conn.now > self.cycle_stamp + self.probe_wait;
        if waited || self.is_reno_coexistence_probe_time() {
            self.start_probe_refill();
            return true;
        }
        false
    }

    fn check_time_to_cruise(&self, inflight: u64) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(self.max_bw(), BBR_UNIT)
    }

    fn update_cycle_phase(&mut self, rs: &RateSample, sample_bw: u64) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(rs) || self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight);
        match self.cycle {
            Cycle::Cruise => {
                self.check_time_to_probe_bw();
            }
            Cycle::Refill => {
                // A round of REFILL: the ACKs now show what it put in flight.
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_probe_up(sample_bw);
                }
            }
            Cycle::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else if rs.is_cwnd_limited && self.cwnd >= self.inflight_hi {
                    // inflight_hi, not the path, limits the rate: no plateau to detect.
                    self.reset_full_bw();
                    self.full_bw = sample_bw;
                } else if self.full_bw_now {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_probe_down();
                }
            }
            Cycle::Down => {
                if self.check_time_to_probe_bw() {
                    return;
                }
                if self.check_time_to_cruise(inflight) {
                    self.start_probe_cruise();
                }
            }
        }
    }

    fn update_round(&mut self, rs: &RateSample, valid: bool) {
        self.round_start = false;
        if valid && rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.round_start = true;
        }
    }

    fn update_latest_delivery_signals(&mut self, rs: &RateSample, sample_bw: u64, valid: bool) {
        self.loss_round_start = false;
        if !valid || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.unwrap_or(0));
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.conn.delivered;
            self.loss_round_start = true;
        }
    }

    fn advance_latest_delivery_signals(&mut self, rs: &RateSample, sample_bw: u64) {
        if self.loss_round_start {
            self.bw_latest = sample_bw;
            self.inflight_latest = rs.delivered.unwrap_or(0);
        }
    }

    /// Once per round with a loss, outside probing: the short-term model moves to the
    /// latest delivery rate and volume, cutting at most to 0.7 of itself.
    fn adapt_lower_bounds(&mut self) {
        let probing = self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle, Cycle::Refill | Cycle::Up));
        if probing || !self.loss_in_round {
            return;
        }
        if self.bw_lo == UNSET {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = self.cwnd;
        }
        self.bw_lo = self.bw_latest.max((self.bw_lo * BETA) >> BBR_SCALE).max(1);
        self.inflight_lo = self
            .inflight_latest
            .max((self.inflight_lo * BETA) >> BBR_SCALE);
    }

    fn update_congestion_signals(&mut self, rs: &RateSample, sample_bw: u64, valid: bool) {
        if !valid || rs.acked_sacked == 0 {
            return;
        }
        // Application-limited samples count only when they show more than the model has.
        if sample_bw > 0 && (!rs.is_app_limited || sample_bw >= self.max_bw()) {
            self.max_bw
                .running_max(MAX_BW_FILTER_CYCLES, self.cycle_count, sample_bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds();
        self.loss_in_round = false;
    }

    fn update_ack_aggregation(&mut self, rs: &RateSample, valid: bool) {
        if rs.acked_sacked == 0 || !valid {
            return;
        }
        let interval_us = micros(
            self.conn
                .delivered_mstamp
                .saturating_sub(self.extra_acked_start),
        );
        let mut expected = crate::bbr_common::packets_in(self.bw(), interval_us);
        // ACKs slower than the model expects end an aggregation episode.
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_start = self.conn.delivered_mstamp;
            expected = 0;
        }
        self.extra_acked_delivered += rs.acked_sacked;
        let extra = (self.extra_acked_delivered - expected).min(self.cwnd);
        let len = if self.full_bw_reached {
            EXTRA_ACKED_FILTER_LEN
        } else {
            EXTRA_ACKED_STARTUP_LEN
        };
        self.extra_acked.running_max(len, self.round_count, extra);
    }

    /// STARTUP's loss exit, checked when a round of fast recovery ends.
    fn check_startup_high_loss(&mut self, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 {
            self.loss_events_in_round = (self.loss_events_in_round + 1).min(0xF);
        }
        if self.loss_round_start
            && rs.ca_state == CaState::Recovery
            && self.loss_events_in_round >= FULL_LOSS_CNT
            && Self::is_inflight_too_high(rs.lost, rs.tx_in_flight)
        {
            self.full_bw_reached = true;
            let bdp = self.inflight(self.max_bw(), BBR_UNIT);
            self.inflight_hi = bdp.max(self.inflight_latest);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample, sample_bw: u64) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return;
        }
        if sample_bw >= (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE {
            self.reset_full_bw();
            self.full_bw = sample_bw;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_now = self.full_bw_cnt >= FULL_BW_CNT;
        self.full_bw_reached |= self.full_bw_now;
    }

    fn check_drain(&mut self, in_flight: u64) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.drain_start_round = self.round_count;
            self.ssthresh = Some(self.inflight(self.max_bw(), BBR_UNIT));
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain {
            let drained =
                self.packets_in_net_at_edt(in_flight) <= self.inflight(self.max_bw(), BBR_UNIT);
            if drained || self.round_count > self.drain_start_round + DRAIN_MAX_ROUNDS {
                self.start_probe_down();
            }
        }
    }

    fn exit_probe_rtt(&mut self) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            // In flight is below the BDP now: cruise, with the probe clock restarted.
            self.start_probe_down();
            self.start_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn check_probe_rtt_done(&mut self) {
        let now = self.conn.now;
        if self.probe_rtt_done_stamp.is_none_or(|t| now <= t) {
            return;
        }
        // The next PROBE_RTT is a whole interval away.
        self.probe_rtt_min_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt();
    }

    fn update_min_rtt(&mut self, rs: &RateSample, in_flight: u64) {
        let now = self.conn.now;
        let probe_rtt_expired = now > self.probe_rtt_min_stamp + PROBE_RTT_INTERVAL;
        if let Some(rtt) = rs.rtt {
            let rtt_us = micros(rtt);
            if self.probe_rtt_min_us.is_none_or(|m| rtt_us < m)
                || (probe_rtt_expired && !rs.is_ack_delayed)
            {
                self.probe_rtt_min_us = Some(rtt_us);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(p) = self.probe_rtt_min_us {
            if self.min_rtt_us.is_none_or(|m| p <= m) || min_rtt_expired {
                self.min_rtt_us = Some(p);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
        if probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.mode == Mode::ProbeRtt {
            // Its low-rate samples must not pull the bandwidth estimate down.
            self.mark_app_limited = true;
            if self.probe_rtt_done_stamp.is_none() && in_flight <= self.probe_rtt_cwnd() {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round();
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done();
                }
            }
        }
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// The gains of the current state (the draft's table of control behaviour).
    fn gains(mode: Mode, cycle: Cycle) -> (u64, u64) {
        match mode {
            Mode::Startup => (STARTUP_PACING_GAIN, DEFAULT_CWND_GAIN),
            Mode::Drain => (DRAIN_PACING_GAIN, DEFAULT_CWND_GAIN),
            Mode::ProbeBw => match cycle {
                Cycle::Down => (DOWN_PACING_GAIN, DEFAULT_CWND_GAIN),
                Cycle::Cruise | Cycle::Refill => (BBR_UNIT, DEFAULT_CWND_GAIN),
                Cycle::Up => (UP_PACING_GAIN, UP_CWND_GAIN),
            },
            Mode::ProbeRtt => (BBR_UNIT, PROBE_RTT_CWND_GAIN),
        }
    }

    fn set_cwnd(&mut self, rs: &RateSample, bw: u64) {
        let acked = rs.acked_sacked;
        let mut cwnd = self.cwnd;
        // Leaving recovery (or a timeout's Loss state) restores the last good window; the
        // model's bounds below then cut it to what the losses taught.
        if self.prev_ca_state >= CaState::Recovery && rs.ca_state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
        }
        if acked > 0 {
            let mut target = self.bdp(bw, self.cwnd_gain);
            target += self.extra_acked.get();
            let target = self.quantization_budget(target);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || self.conn.delivered < self.initial_window {
                cwnd += acked;
            }
            cwnd = cwnd.max(MIN_PIPE_CWND);
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(self.probe_rtt_cwnd());
        }
        self.cwnd = cwnd;
        self.bound_cwnd_for_model();
    }

    /// The volume caps of the current state: `inflight_hi` while probing or draining in
    /// PROBE_BW, `inflight_hi` less headroom in CRUISE and PROBE_RTT, `inflight_lo` always.
    fn bound_cwnd_for_model(&mut self) {
        let mut cap = UNSET;
        if self.mode == Mode::ProbeBw && self.cycle != Cycle::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.cycle == Cycle::Cruise)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(MIN_PIPE_CWND);
        self.cwnd = self.cwnd.min(cap);
    }

    /// One ACK: the model, the state machine, then the pacing rate and the window.
    fn main(&mut self, rs: &RateSample, in_flight: u64) {
        let valid = rs.delivered.is_some() && rs.interval.is_some_and(|i| micros(i) > 0);
        let sample_bw = match (rs.delivered, rs.interval) {
            (Some(d), Some(i)) if valid => (d * BW_UNIT).div_ceil(micros(i)),
            _ => 0,
        };
        self.update_round(rs, valid);
        self.update_latest_delivery_signals(rs, sample_bw, valid);
        self.update_congestion_signals(rs, sample_bw, valid);
        self.update_ack_aggregation(rs, valid);
        self.check_startup_high_loss(rs);
        self.check_full_bw_reached(rs, sample_bw);
        self.check_drain(in_flight);
        self.update_cycle_phase(rs, sample_bw);
        self.update_min_rtt(rs, in_flight);
        (self.pacing_gain, self.cwnd_gain) = Self::gains(self.mode, self.cycle);
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(rs, bw);
        self.advance_latest_delivery_signals(rs, sample_bw);
        self.prev_ca_state = rs.ca_state;
    }
}

impl CongestionController for Bbr3 {
    fn on_sent(&mut self, _now: Duration, _bytes: u64, _pn: u64) {}

    fn on_ack(&mut self, _: Duration, _: Duration, _: u64, _: bool, _: &RttSample) {}

    fn on_end_acks(&mut self, _: Duration, _: u64, _: bool, _: Option<u64>) {}

    fn on_rate_sample(&mut self, now: Duration, rs: &RateSample, in_flight: u64) {
        self.conn = Conn {
            now,
            delivered: rs.total_delivered,
            delivered_mstamp: rs.delivered_mstamp,
            srtt: rs.srtt,
            next_departure: rs.next_departure,
        };
        // Both minimum-RTT filters start from the handshake's RTT.
        if self.min_rtt_us.is_none() && !rs.min_rtt.is_zero() {
            self.min_rtt_us = Some(micros(rs.min_rtt));
            self.probe_rtt_min_us = self.min_rtt_us;
        }
        self.mark_app_limited = false;
        self.main(rs, in_flight);
    }

    /// A lost packet: the round has a loss, and while probing its flight's loss rate is
    /// judged (see the module docs).
    fn on_packet_lost(&mut self, now: Duration, p: &LostPacket) {
        self.conn.now = now;
        if !self.loss_in_round {
            // The loss round runs until what is sent from now on is acknowledged.
            self.loss_round_delivered = self.conn.delivered;
        }
        self.loss_in_round = true;
        if !self.bw_probe_samples {
            return;
        }
        if Self::is_inflight_too_high(p.lost, p.tx_in_flight) {
            let at_loss = Self::inflight_at_loss(p);
            self.handle_inflight_too_high(p.is_app_limited, at_loss);
        }
    }

    fn uses_rate_samples(&self) -> bool {
        true
    }

    fn marks_app_limited(&self) -> bool {
        self.mark_app_limited
    }

    fn on_tx_start(&mut self, now: Duration, app_limited: bool) {
        if !app_limited {
            return;
        }
        self.conn.now = now;
        self.idle_restart = true;
        self.extra_acked_start = now;
        self.extra_acked_delivered = 0;
        // Restarting from idle with no more to send: pace at the estimate, no faster.
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.bw(), BBR_UNIT),
            Mode::ProbeRtt => self.check_probe_rtt_done(),
            _ => {}
        }
    }

    /// Entering fast recovery or CWR: the window is saved for the end of recovery.
    fn on_congestion_event(&mut self, now: Duration, _sent: Duration, _pc: bool, _lost: u64) {
        self.conn.now = now;
        self.save_cwnd();
    }

    /// The window is what the transport says; the plateau detector restarts, and outside
    /// probing the short-term volume starts from the window before the timeout so the next
    /// loss round cuts from there.
    fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64) {
        self.conn.now = now;
        if reduce {
            self.save_cwnd();
        }
        let probing = self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle, Cycle::Refill | Cycle::Up));
        if !probing && self.inflight_lo == UNSET {
            self.inflight_lo = self.cwnd.max(self.prior_cwnd);
        }
        self.cwnd = (window / self.mss).max(1);
        self.prev_ca_state = CaState::Loss;
        self.reset_full_bw();
    }

    fn on_mtu_update(&mut self, max_datagram_size: u64) {
        self.mss = max_datagram_size.max(1);
    }

    fn window(&self) -> u64 {
        self.cwnd * self.mss
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh.map(|s| s * self.mss)
    }

    fn initial_window(&self) -> u64 {
        self.initial_window * self.mss
    }

    /// PROBE_BW's four phases are all [`Phase::ProbeBw`].
    fn phase(&self) -> Phase {
        match self.mode {
            Mode::Startup => Phase::Startup,
            Mode::Drain => Phase::Drain,
            Mode::ProbeBw => Phase::ProbeBw,
            Mode::ProbeRtt => Phase::ProbeRtt,
        }
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate)
    }

    fn controls_reductions(&self) -> bool {
        true
    }

    fn box_clone(&self) -> Box<dyn CongestionController> {
        Box::new(self.clone())
    }
}
