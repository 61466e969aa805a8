//! CUBIC as Linux runs it (`net/ipv4/tcp_cubic.c`: the curve as in Linux 6.1, HyStart's round
//! keeping as in current 6.x kernels such as the emulator's 6.18), the `Linux` profile of the
//! CUBIC controller.
//!
//! Linux keeps the window in whole segments and grows it with a counter: every `cnt`
//! acknowledged segments add one (`tcp_cong_avoid_ai`). `cnt` comes from the cubic curve one
//! minimum RTT ahead and from the TCP-friendliness estimate, which grows by one segment per
//! `cwnd · 15 / 8` acknowledged segments for the whole epoch (a constant ≈ 0.53 segments per
//! RTT; RFC 9438's switch to 1 once W_max is regained does not exist in Linux). A reduction
//! sets ssthresh = max(cwnd · 717 / 1024, 2) in whole segments, ends the epoch and restarts the
//! counter. Time is counted in jiffies of Debian's `HZ = 250` (4 ms), as the kernel does, and
//! the curve's constant C = 410/1024 and K come from the kernel's fixed-point forms (K through
//! `f64::cbrt` instead of the kernel's table-and-Newton cube root, which is within 0.2 % of it).
//!
//! HyStart (`hystart_update` of current Linux, both detectors on, as Linux's defaults): every
//! ACK in slow start keeps the rounds (a round — one flight — ends with the first ACK that
//! covers data sent since it started; the first starts when the connection does), so a round
//! begins with the first ACK of each ACK train. From a window of 16 segments on, a round ends
//! slow start (ssthresh = cwnd) when its ACKs, spaced at most 2 ms apart, have spanned more
//! than half of the minimum delay plus Linux's TSO/GRO cushion (ACK train; the sender does not
//! pace), or when the minimum RTT of its first eight ACKs exceeds the connection's minimum by
//! max(4 ms, min(16 ms, min/8)) (delay increase). Linux runs it once per ACK, before the ACK
//! grows the window; so does this model, at the first
//! [`on_ack`](CongestionController::on_ack) of each ACK frame.

use std::time::Duration;

use crate::config::CommonCcConfig;
use crate::params::Limits;
use crate::recovery::Recovery;
use crate::{window_phase, CongestionController, Phase, RttSample};

/// Linux's `BICTCP_BETA_SCALE`: β is `beta / 1024`.
const BETA_SCALE: u64 = 1024;
/// Linux's `beta` default (717/1024 ≈ 0.7).
const DEFAULT_BETA: u64 = 717;
/// Linux's `bic_scale` · 10: C = 410/1024 segments per second cubed.
const CUBE_RTT_SCALE: u64 = 410;
/// `BICTCP_HZ`: the curve's time unit is 1/1024 s.
const BICTCP_HZ: u32 = 10;
/// The kernel's tick (Debian's `CONFIG_HZ_250`).
const JIFFY: Duration = Duration::from_millis(4);
/// Ticks per second.
const HZ: u64 = 250;
/// `cnt` is recomputed at most every HZ/32 ticks while the window does not change.
const RECOMPUTE_TICKS: u64 = HZ / 32;
/// HyStart's detectors: only from this window on (`hystart_low_window`).
const HYSTART_LOW_WINDOW: u64 = 16;
/// Largest TSO/GRO cushion added to the ACK-train threshold (`hystart_ack_delay`: 1 ms).
const HYSTART_ACK_DELAY_MAX: Duration = Duration::from_millis(1);
/// `sk_gso_max_size` of the cushion: Linux's default GSO limit (`GSO_LEGACY_MAX_SIZE`), bytes.
const GSO_MAX_SIZE: u64 = 65_536;
/// HyStart ACK train: ACKs closer than this belong to one train (`hystart_ack_delta_us`).
const HYSTART_ACK_DELTA: Duration = Duration::from_millis(2);
/// HyStart delay detector: samples per round before it decides (`HYSTART_MIN_SAMPLES`).
const HYSTART_MIN_SAMPLES: u32 = 8;
/// Bounds of the delay detector's threshold (`HYSTART_DELAY_MIN` / `_MAX`).
const HYSTART_DELAY_MIN: Duration = Duration::from_millis(4);
const HYSTART_DELAY_MAX: Duration = Duration::from_millis(16);

