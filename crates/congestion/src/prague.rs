//! TCP Prague (draft-briscoe-iccrg-prague-congestion-control-04, the L4STeam's `tcp_prague.c`):
//! DCTCP's response to ECN with the L4S adaptations.
//!
//! - **α**: the fraction of CE-marked bytes, a moving average with gain 1/16 kept at 2^20
//!   resolution and upscaled by 16 so remainders carry over; it starts at 1 and is not updated
//!   before the first CE mark (no AQM seen, no estimate). It is updated once per observation
//!   window (one round trip, delimited by the packet sent next at its start) and, once the
//!   flow is RTT-independent, at most once per reference RTT.
//! - **Window**: a fractional window (2^20 units per datagram) beside the whole-datagram window
//!   the sender uses, which moves one datagram per ACK towards it. Each ACK adds
//!   `acked · ai / cwnd` for its bytes not reported CE (at least one unit), where ai is one
//!   datagram per round trip, scaled for RTT independence (below). A CE reaction (once per
//!   round trip, and at most once per reference RTT once RTT-independent) takes
//!   ⌊(α · W + ½) / 2⌋ off the fractional window; the stepping window then sets ssthresh as it
//!   comes down, which is how slow start ends on the first mark.
//! - **RTT independence**: the `rate` mode, the reference implementation's default: after 500
//!   rounds in congestion avoidance, a flow whose smoothed RTT R is below the 25 ms reference
//!   grows by (R / 25 ms)² datagrams per round trip, so its rate grows as a 25 ms flow's does
//!   (flows above 100 ms, or at or above the reference, grow one datagram per round).
//! - **Loss**: the classic response: the fractional window times β (default ½) once per
//!   recovery period, no growth until data sent after the loss is acknowledged; a
//!   retransmission timeout halves the same way and slow start resumes from the transport's
//!   window.
//! - **Pacing**: [`pacing_rate`](CongestionController::pacing_rate) is W · datagram / SRTT,
//!   doubled while the window is below half of ssthresh (slow start), as the draft and the
//!   reference code set it.
//!
//! Where it differs from the reference code: RTTs are in microseconds (Linux: units of
//! 128 µs); the fractional window follows the whole window through slow start (the reference
//! code grows only `snd_cwnd` there); the pacing rate counts the datagram payload, not the
//! IP packet; the classic-ECN-AQM detection (off by default there) and the GSO burst bound
//! are not modelled.

use std::time::Duration;

use crate::ce_window::CeWindow;
use crate::config::CommonCcConfig;
use crate::params::Limits;
use crate::recovery::Recovery;
use crate::{window_phase, CongestionController, Phase, RttSample};

/// Fixed-point unit of the fractional window: one datagram.
const ONE: u64 = 1 << 20;
/// α = 1 at 2^20 resolution.
const ALPHA_ONE: u64 = 1 << 20;
/// EWMA gain 1/2^4.
const SHIFT_G: u32 = 4;
/// Rounds after slow start before RTT independence applies.
const RTT_TRANSITION_ROUNDS: u64 = 500;
/// The reference RTT of the `rate` mode.
pub(crate) const TARGET_RTT: Duration = Duration::from_millis(25);
/// Above this RTT the increase is never scaled.
const MAX_SCALED_RTT: Duration = Duration::from_millis(100);

/// Prague state; windows in datagrams (`cwnd`, `ssthresh`) or 2^-20 datagrams (`frac`).
#[derive(Debug, Clone)]
pub(crate) struct Prague {
    limits: Limits,
    frac: u64,
    cwnd: u64,
    ssthresh: Option<u64>,
    /// α · 16 at 2^20 resolution.
    alpha_up: u64,
    saw_ce: bool,
    window: CeWindow,
    /// Rounds since slow start ended.
    round: u64,
    /// Fractional units added per acknowledged datagram and per datagram of window.
    ai: u64,
    srtt: Duration,
    alpha_stamp: Duration,
    cwr_stamp: Option<Duration>,
    /// One CE reaction per round trip (Linux's CWR state).
    cwr: Recovery,
    /// No growth until data sent after a loss is acknowledged.
    loss: Recovery,
    /// This ACK frame: bytes newly acknowledged and reported CE.
    ack_bytes: u64,
    ack_ce: u64,
    /// Acknowledged non-CE bytes short of a whole datagram.
    carry: u64,
}

