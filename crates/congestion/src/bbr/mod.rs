//! BBR v1 as Linux 6.18's `tcp_bbr.c`: the sender models the path as a bottleneck bandwidth
//! (a windowed maximum of delivery-rate samples over 10 round trips) and a minimum RTT (over
//! 10 s), paces at `pacing_gain · bw` and caps what is in flight at `cwnd_gain · bw · min_rtt`
//! plus allowances.
//!
//! - **STARTUP**: pacing and window gain 2/ln 2 (739/256) until the pipe is full: three
//!   rounds (non-application-limited) in which the maximum bandwidth grew less than 25%.
//! - **DRAIN**: pacing gain ln 2/2 (88/256) until the packets in the network at the next
//!   departure time are at most one BDP (plus the quantization budget).
//! - **PROBE_BW**: the eight-phase gain cycle 5/4, 3/4, 1 ×6, each phase one minimum RTT
//!   long (5/4 also lasts until in flight reaches 5/4 BDP or a loss, 3/4 ends early once in
//!   flight is down to one BDP); it starts at a random phase other than 3/4, drawn from a
//!   generator seeded by the transport (Linux: `prandom_u32_max`).
//! - **PROBE_RTT**: when the minimum RTT is 10 s old, the window is 4 packets for 200 ms and
//!   at least one round trip after in flight first fell to 4, then the previous window comes
//!   back; its samples are marked application-limited.
//! - **Long-term bandwidth** (policer detection): after a loss, sampling intervals of 4–16
//!   rounds; two consecutive intervals with ≥ 20% loss (50/256) and delivery rates within
//!   1/8 (or 4 kbit/s) of each other set `lt_bw` to their mean, used at gain 1 for 48 rounds.
//! - **ACK aggregation**: the most data acknowledged beyond `bw · epoch` over the last 5–10
//!   rounds is added to the window target (at most `bw · 100 ms`, at most cwnd), once the
//!   pipe has been full.
//! - **Loss**: no multiplicative decrease. Each ACK takes its newly lost packets off the
//!   window; the first round of fast recovery is packet conservation (the window is what is
//!   in flight plus what this ACK delivered), after it the window grows towards the target
//!   again; leaving recovery or a timeout's Loss state restores the window saved at its start.
//!
//! Units as Linux's: windows in packets, bandwidth in packets per µs scaled by 2^24, gains
//! scaled by 256, times in µs (the minimum-RTT and PROBE_RTT stamps are exact times here
//! instead of jiffies). The TSO terms follow Linux's formulas for a device without TSO as
//! BBR computes them anyway: the TSO segment goal is `pacing_rate >> 10` bytes in whole
//! segments (at least 2, or 1 below 1.2 Mbit/s, at most 127 and 64 KiB − 321 bytes), and
//! the quantization budget adds three of those to every in-flight target; Linux computes
//! them from the pacing rate whatever the device offloads, so the emulator's kernel uses
//! the same numbers. Not modelled: the undo of a spurious recovery (the TCP model does not
//! undo), `sk_max_pacing_rate` (unlimited) and the window clamp.

#[cfg(test)]
mod tests;

use std::time::Duration;

use crate::config::CommonCcConfig;
use crate::{CaState, CongestionController, Phase, RateSample, RttSample};