/// Linux's `struct bictcp` (the fields this model needs), sizes in segments.
#[derive(Debug, Clone, Default)]
struct Bictcp {
    /// Acknowledged segments per window increment.
    cnt: u64,
    last_max_cwnd: u64,
    last_cwnd: u64,
    /// Tick of the last `cnt` computation.
    last_time: u64,
    origin_point: u64,
    /// K in 1/1024 s.
    k: u64,
    /// Minimum RTT; `None` until the first sample (Linux's 0).
    delay_min: Option<Duration>,
    /// Tick at which the epoch started; `None`: no epoch (Linux's 0).
    epoch_start: Option<u64>,
    ack_cnt: u64,
    /// The TCP-friendliness estimate.
    tcp_cwnd: u64,
    /// HyStart found the exit.
    found: bool,
    // HyStart's round.
    round_start: Duration,
    last_ack: Duration,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

/// CUBIC with Linux's arithmetic; see the module docs.
#[derive(Debug, Clone)]
pub(crate) struct LinuxCubic {
    limits: Limits,
    /// β in 1/1024.
    beta: u64,
    /// `beta_scale` of the friendliness estimate (15 for β = 717).
    friendliness_scale: u64,
    hystart: bool,
    /// Window in segments.
    cwnd: u64,
    /// `snd_cwnd_cnt`.
    cwnd_cnt: u64,
    /// ssthresh in segments; `None` = infinite.
    ssthresh: Option<u64>,
    recovery: Recovery,
    ca: Bictcp,
    /// Acknowledged bytes not yet a whole segment (QUIC packets may be short).
    partial: u64,
    /// The next `on_ack` is the first of an ACK frame (runs HyStart, like Linux's pkts_acked).
    frame_start: bool,
    app_limited_since: Option<Duration>,
}

impl LinuxCubic {
    /// A controller at its initial window, in slow start.
    pub(crate) fn new(hystart: bool, common: &CommonCcConfig, max_datagram_size: u64) -> Self {
        let limits = Limits::new(
            common,
            max_datagram_size,
            DEFAULT_BETA as f64 / BETA_SCALE as f64,
        );
        let beta = ((limits.beta() * BETA_SCALE as f64).round() as u64).clamp(1, BETA_SCALE - 1);
        let friendliness_scale = 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta);
        let cwnd = (limits.initial_window() / limits.mds()).max(1);
        Self {
            limits,
            beta,
            friendliness_scale,
            hystart,
            cwnd,
            cwnd_cnt: 0,
            ssthresh: None,
            recovery: Recovery::default(),
            ca: Bictcp::default(),
            partial: 0,
            frame_start: true,
            app_limited_since: None,
        }
    }

    fn in_slow_start(&self) -> bool {
        self.ssthresh.is_none_or(|s| self.cwnd < s)
    }

    fn min_segments(&self) -> u64 {
        (self.limits.min_window() / self.limits.mds()).max(1)
    }

    /// `bictcp_hystart_reset`: a new round starts now.
    fn hystart_reset(&mut self, now: Duration) {
        self.ca.round_start = now;
        self.ca.last_ack = now;
        self.ca.curr_rtt = None;
        self.ca.sample_cnt = 0;
    }

    /// `bictcp_reset` (all of the curve's state, HyStart's `found` included) and a new
    /// HyStart round.
    fn reset(&mut self, now: Duration) {
        self.ca = Bictcp::default();
        self.hystart_reset(now);
    }

    /// `cubictcp_acked`: the RTT sample of one ACK; `sent` is the send time of the newest data
    /// it acknowledges, which tells whether the ACK ends HyStart's round; `srtt` gives Linux's
    /// pacing rate for the ACK-train cushion.
    fn pkts_acked(&mut self, now: Duration, sent: Duration, delay: Duration, srtt: Duration) {
        // Samples right after a reduction are discarded (within a second of the epoch start).
        if self
            .ca
            .epoch_start
            .is_some_and(|e| ticks(now).saturating_sub(e) < HZ)
        {
            return;
        }
        let delay = delay.max(Duration::from_micros(1));
        if self.ca.delay_min.is_none_or(|m| m > delay) {
            self.ca.delay_min = Some(delay);
        }
        if self.hystart && !self.ca.found && self.in_slow_start() {
            self.hystart_update(now, sent, delay, srtt);
        }
    }