impl Prague {
    /// A controller at its initial window, α = 1.
    pub(crate) fn new(common: &CommonCcConfig, max_datagram_size: u64) -> Self {
        let limits = Limits::new(common, max_datagram_size, 0.5);
        let cwnd = (limits.initial_window() / limits.mds()).max(1);
        Self {
            limits,
            frac: cwnd * ONE,
            cwnd,
            ssthresh: None,
            alpha_up: ALPHA_ONE << SHIFT_G,
            saw_ce: false,
            window: CeWindow::default(),
            round: 0,
            ai: ONE,
            srtt: Duration::ZERO,
            alpha_stamp: Duration::ZERO,
            cwr_stamp: None,
            cwr: Recovery::default(),
            loss: Recovery::default(),
            ack_bytes: 0,
            ack_ce: 0,
            carry: 0,
        }
    }

    fn min_segments(&self) -> u64 {
        (self.limits.min_window() / self.limits.mds()).max(1)
    }

    fn in_slow_start(&self) -> bool {
        self.ssthresh.is_none_or(|s| self.cwnd < s)
    }

    fn rtt_independent(&self) -> bool {
        !self.in_slow_start() && self.round >= RTT_TRANSITION_ROUNDS
    }

    /// The fractional window rounded up to whole datagrams.
    fn frac_segments(&self) -> u64 {
        self.frac.div_ceil(ONE).max(1)
    }

    /// α at 2^20 resolution.
    pub(crate) fn alpha(&self) -> u64 {
        self.alpha_up >> SHIFT_G
    }

    /// The additive increase per round trip in 2^-20 datagrams: one datagram, or
    /// (R / reference)² of one once RTT-independent.
    fn ai_increase(&self) -> u64 {
        let r = self.srtt;
        if self.round < RTT_TRANSITION_ROUNDS
            || r.is_zero()
            || r > MAX_SCALED_RTT
            || r >= TARGET_RTT
        {
            return ONE;
        }
        let r = r.as_micros();
        let t = TARGET_RTT.as_micros();
        let d = t * t;
        ((u128::from(ONE) * r * r + d / 2) / d) as u64
    }

    /// Per ACK: growth for the bytes not reported CE, then one step of the whole window.
    fn update_window(&mut self, app_limited: bool) {
        let ce = self.ack_ce.min(self.ack_bytes);
        if ce > 0 {
            self.saw_ce = true;
        }
        let mds = self.limits.mds();
        self.carry += self.ack_bytes - ce;
        let mut acked = self.carry / mds;
        self.carry %= mds;
        if acked > 0 && !self.loss.active() && !app_limited {
            if self.in_slow_start() {
                let grown = self
                    .ssthresh
                    .map_or(self.cwnd + acked, |s| (self.cwnd + acked).min(s));
                acked -= grown - self.cwnd;
                self.cwnd = grown;
                self.frac = self.cwnd * ONE;
                if acked == 0 {
                    return;
                }
            }
            let w = self.frac_segments();
            let increase = (acked * self.ai + w / 2) / w;
            self.frac += increase.max(acked);
        }
        let target = self.frac_segments();
        if self.cwnd > target && self.cwnd > self.min_segments() {
            self.cwnd -= 1;
            self.ssthresh = Some(self.cwnd);
        } else if self.cwnd < target {
            self.cwnd += 1;
        }
    }

    /// Once per observation window (and reference RTT when RTT-independent): α's EWMA step
    /// if a CE mark was ever seen, then a new round.
    fn maybe_new_round(&mut self, now: Duration, largest_acked: Option<u64>) {
        if !self.window.elapsed(largest_acked) {
            return;
        }
        if self.rtt_independent() && now.saturating_sub(self.alpha_stamp) < TARGET_RTT {
            return;
        }
        let c = self.window.restart();
        if self.saw_ce {
            let f = if c.delivered_ce > 0 {
                ((u128::from(c.delivered_ce) << 20) / u128::from(c.delivered.max(1))) as u64
            } else {
                0
            };
            let a = self.alpha_up - (self.alpha_up >> SHIFT_G) + f;
            self.alpha_up = a.min(ALPHA_ONE << SHIFT_G);
            self.alpha_stamp = now;
        }
        if !self.in_slow_start() {
            self.round += 1;
        }
        self.ai = self.ai_increase();
    }

    /// The CE reaction: ⌊(α · W + ½) / 2⌋ off the fractional window.
    fn enter_cwr(&mut self, now: Duration) {
        if self.rtt_independent()
            && self
                .cwr_stamp
                .is_some_and(|s| now.saturating_sub(s) < TARGET_RTT)
        {
            return;
        }
        self.cwr_stamp = Some(now);
        let reduction = ((u128::from(self.alpha()) * u128::from(self.frac) + u128::from(ALPHA_ONE))
            >> 21) as u64;
        self.frac -= reduction.min(self.frac);
    }

    /// The classic response: the fractional window times β.
    fn loss_reduction(&self) -> u64 {
        let keep = (self.frac as f64 * self.limits.beta()) as u64;
        keep.max(self.min_segments() * ONE)
    }
}