use crate::bbr_common::filter::MaxFilter;
use crate::bbr_common::{
    bdp, micros, millis, packets_in_net_at_edt, rate_bytes_per_sec, tso_segs_goal, window_per_rtt,
    SeededRng, BBR_SCALE, BBR_UNIT, BW_UNIT,
};
/// 2/ln 2, rounded up so STARTUP at least doubles per round.
const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
/// ln 2/2: drains STARTUP's queue in about one round.
const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
/// Window gain in PROBE_BW.
const CWND_GAIN: u64 = BBR_UNIT * 2;
/// PROBE_BW's pacing gains.
const PACING_GAIN: [u64; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
const CYCLE_LEN: usize = 8;
/// The random start phase is drawn below this (so never the 3/4 phase).
const CYCLE_RAND: u64 = 7;
/// The bandwidth filter's window, in rounds.
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// The minimum-RTT filter's window.
const MIN_RTT_WIN: Duration = Duration::from_secs(10);
/// How long PROBE_RTT holds the window at its minimum.
const PROBE_RTT_MODE: Duration = Duration::from_millis(200);
/// The smallest window BBR uses (and PROBE_RTT's window), in packets.
const CWND_MIN_TARGET: u64 = 4;
/// STARTUP's pipe is full when the bandwidth grew less than 5/4 ...
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
/// ... in this many rounds in a row.
const FULL_BW_CNT: u32 = 3;
/// Long-term sampling intervals last at least this many rounds (and at most 4 times it).
const LT_INTVL_MIN_RTTS: u32 = 4;
/// Loss rate (of 256) that counts as policing.
const LT_LOSS_THRESH: u64 = 50;
/// Two intervals' rates within 1/8 of each other ...
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
/// ... or within 4 kbit/s (in bytes per second) are consistent.
const LT_BW_DIFF: u64 = 4000 / 8;
/// Rounds `lt_bw` is used before probing again.
const LT_BW_MAX_RTTS: u32 = 48;
/// Gain on the aggregation allowance.
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
/// Half the aggregation filter's window, in rounds.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// An aggregation epoch restarts after this many packets.
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
/// The aggregation allowance is at most this long at the estimated bandwidth.
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// Linux's TCP_INIT_CWND.
const TCP_INIT_CWND: u64 = 10;

/// BBR's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// What the transport knows at the current ACK (Linux reads it from `tcp_sock`).
#[derive(Debug, Clone, Copy, Default)]
struct Conn {
    now: Duration,
    delivered: u64,
    delivered_mstamp: Duration,
    lost: u64,
    srtt: Duration,
    next_departure: Duration,
}

/// BBR's state.
#[derive(Debug, Clone)]
pub(crate) struct Bbr {
    mss: u64,
    initial_window: u64,
    /// Window in packets.
    cwnd: u64,
    /// Packets; set when STARTUP ends (for metrics only: BBR never uses it).
    ssthresh: Option<u64>,
    mode: Mode,
    bw: MaxFilter,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: Duration,
    cycle_idx: usize,
    /// µs; `None` before any RTT sample (Linux: ~0U).
    min_rtt_us: Option<u64>,
    min_rtt_stamp: Duration,
    probe_rtt_done_stamp: Option<Duration>,
    probe_rtt_round_done: bool,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp_ms: u64,
    lt_last_lost: u64,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    full_bw: u64,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    /// Bytes per second.
    pacing_rate: u64,
    ack_epoch_mstamp: Duration,
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    extra_acked: [u64; 2],
    /// PROBE_RTT asked the transport to mark the connection application-limited.
    mark_app_limited: bool,
    /// The transport's counters at the latest ACK (a timeout or a transmission start uses
    /// them between ACKs).
    conn: Conn,
    rng: SeededRng,
}

impl Bbr {
    /// BBR at connection start (`bbr_init`); `seed` drives the gain cycle's start phase.
    pub(crate) fn new(common: &CommonCcConfig, mss: u64, now: Duration, seed: u64) -> Self {
        let iw = common.initial_window_packets.max(1);
        let mut b = Bbr {
            mss: mss.max(1),
            initial_window: iw,
            cwnd: iw,
            ssthresh: None,
            mode: Mode::Startup,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Duration::ZERO,
            cycle_idx: 0,
            min_rtt_us: None,
            min_rtt_stamp: now,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            full_bw: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            pacing_rate: 0,
            ack_epoch_mstamp: now,
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            extra_acked: [0; 2],
            mark_app_limited: false,
            conn: Conn {
                now,
                delivered_mstamp: now,
                ..Conn::default()
            },
            rng: SeededRng::new(seed),
        };
        b.init_pacing_rate_from_rtt();
        b.reset_lt_bw_sampling();
        b
    }

    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `rate` (packets/µs · 2^24) times `gain`, in bytes per second, 1% below.
    fn rate_bytes_per_sec(&self, rate: u64, gain: u64) -> u64 {
        rate_bytes_per_sec(rate, self.mss, gain)
    }

    /// high_gain · cwnd / SRTT (a nominal 1 ms before any RTT sample).
    fn init_pacing_rate_from_rtt(&mut self) {
        let rtt_us = if self.conn.srtt.is_zero() {
            1000
        } else {
            self.has_seen_rtt = true;
            micros(self.conn.srtt).max(1)
        };
        let bw = window_per_rtt(self.cwnd, rtt_us);
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    /// Until the pipe is full the pacing rate only goes up.
    fn set_pacing_rate(&mut self, bw: u64, gain: u64) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && !self.conn.srtt.is_zero() {
            self.init_pacing_rate_from_rtt();
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// Segments per TSO burst Linux budgets for (see the module docs).
    fn tso_segs_goal(&self) -> u64 {
        tso_segs_goal(self.pacing_rate, self.mss)
    }

    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// ⌈bw · min_rtt · gain⌉ in packets (the initial window before any RTT sample).
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        bdp(bw, self.min_rtt_us, gain, TCP_INIT_CWND)
    }

    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        // Even, against delayed ACKs.
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Packets still in the network when the next segment may leave (the pacing layer may
    /// hold it back past now).
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

    fn ack_aggregation_cwnd(&self) -> u64 {
        if EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = u64::try_from(
            u128::from(self.bw()) * u128::from(EXTRA_ACKED_MAX_US) / u128::from(BW_UNIT),
        )
        .unwrap_or(u64::MAX);
        ((EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE).min(max_aggr)
    }

    /// Packet conservation in the first round of recovery, the saved window restored when
    /// recovery (or a timeout's Loss state) ends. Returns the window and whether packet
    /// conservation decided it.
    fn recover_or_restore(&mut self, rs: &RateSample, acked: u64, in_flight: u64) -> (u64, bool) {
        let prev = self.prev_ca_state;
        let state = rs.ca_state;
        let mut cwnd = self.cwnd;
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = self.conn.delivered;
            cwnd = in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(in_flight + acked), true);
        }
        (cwnd, false)
    }

    fn set_cwnd(&mut self, rs: &RateSample, in_flight: u64, bw: u64, gain: u64) {
        let acked = rs.acked_sacked;
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(rs, acked, in_flight);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || self.conn.delivered < TCP_INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        self.cwnd = cwnd;
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }

    fn is_next_cycle_phase(&self, rs: &RateSample) -> bool {
        let elapsed = micros(self.conn.delivered_mstamp.saturating_sub(self.cycle_mstamp));
        let is_full_length = elapsed > self.min_rtt_us.unwrap_or(u64::MAX);
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_mstamp = self.conn.delivered_mstamp;
    }

    fn update_cycle_phase(&mut self, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle_phase();
        }
    }

    fn reset_probe_bw_mode(&mut self) {
        self.mode = Mode::ProbeBw;
        let r = self.rng.below(CYCLE_RAND) as usize;
        self.cycle_idx = CYCLE_LEN - 1 - r;
        self.advance_cycle_phase();
    }

    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode();
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self) {
        self.lt_last_stamp_ms = millis(self.conn.delivered_mstamp);
        self.lt_last_delivered = self.conn.delivered;
        self.lt_last_lost = self.conn.lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval();
    }

    fn lt_bw_interval_done(&mut self, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw
                || self.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF
            {
                // Two consistent, lossy intervals: a policer.
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval();
    }

    /// Token-bucket policer detection (see the module docs).
    fn lt_bw_sampling(&mut self, losses: u64, is_app_limited: bool) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling();
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        // The first loss starts sampling: the policer's tokens are exhausted by then.
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval();
            self.lt_is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt_bw_sampling();
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling();
            return;
        }
        if losses == 0 {
            return;
        }
        let lost = self.conn.lost - self.lt_last_lost;
        let delivered = self.conn.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = millis(self.conn.delivered_mstamp).saturating_sub(self.lt_last_stamp_ms);
        if t < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t * 1000);
        self.lt_bw_interval_done(bw);
    }

    fn update_bw(&mut self, rs: &RateSample) {
        self.round_start = false;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else {
            return;
        };
        let interval_us = micros(interval);
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.conn.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs.losses, rs.is_app_limited);
        let bw = delivered * BW_UNIT / interval_us;
        // Application-limited samples only count when they show more than the model has.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    fn update_ack_aggregation(&mut self, rs: &RateSample) {
        let valid = rs.delivered.is_some() && rs.interval.is_some_and(|i| micros(i) > 0);
        if EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || !valid {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx = 1 - self.extra_acked_win_idx;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = micros(
            self.conn
                .delivered_mstamp
                .saturating_sub(self.ack_epoch_mstamp),
        );
        let mut expected =
            u64::try_from(u128::from(self.bw()) * u128::from(epoch_us) / u128::from(BW_UNIT))
                .unwrap_or(u64::MAX);
        // A slower ACK rate than expected, or a very old epoch, starts a new epoch.
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = self.conn.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xF_FFFF);
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, in_flight: u64) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = Some(self.inflight(self.max_bw(), BBR_UNIT));
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode();
        }
    }

    fn check_probe_rtt_done(&mut self) {
        let now = self.conn.now;
        if self.probe_rtt_done_stamp.is_none_or(|t| now <= t) {
            return;
        }
        // Wait a whole filter window before the next PROBE_RTT.
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode();
    }

    fn update_min_rtt(&mut self, rs: &RateSample, in_flight: u64) {
        let now = self.conn.now;
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = rs.rtt {
            let rtt_us = micros(rtt);
            if self.min_rtt_us.is_none_or(|m| rtt_us <= m) || (expired && !rs.is_ack_delayed) {
                self.min_rtt_us = Some(rtt_us);
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // Its low-rate samples must not pull the bandwidth estimate down.
            self.mark_app_limited = true;
            if self.probe_rtt_done_stamp.is_none() && in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_MODE);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = self.conn.delivered;
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

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (
                if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.cycle_idx]
                },
                CWND_GAIN,
            ),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_main`: the model, then the pacing rate and the window.
    fn main(&mut self, rs: &RateSample, in_flight: u64) {
        self.update_bw(rs);
        self.update_ack_aggregation(rs);
        self.update_cycle_phase(rs);
        self.check_full_bw_reached(rs);
        self.check_drain(in_flight);
        self.update_min_rtt(rs, in_flight);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(rs, in_flight, bw, self.cwnd_gain);
    }
}

impl CongestionController for Bbr {
    fn on_sent(&mut self, _now: Duration, _bytes: u64, _pn: u64) {}

    fn on_ack(&mut self, _: Duration, _: Duration, _: u64, _: bool, _: &RttSample) {}

    fn on_end_acks(&mut self, _: Duration, _: u64, _: bool, _: Option<u64>) {}

    fn on_rate_sample(&mut self, now: Duration, rs: &RateSample, in_flight: u64) {
        self.conn = Conn {
            now,
            delivered: rs.total_delivered,
            delivered_mstamp: rs.delivered_mstamp,
            lost: rs.total_lost,
            srtt: rs.srtt,
            next_departure: rs.next_departure,
        };
        // Linux starts the filter from tcp_min_rtt() (the handshake's RTT) at bbr_init.
        if self.min_rtt_us.is_none() && !rs.min_rtt.is_zero() {
            self.min_rtt_us = Some(micros(rs.min_rtt));
        }
        self.mark_app_limited = false;
        self.main(rs, in_flight);
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
        self.ack_epoch_mstamp = now;
        self.ack_epoch_acked = 0;
        // Restarting from idle with no more to send: pace at the estimate, no faster.
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.bw(), BBR_UNIT),
            Mode::ProbeRtt => self.check_probe_rtt_done(),
            _ => {}
        }
    }

    /// Entering fast recovery or CWR (`bbr_ssthresh`): only the window is saved.
    fn on_congestion_event(&mut self, now: Duration, _sent: Duration, _pc: bool, _lost: u64) {
        self.conn.now = now;
        self.save_cwnd();
    }

    /// `tcp_enter_loss` with `bbr_set_state(TCP_CA_Loss)`: the window is what the transport
    /// says, the RTO counts as a round's end and as a loss for policer detection.
    fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64) {
        self.conn.now = now;
        if reduce {
            self.save_cwnd();
        }
        self.cwnd = (window / self.mss).max(1);
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        self.lt_bw_sampling(1, false);
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