    /// `hystart_ack_delay`: min(1 ms, 4 · GSO size / pacing rate), Linux's pacing rate in slow
    /// start being 2 · cwnd / sRTT (`tcp_update_pacing_rate`, set even when nothing paces).
    fn hystart_ack_delay(&self, srtt: Duration) -> Duration {
        let rate = 2.0 * (self.cwnd * self.limits.mds()) as f64 / srtt.as_secs_f64();
        if !(rate.is_finite() && rate > 0.0) {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(4.0 * GSO_MAX_SIZE as f64 / rate).min(HYSTART_ACK_DELAY_MAX)
    }

    /// `hystart_update` with both detectors; the model does not pace (Linux's
    /// `SK_PACING_NONE`), so the ACK-train threshold is half the minimum delay plus cushion.
    fn hystart_update(&mut self, now: Duration, sent: Duration, delay: Duration, srtt: Duration) {
        // Linux: snd_una after the round's end_seq (snd_nxt when it started) = this ACK covers
        // data sent since the round started, the data sent in reply to the ACK that started it
        // included (`>=`). The rounds run below the low window too, so that they start with
        // the first ACK of a train from the first flight on.
        if sent >= self.ca.round_start {
            self.hystart_reset(now);
        }
        if self.cwnd < HYSTART_LOW_WINDOW {
            return;
        }
        let delay_min = self.ca.delay_min.unwrap_or(delay);
        if now.saturating_sub(self.ca.last_ack) <= HYSTART_ACK_DELTA {
            self.ca.last_ack = now;
            let threshold = (delay_min + self.hystart_ack_delay(srtt)) / 2;
            if now.saturating_sub(self.ca.round_start) > threshold {
                self.exit_slow_start();
            }
        }
        let curr = self.ca.curr_rtt.map_or(delay, |c| c.min(delay));
        self.ca.curr_rtt = Some(curr);
        if self.ca.sample_cnt < HYSTART_MIN_SAMPLES {
            self.ca.sample_cnt += 1;
        } else {
            let thresh = (delay_min / 8).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
            if curr > delay_min + thresh {
                self.exit_slow_start();
            }
        }
    }

    fn exit_slow_start(&mut self) {
        self.ca.found = true;
        self.ssthresh = Some(self.cwnd);
    }

    /// `tcp_slow_start`: grows to at most ssthresh; returns the segments left over.
    fn slow_start(&mut self, acked: u64) -> u64 {
        let target = self.cwnd.saturating_add(acked);
        let cwnd = self.ssthresh.map_or(target, |s| target.min(s));
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd;
        left
    }

    /// `bictcp_update`: recomputes `cnt` for the current window.
    fn update(&mut self, now: Duration, acked: u64) {
        let tick = ticks(now);
        let cwnd = self.cwnd;
        let ca = &mut self.ca;
        ca.ack_cnt += acked;
        if ca.last_cwnd == cwnd && tick.saturating_sub(ca.last_time) <= RECOMPUTE_TICKS {
            return;
        }
        // At most one computation per tick; a new epoch always computes.
        if !(ca.epoch_start.is_some() && tick == ca.last_time) {
            ca.last_cwnd = cwnd;
            ca.last_time = tick;
            let epoch_start = match ca.epoch_start {
                Some(e) => e,
                None => {
                    ca.epoch_start = Some(tick);
                    ca.ack_cnt = acked;
                    ca.tcp_cwnd = cwnd;
                    if ca.last_max_cwnd <= cwnd {
                        ca.k = 0;
                        ca.origin_point = cwnd;
                    } else {
                        ca.k = cube_root_k(ca.last_max_cwnd - cwnd);
                        ca.origin_point = ca.last_max_cwnd;
                    }
                    tick
                }
            };
            // t = time since the epoch started plus the minimum RTT, in 1/1024 s.
            let delay_ticks = ca.delay_min.map_or(0, usecs_to_ticks);
            let t = (tick.saturating_sub(epoch_start) + delay_ticks) << BICTCP_HZ;
            let t = t / HZ;
            let offs = t.abs_diff(ca.k);
            let delta =
                ((CUBE_RTT_SCALE as u128 * u128::from(offs).pow(3)) >> (10 + 3 * BICTCP_HZ)) as u64;
            let target = if t < ca.k {
                ca.origin_point.saturating_sub(delta)
            } else {
                ca.origin_point.saturating_add(delta)
            };
            ca.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd
            };
            // Before any loss, grow at least 5% per RTT.
            if ca.last_max_cwnd == 0 && ca.cnt > 20 {
                ca.cnt = 20;
            }
        }
        // TCP friendliness: Reno's window at the constant rate 3(1−β)/(1+β).
        let delta = (cwnd * self.friendliness_scale) >> 3;
        if let Some(steps) = ca.ack_cnt.checked_div(delta) {
            ca.ack_cnt -= steps * delta;
            ca.tcp_cwnd += steps;
            // Linux's loop runs while ack_cnt > delta (strictly): keep one delta back.
            if steps > 0 && ca.ack_cnt == 0 {
                ca.ack_cnt = delta;
                ca.tcp_cwnd -= 1;
            }
        }
        if ca.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (ca.tcp_cwnd - cwnd);
            ca.cnt = ca.cnt.min(max_cnt);
        }
        // At most 1.5× per RTT.
        ca.cnt = ca.cnt.max(2);
    }

    /// `tcp_cong_avoid_ai`.
    fn cong_avoid_ai(&mut self, w: u64, acked: u64) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }

    /// `cubictcp_recalc_ssthresh`: ends the epoch, updates W_max (fast convergence), returns
    /// the new ssthresh in segments.
    fn recalc_ssthresh(&mut self) -> u64 {
        self.ca.epoch_start = None;
        self.ca.last_max_cwnd = if self.cwnd < self.ca.last_max_cwnd {
            self.cwnd * (BETA_SCALE + self.beta) / (2 * BETA_SCALE)
        } else {
            self.cwnd
        };
        (self.cwnd * self.beta / BETA_SCALE).max(self.min_segments())
    }
}