impl CongestionController for Prague {
    fn on_sent(&mut self, _now: Duration, _bytes: u64, pn: u64) {
        self.window.on_sent(pn);
    }

    fn on_ack(
        &mut self,
        _now: Duration,
        sent: Duration,
        bytes: u64,
        _app_limited: bool,
        rtt: &RttSample,
    ) {
        self.loss.on_ack(sent);
        self.cwr.on_ack(sent);
        self.ack_bytes = self.ack_bytes.saturating_add(bytes);
        self.srtt = rtt.smoothed;
    }

    fn on_ecn_feedback(&mut self, _now: Duration, acked_bytes: u64, ce_bytes: u64) {
        self.window.on_feedback(acked_bytes, ce_bytes);
        self.ack_ce = self.ack_ce.saturating_add(ce_bytes);
    }

    fn on_end_acks(
        &mut self,
        now: Duration,
        _in_flight: u64,
        app_limited: bool,
        largest_acked: Option<u64>,
    ) {
        self.update_window(app_limited);
        self.maybe_new_round(now, largest_acked);
        self.ack_bytes = 0;
        self.ack_ce = 0;
    }

    fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        if lost_bytes == 0 {
            if !self.cwr.covers(sent) {
                self.cwr.enter(now);
                self.enter_cwr(now);
            }
        } else if !self.loss.covers(sent) {
            self.loss.enter(now);
            self.frac = self.loss_reduction();
            self.ssthresh = Some(self.frac_segments());
        }
        if persistent_congestion {
            self.cwnd = self.min_segments();
            self.frac = self.cwnd * ONE;
            self.loss.reset();
            self.cwr.reset();
        }
    }

    fn on_retransmission_timeout(&mut self, _now: Duration, reduce: bool, window: u64) {
        if reduce {
            self.frac = self.loss_reduction();
            self.ssthresh = Some(self.frac_segments());
        }
        self.cwnd = (window / self.limits.mds()).max(1);
        self.frac = self.cwnd * ONE;
        self.loss.reset();
        self.cwr.reset();
    }

    fn on_mtu_update(&mut self, max_datagram_size: u64) {
        self.limits.set_mds(max_datagram_size);
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
        window_phase(self.cwnd, self.ssthresh, self.loss.active())
    }

    fn pacing_rate(&self) -> Option<u64> {
        if self.srtt.is_zero() {
            return None;
        }
        let mut rate = u128::from(self.limits.mds()) * u128::from(self.frac) * 1_000_000_000
            / (u128::from(ONE) * self.srtt.as_nanos());
        if self.ssthresh.is_none_or(|s| self.cwnd < s / 2) {
            rate *= 2;
        }
        Some(u64::try_from(rate).unwrap_or(u64::MAX))
    }

    fn controls_reductions(&self) -> bool {
        true
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

    fn prague() -> Prague {
        let common = CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.5,
            minimum_window_packets: 2,
        };
        Prague::new(&common, MDS)
    }

    fn rtt(r: Duration) -> RttSample {
        RttSample {
            latest: r,
            smoothed: r,
            min: r,
        }
    }

    /// One ACK of `n` datagrams, `ce` of them CE, the largest numbered `largest`.
    fn ack(cc: &mut Prague, now: Duration, sent: Duration, n: u64, ce: u64, largest: u64) {
        for _ in 0..n {
            cc.on_ack(now, sent, MDS, false, &rtt(10 * MS));
        }
        cc.on_ecn_feedback(now, n * MDS, ce * MDS);
        cc.on_end_acks(now, 0, false, Some(largest));
    }

    #[test]
    fn the_first_mark_ends_slow_start_with_half_the_window() {
        let mut cc = prague();
        let mut fluid = Fluid::new();
        fluid.round(&mut cc, MDS, 10 * MS);
        assert_eq!(cc.window(), 20 * MDS);
        assert_eq!(cc.phase(), Phase::SlowStart);
        // α is 1 until a mark is seen: the reaction halves the fractional window.
        cc.on_congestion_event(fluid.now, fluid.now, false, 0);
        assert_eq!(cc.frac, 10 * ONE);
        assert_eq!(cc.window(), 20 * MDS, "the whole window steps down per ACK");
        let t = fluid.now + 10 * MS;
        ack(&mut cc, t, t, 1, 1, 20);
        assert_eq!((cc.window(), cc.ssthresh()), (19 * MDS, Some(19 * MDS)));
        for _ in 0..20 {
            ack(&mut cc, t, t, 1, 1, 20);
        }
        assert_eq!(cc.window(), 10 * MDS, "down to the fractional window");
        assert_eq!(cc.phase(), Phase::CongestionAvoidance);
    }

    #[test]
    fn alpha_waits_for_a_mark_then_follows_the_fraction() {
        let mut cc = prague();
        let mut fluid = Fluid::new();
        fluid.round(&mut cc, MDS, 10 * MS);
        assert_eq!(cc.alpha(), ALPHA_ONE, "no mark yet: no update");
        for pn in 10..30 {
            cc.on_sent(fluid.now, MDS, pn);
        }
        let t = fluid.now + 10 * MS;
        // A quarter marked; the window (ending at pn 10) ends at this ACK.
        ack(&mut cc, t, t, 20, 5, 29);
        // 16·α − α + F = 15 · 2^20 + 2^18, over 16.
        assert_eq!(cc.alpha(), (15 * ALPHA_ONE + ALPHA_ONE / 4) / 16);
        // The reaction takes ⌊(α · W + ½) / 2⌋ off.
        cc.frac = 40 * ONE;
        let alpha = cc.alpha();
        cc.on_congestion_event(t, t, false, 0);
        let cut = (alpha * 40 * ONE + ALPHA_ONE) >> 21;
        assert_eq!(cc.frac, 40 * ONE - cut);
        // Once per round trip: a second CE on data sent before the reaction does nothing.
        cc.on_congestion_event(t + MS, t, false, 0);
        assert_eq!(cc.frac, 40 * ONE - cut);
    }

    #[test]
    fn additive_increase_is_one_datagram_per_round_then_rtt_scaled() {
        let mut cc = prague();
        cc.ssthresh = Some(10);
        // 10 datagrams acknowledged one per ACK: ai / W each, W the fractional window
        // rounded up (10, then 11 once the first increase lands): about one datagram.
        let t = 100 * MS;
        for _ in 0..10 {
            ack(&mut cc, t, t, 1, 0, 0);
        }
        // (2^20 + 5) / 10 = 104 858, then 9 × (2^20 + 5) / 11 = 9 × 95 325.
        assert_eq!(cc.frac, 10 * ONE + 104_858 + 9 * 95_325);
        assert_eq!(
            cc.window(),
            11 * MDS,
            "the whole window follows, one step per ACK"
        );
        // CE-marked bytes do not grow the window.
        let before = cc.frac;
        ack(&mut cc, t, t, 1, 1, 0);
        assert_eq!(cc.frac, before);
        // After the transition, 5 ms against the 25 ms reference: (1/5)² of a datagram.
        cc.round = RTT_TRANSITION_ROUNDS;
        cc.srtt = 5 * MS;
        assert_eq!(cc.ai_increase(), ONE / 25);
        cc.srtt = 10 * MS;
        assert_eq!(cc.ai_increase(), ONE * 4 / 25, "(10 / 25)²");
        cc.srtt = 30 * MS;
        assert_eq!(cc.ai_increase(), ONE, "at or above the reference: unscaled");
        cc.srtt = 200 * MS;
        assert_eq!(cc.ai_increase(), ONE);
    }

    #[test]
    fn loss_halves_and_blocks_growth_until_new_data_is_acked() {
        let mut cc = prague();
        cc.ssthresh = Some(10);
        cc.on_congestion_event(50 * MS, 40 * MS, false, MDS);
        assert_eq!(cc.frac, 5 * ONE);
        assert_eq!(cc.phase(), Phase::Recovery);
        ack(&mut cc, 60 * MS, 30 * MS, 1, 0, 0);
        assert_eq!(cc.frac, 5 * ONE, "no growth in loss recovery");
        assert_eq!(cc.window(), 9 * MDS, "but the window steps down");
        cc.on_congestion_event(61 * MS, 45 * MS, false, MDS);
        assert_eq!(cc.frac, 5 * ONE, "once per recovery period");
        ack(&mut cc, 70 * MS, 55 * MS, 1, 0, 0);
        assert!(cc.frac > 5 * ONE, "new data acknowledged: growth resumes");
        cc.on_retransmission_timeout(80 * MS, true, 2 * MDS);
        assert_eq!(cc.window(), 2 * MDS);
        assert_eq!(cc.phase(), Phase::SlowStart);
    }

    #[test]
    fn pacing_is_the_window_per_srtt_doubled_in_slow_start() {
        let mut cc = prague();
        assert_eq!(cc.pacing_rate(), None, "no RTT yet");
        cc.srtt = 10 * MS;
        // 10 datagrams of 1000 B per 10 ms = 1 MB/s, doubled in slow start.
        assert_eq!(cc.pacing_rate(), Some(2_000_000));
        cc.ssthresh = Some(10);
        assert_eq!(cc.pacing_rate(), Some(1_000_000));
    }
}