/// Ticks since the start of the run.
fn ticks(now: Duration) -> u64 {
    (now.as_micros() / JIFFY.as_micros()) as u64
}

/// `usecs_to_jiffies` (rounds up).
fn usecs_to_ticks(d: Duration) -> u64 {
    d.as_micros().div_ceil(JIFFY.as_micros()) as u64
}

/// K in 1/1024 s for a window `diff` segments below W_max: cbrt(2^40 / 410 · diff).
fn cube_root_k(diff: u64) -> u64 {
    let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE;
    ((cube_factor as f64) * (diff as f64)).cbrt() as u64
}

impl CongestionController for LinuxCubic {
    fn on_sent(&mut self, _now: Duration, _bytes: u64, _pn: u64) {}

    fn on_ack(
        &mut self,
        now: Duration,
        sent: Duration,
        bytes: u64,
        app_limited: bool,
        rtt: &RttSample,
    ) {
        if std::mem::take(&mut self.frame_start) {
            // The frame's newest data was sent one latest RTT ago (the transports sample the
            // RTT from it); the calls come oldest first, so `sent` may be older.
            let newest = sent.max(now.saturating_sub(rtt.latest));
            self.pkts_acked(now, newest, rtt.latest, rtt.smoothed);
        }
        if !self.recovery.on_ack(sent) {
            return;
        }
        if app_limited {
            // Linux's CA_EVENT_TX_START shifts the epoch by the idle time; shifting when the
            // sender is limited again has the same effect on t.
            if self.ca.epoch_start.is_some() && self.app_limited_since.is_none() {
                self.app_limited_since = Some(now);
            }
            return;
        }
        if let (Some(since), Some(start)) = (self.app_limited_since.take(), self.ca.epoch_start) {
            let idle = ticks(now).saturating_sub(ticks(since));
            self.ca.epoch_start = Some((start + idle).min(ticks(now)));
        }
        self.partial += bytes;
        let mds = self.limits.mds();
        let mut acked = self.partial / mds;
        self.partial %= mds;
        if acked == 0 {
            return;
        }
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(now, acked);
        self.cong_avoid_ai(self.ca.cnt, acked);
    }

    fn on_end_acks(
        &mut self,
        _now: Duration,
        _in_flight: u64,
        _app_limited: bool,
        _largest_acked: Option<u64>,
    ) {
        self.frame_start = true;
    }

    fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent_congestion: bool,
        _lost_bytes: u64,
    ) {
        if !self.recovery.covers(sent) {
            self.recovery.enter(now);
            let ssthresh = self.recalc_ssthresh();
            self.ssthresh = Some(ssthresh);
            // The transport shapes the way down (TCP: PRR); the controller's window is where
            // the reduction ends (tcp_end_cwnd_reduction), and the counter restarts.
            self.cwnd = ssthresh;
            self.cwnd_cnt = 0;
            self.app_limited_since = None;
        }
        if persistent_congestion {
            self.cwnd = self.min_segments();
            self.cwnd_cnt = 0;
            self.recovery.reset();
            self.reset(now);
            self.app_limited_since = None;
        }
    }

    fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64) {
        if reduce {
            let ssthresh = self.recalc_ssthresh();
            self.ssthresh = Some(ssthresh);
        }
        self.cwnd = (window / self.limits.mds()).max(1);
        self.cwnd_cnt = 0;
        self.recovery.reset();
        // Entering the Loss state resets the curve and HyStart (cubictcp_state).
        self.reset(now);
        self.app_limited_since = None;
    }

    fn on_mtu_update(&mut self, max_datagram_size: u64) {
        self.limits.set_mds(max_datagram_size);
        self.cwnd = self.cwnd.max(self.min_segments());
    }

    fn window(&self) -> u64 {
        self.cwnd.saturating_mul(self.limits.mds())
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh.map(|s| s.saturating_mul(self.limits.mds()))
    }

    fn initial_window(&self) -> u64 {
        self.limits.initial_window()
    }

    fn phase(&self) -> Phase {
        window_phase(self.window(), self.ssthresh(), self.recovery.active())
    }

    fn box_clone(&self) -> Box<dyn CongestionController> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::Fluid;

    const MDS: u64 = 1000;
    const MS: Duration = Duration::from_millis(1);

    fn cubic(hystart: bool, iw: u64) -> LinuxCubic {
        let common = CommonCcConfig {
            initial_window_packets: iw,
            loss_reduction_factor: 0.7,
            minimum_window_packets: 2,
        };
        LinuxCubic::new(hystart, &common, MDS)
    }

    fn rtt(latest: Duration) -> RttSample {
        RttSample {
            latest,
            smoothed: latest,
            min: latest,
        }
    }

    /// One ACK frame acknowledging one segment sent at `sent`.
    fn ack_one(cc: &mut LinuxCubic, now: Duration, sent: Duration, sample: Duration) {
        cc.on_ack(now, sent, MDS, false, &rtt(sample));
        cc.on_end_acks(now, 0, false, None);
    }

    #[test]
    fn ssthresh_is_whole_segments_with_beta_717_and_linux_fast_convergence() {
        let mut cc = cubic(false, 100);
        assert_eq!(cc.beta, 717);
        assert_eq!(cc.friendliness_scale, 15, "8 · 1741 / 3 / 307");
        cc.on_congestion_event(10 * MS, 5 * MS, false, MDS);
        // 100 · 717 / 1024 = 70.02 → 70 segments (RFC 9438 in bytes: 70 000 exactly).
        assert_eq!(cc.window(), 70 * MDS);
        assert_eq!(cc.ssthresh(), Some(70 * MDS));
        assert_eq!(cc.ca.last_max_cwnd, 100);
        // A loss at 57 segments, below W_max = 100: 57 · 717 / 1024 = 39.9 → 39 segments
        // (RFC 9438: 39.9 segments' worth of bytes), and fast convergence takes W_max to
        // 57 · 1741 / 2048 = 48.45 → 48.
        cc.cwnd = 57;
        cc.cwnd_cnt = 9;
        cc.on_congestion_event(30 * MS, 20 * MS, false, MDS);
        assert_eq!(cc.window(), 39 * MDS);
        assert_eq!(cc.ca.last_max_cwnd, 48);
        assert_eq!(cc.cwnd_cnt, 0, "the counter restarts at every reduction");
        assert_eq!(cc.ca.epoch_start, None);
        // The floor is two segments.
        cc.cwnd = 2;
        cc.on_congestion_event(50 * MS, 40 * MS, false, MDS);
        assert_eq!(cc.window(), 2 * MDS);
    }

    #[test]
    fn growth_after_a_reduction_follows_the_kernel_arithmetic() {
        // Hand trace (100 ms RTT, one ACK per segment, each round's ACKs at one instant):
        // loss at 100 → cwnd 70, W_max 100. Round 0 at 200 ms (tick 50) starts the epoch:
        // K = cbrt(2^40 / 410 · 30) = 4316 (1/1024 s), t = (0 + ⌈100 ms⌉ = 25 ticks) · 1024 /
        // 250 = 102, δ = 410 · (4316 − 102)³ >> 40 = 27, target 73, cnt = 70 / 3 = 23; the
        // friendliness estimate (one segment per 70 · 15 / 8 = 131 ACKs) stays below cwnd.
        // 70 ACKs at cnt 23 → 73 (cnt is not recomputed within the tick). Later rounds
        // recompute once per round (the window changed), giving:
        let expected = [
            (200, 73, 23, 70),
            (300, 75, 36, 71),
            (400, 76, 75, 71),
            (500, 78, 38, 72),
            (600, 80, 39, 72),
            (700, 82, 40, 73),
        ];
        let mut cc = cubic(false, 100);
        cc.on_congestion_event(10 * MS, 5 * MS, false, MDS);
        assert_eq!(cc.window(), 70 * MDS);
        for (now_ms, cwnd, cnt, tcp_cwnd) in expected {
            let now = Duration::from_millis(now_ms);
            let sent = now - 100 * MS;
            let n = cc.cwnd;
            for _ in 0..n {
                cc.on_ack(now, sent, MDS, false, &rtt(100 * MS));
            }
            cc.on_end_acks(now, 0, false, None);
            assert_eq!(
                (cc.cwnd, cc.ca.cnt, cc.ca.tcp_cwnd),
                (cwnd, cnt, tcp_cwnd),
                "round at {now_ms} ms"
            );
            assert_eq!(cc.ca.k, 4316);
            assert_eq!(cc.ca.origin_point, 100);
        }
    }

    #[test]
    fn friendliness_keeps_its_constant_rate_past_w_max() {
        // At a 10 ms RTT the curve (K ≈ 2.5 s) stays flat for a second, so the friendliness
        // estimate sets the pace: one segment per 1.875 windows, ≈ 0.53 per RTT, also once the
        // window is past the pre-loss 20 (RFC 9438 would switch to 1 per RTT there).
        let rtt_d = 10 * MS;
        let mut cc = cubic(false, 20);
        let mut fluid = Fluid::new();
        fluid.now = 10 * MS;
        fluid.loss(&mut cc, MDS, false);
        assert_eq!(cc.window(), 14 * MDS);
        for _ in 0..40 {
            fluid.round(&mut cc, MDS, rtt_d);
        }
        let before = cc.cwnd;
        assert!(before > 20, "past W_max: {before}");
        for _ in 0..50 {
            fluid.round(&mut cc, MDS, rtt_d);
        }
        let grown = (cc.cwnd - before) as f64;
        assert!(
            (grown - 50.0 * 8.0 / 15.0).abs() <= 2.0,
            "≈ 0.53 segments per RTT, grew {grown} in 50 RTTs"
        );
    }

    #[test]
    fn hystart_ack_train_exits_when_a_train_spans_half_the_min_delay() {
        let mut cc = cubic(true, 20);
        // First round (no train: the round started at the connection's start).
        ack_one(&mut cc, 100 * MS, Duration::ZERO, 100 * MS);
        assert_eq!(cc.cwnd, 21);
        // The next round starts with an ACK of data sent after the round began; its ACKs
        // come 1 ms apart. At 251 ms the train spans 51 ms > 100 ms / 2: ssthresh = the
        // window before that ACK, 21 + 51 = 72; that ACK's segment goes to avoidance
        // (K = 0 at 72, target 72 → cnt = 20 before any loss), counter 1.
        for k in 0..=50u64 {
            ack_one(&mut cc, Duration::from_millis(200 + k), 150 * MS, 100 * MS);
            assert_eq!(cc.ssthresh, None, "still in slow start at {} ms", 200 + k);
        }
        assert_eq!(cc.cwnd, 72);
        ack_one(&mut cc, 251 * MS, 150 * MS, 100 * MS);
        assert_eq!(cc.ssthresh(), Some(72 * MDS));
        assert_eq!(cc.window(), 72 * MDS);
        assert_eq!((cc.ca.cnt, cc.cwnd_cnt), (20, 1));
        assert_eq!(cc.phase(), Phase::CongestionAvoidance);
    }

    #[test]
    fn hystart_delay_exits_on_the_ninth_sample_above_the_threshold() {
        for (sample_ms, exits) in [(113, true), (112, false)] {
            let mut cc = cubic(true, 20);
            ack_one(&mut cc, 100 * MS, Duration::ZERO, 100 * MS);
            // ACKs 3 ms apart (no train). Threshold: 100 + clamp(100 / 8, 4, 16) = 112.5 ms.
            for k in 0..8u64 {
                ack_one(
                    &mut cc,
                    Duration::from_millis(200 + 3 * k),
                    150 * MS,
                    sample_ms * MS,
                );
            }
            assert_eq!(cc.ssthresh, None);
            assert_eq!(cc.cwnd, 29);
            ack_one(&mut cc, 224 * MS, 150 * MS, sample_ms * MS);
            if exits {
                assert_eq!(cc.ssthresh(), Some(29 * MDS), "{sample_ms} ms");
            } else {
                assert_eq!(cc.ssthresh, None, "{sample_ms} ms");
                assert_eq!(cc.cwnd, 30);
            }
        }
    }

    #[test]
    fn hystart_detectors_wait_for_16_segments_but_its_rounds_do_not() {
        let mut cc = cubic(true, 10);
        ack_one(&mut cc, 100 * MS, Duration::ZERO, 100 * MS);
        // The ACK at 200 ms (window 11) covers data sent since the round began: a new round
        // starts there although the window is below 16 (current Linux keeps the rounds on
        // every slow-start ACK). The detectors skip ACKs below 16 segments, so the train's
        // last ACK stays at 200 ms; at 205 ms (window 16) the gap is 5 ms > 2 ms and this
        // round has no train: no exit however long its 1 ms-spaced ACKs go on.
        for k in 0..=56u64 {
            ack_one(&mut cc, Duration::from_millis(200 + k), 150 * MS, 100 * MS);
        }
        assert_eq!((cc.cwnd, cc.ssthresh), (68, None));
        assert_eq!(cc.ca.round_start, 200 * MS);
        // The next round starts with its first ACK at 300 ms, from 16 segments on: its train
        // exits once it spans more than 50 ms (at 351 ms), with the window before that ACK.
        for k in 0..=50u64 {
            ack_one(&mut cc, Duration::from_millis(300 + k), 250 * MS, 100 * MS);
        }
        assert_eq!((cc.cwnd, cc.ssthresh), (119, None));
        ack_one(&mut cc, 351 * MS, 250 * MS, 100 * MS);
        assert_eq!(cc.ssthresh, Some(119));
    }

    #[test]
    fn timeout_sets_the_given_window_and_resets_the_curve() {
        let mut cc = cubic(true, 100);
        cc.on_retransmission_timeout(50 * MS, true, 3 * MDS + 10);
        assert_eq!(cc.window(), 3 * MDS);
        assert_eq!(cc.ssthresh(), Some(70 * MDS));
        assert_eq!(
            cc.ca.last_max_cwnd, 0,
            "Loss state resets W_max (bictcp_reset)"
        );
        assert_eq!(cc.phase(), Phase::SlowStart);
        // A backoff keeps ssthresh.
        cc.on_retransmission_timeout(500 * MS, false, 0);
        assert_eq!(cc.window(), MDS);
        assert_eq!(cc.ssthresh(), Some(70 * MDS));
    }
}
