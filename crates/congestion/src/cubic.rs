//! CUBIC (RFC 9438), with classic slow start or HyStart++ (RFC 9406).
//!
//! Windows are kept in `f64` bytes so the small per-ACK increments of the concave and plateau
//! regions are not rounded away; `window()` reports whole bytes. W_max and K are computed in
//! units of the max datagram size as the RFC writes them.

use std::time::Duration;

use crate::config::CommonCcConfig;
use crate::hystart::{HyStart, RoundOutcome};
use crate::params::Limits;
use crate::recovery::Recovery;
use crate::{window_phase, CongestionController, Phase, RttSample};

/// CUBIC's scaling constant C, in datagrams per second cubed.
const C: f64 = 0.4;
/// β_cubic used when the configured reduction factor is not a number.
const DEFAULT_BETA: f64 = 0.7;

/// One congestion-avoidance stage: the cubic curve and the Reno-friendly estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Epoch {
    /// t_epoch, shifted forward by app-limited periods.
    start: Duration,
    /// K in seconds.
    k: f64,
    /// W_max in bytes.
    w_max: f64,
    /// W_est in bytes.
    w_est: f64,
}

/// CUBIC state; sizes in bytes.
#[derive(Debug, Clone)]
pub(crate) struct Cubic {
    limits: Limits,
    cwnd: f64,
    ssthresh: Option<u64>,
    recovery: Recovery,
    /// Window before the last reduction (after fast convergence); `None` before any.
    w_max: Option<f64>,
    /// Window just before the last reduction; α_cubic becomes 1 once W_est reaches it.
    cwnd_prior: f64,
    /// Set W_max to the window at the start of the next epoch (K = 0): after a timeout
    /// (RFC 9438 §4.8) or a slow-start exit without loss (§4.10).
    w_max_from_epoch: bool,
    epoch: Option<Epoch>,
    /// Start of the current app-limited stretch in congestion avoidance.
    app_limited_since: Option<Duration>,
    /// HyStart++ state during the initial slow start only (RFC 9406 §4.3 recommends it only
    /// while ssthresh is still infinite).
    hystart: Option<HyStart>,
}

impl Cubic {
    /// A controller at its initial window, in slow start.
    pub(crate) fn new(hystart: bool, common: &CommonCcConfig, max_datagram_size: u64) -> Self {
        let limits = Limits::new(common, max_datagram_size, DEFAULT_BETA);
        let cwnd = limits.initial_window() as f64;
        Self {
            limits,
            cwnd,
            ssthresh: None,
            recovery: Recovery::default(),
            w_max: None,
            cwnd_prior: cwnd,
            w_max_from_epoch: false,
            epoch: None,
            app_limited_since: None,
            hystart: hystart.then(HyStart::default),
        }
    }

    fn in_slow_start(&self) -> bool {
        self.ssthresh.is_none_or(|s| self.cwnd < s as f64)
    }

    fn mds(&self) -> f64 {
        self.limits.mds() as f64
    }

    /// α_cubic of the Reno-friendly estimate; 1 once W_est has regained the pre-loss window.
    fn alpha(&self, w_est: f64) -> f64 {
        if w_est >= self.cwnd_prior {
            1.0
        } else {
            let beta = self.limits.beta();
            3.0 * (1.0 - beta) / (1.0 + beta)
        }
    }

    fn start_epoch(&mut self, now: Duration) -> Epoch {
        if self.w_max_from_epoch || self.w_max.is_none() {
            self.w_max = Some(self.cwnd);
            self.w_max_from_epoch = false;
        }
        let w_max = self.w_max.unwrap_or(self.cwnd);
        Epoch {
            start: now,
            k: k_seconds(w_max, self.cwnd, self.mds()),
            w_max,
            w_est: self.cwnd,
        }
    }

    fn congestion_avoidance(&mut self, now: Duration, bytes: u64, rtt: &RttSample) {
        let mut epoch = match self.epoch {
            Some(epoch) => epoch,
            None => self.start_epoch(now),
        };
        // RFC 9438 §5.8: time spent app-limited must not count in t, or the first ACK after
        // an idle stretch would jump the window up the curve. Shifting t_epoch (instead of
        // restarting the epoch) keeps the curve's shape and W_max.
        if let Some(since) = self.app_limited_since.take() {
            epoch.start = epoch.start.saturating_add(now.saturating_sub(since));
        }
        let mds = self.mds();
        let acked = bytes as f64;
        let t = now.saturating_sub(epoch.start).as_secs_f64();
        let w_cubic = |t: f64| w_cubic_bytes(t, epoch.k, epoch.w_max, mds);
        let cwnd = self.cwnd;
        epoch.w_est += self.alpha(epoch.w_est) * mds * acked / cwnd;
        let next = if w_cubic(t) < epoch.w_est {
            // Reno-friendly region; `max` keeps the window from shrinking on an ACK when the
            // estimate overtakes a curve the window had already followed further.
            cwnd.max(epoch.w_est)
        } else {
            let target = w_cubic(t + rtt.smoothed.as_secs_f64())
                .max(cwnd)
                .min(1.5 * cwnd);
            cwnd + (target - cwnd) * acked / cwnd
        };
        if next.is_finite() {
            self.cwnd = next;
        }
        self.epoch = Some(epoch);
    }
}

/// K in seconds: the time the curve takes from `cwnd_epoch` back to `w_max` (bytes).
fn k_seconds(w_max: f64, cwnd_epoch: f64, mds: f64) -> f64 {
    let k = ((w_max - cwnd_epoch) / mds / C).cbrt();
    if k.is_finite() {
        k
    } else {
        0.0
    }
}

/// W_cubic(t) = C (t − K)³ + W_max, computed in datagrams and returned in bytes.
fn w_cubic_bytes(t: f64, k: f64, w_max: f64, mds: f64) -> f64 {
    C * (t - k).powi(3) * mds + w_max
}

impl CongestionController for Cubic {
    fn on_sent(&mut self, _now: Duration, _bytes: u64, pn: u64) {
        if let Some(hystart) = self.hystart.as_mut() {
            hystart.on_sent(pn);
        }
    }

    fn on_ack(
        &mut self,
        now: Duration,
        sent: Duration,
        bytes: u64,
        app_limited: bool,
        rtt: &RttSample,
    ) {
        if !self.recovery.on_ack(sent) {
            return;
        }
        let slow_start = self.in_slow_start();
        if slow_start {
            if let Some(hystart) = self.hystart.as_mut() {
                // RTT samples stay valid while app-limited; only growth is withheld.
                hystart.on_rtt_sample(rtt.latest);
            }
        }
        if app_limited {
            if !slow_start && self.epoch.is_some() && self.app_limited_since.is_none() {
                self.app_limited_since = Some(now);
            }
            return;
        }
        if slow_start {
            let increase = match &self.hystart {
                Some(hystart) => hystart.increase(bytes, self.limits.mds()),
                None => bytes,
            };
            self.cwnd += increase as f64;
        } else {
            self.congestion_avoidance(now, bytes, rtt);
        }
    }

    fn on_end_acks(
        &mut self,
        _now: Duration,
        _in_flight: u64,
        _app_limited: bool,
        largest_acked: Option<u64>,
    ) {
        let Some(hystart) = self.hystart.as_mut() else {
            return;
        };
        if hystart.on_end_acks(largest_acked) == RoundOutcome::ExitSlowStart {
            self.hystart = None;
            self.ssthresh = Some(self.cwnd as u64);
            self.cwnd = self.cwnd.floor();
            self.cwnd_prior = self.cwnd;
            self.w_max_from_epoch = true;
        }
    }

    fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent_congestion: bool,
        _lost_bytes: u64,
    ) {
        let min = self.limits.min_window();
        if !self.recovery.covers(sent) {
            self.recovery.enter(now);
            let cwnd = self.cwnd;
            let beta = self.limits.beta();
            // Fast convergence: a flow losing below its previous W_max yields bandwidth to newer flows.
            self.w_max = Some(match self.w_max {
                Some(w_max) if cwnd < w_max => cwnd * (1.0 + beta) / 2.0,
                _ => cwnd,
            });
            self.cwnd_prior = cwnd;
            let ssthresh = ((cwnd * beta) as u64).max(min);
            self.ssthresh = Some(ssthresh);
            self.cwnd = ssthresh as f64;
            self.w_max_from_epoch = false;
            self.epoch = None;
            self.app_limited_since = None;
            self.hystart = None;
        }
        if persistent_congestion {
            self.cwnd = min as f64;
            self.recovery.reset();
            self.w_max_from_epoch = true;
            self.epoch = None;
            self.app_limited_since = None;
            self.hystart = None;
        }
    }

    fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64) {
        if reduce {
            // The reduction of a congestion event (W_max, fast convergence, ssthresh), whatever
            // the recovery period says: a timeout is always a new signal when `reduce` is set.
            self.recovery.reset();
            self.on_congestion_event(now, now, false, 0);
        }
        // RFC 9438 §4.8: after a timeout the next epoch starts with W_max = cwnd (K = 0).
        self.cwnd = (window.max(self.limits.mds())) as f64;
        self.recovery.reset();
        self.w_max_from_epoch = true;
        self.epoch = None;
        self.app_limited_since = None;
        self.hystart = None;
    }

    fn on_mtu_update(&mut self, max_datagram_size: u64) {
        self.limits.set_mds(max_datagram_size);
        self.cwnd = self.cwnd.max(self.limits.min_window() as f64);
    }

    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh
    }

    fn initial_window(&self) -> u64 {
        self.limits.initial_window()
    }

    fn phase(&self) -> Phase {
        window_phase(self.window(), self.ssthresh, self.recovery.active())
    }

    fn box_clone(&self) -> Box<dyn CongestionController> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::Fluid;

    const MDS: u64 = 1200;
    const MS: Duration = Duration::from_millis(1);

    fn cubic(hystart: bool, iw: u64) -> Cubic {
        let common = CommonCcConfig {
            initial_window_packets: iw,
            loss_reduction_factor: 0.7,
            minimum_window_packets: 2,
        };
        Cubic::new(hystart, &common, MDS)
    }

    /// A controller that lost at a window of `w_max` datagrams, then ran the recovery round.
    /// Returns it with the loop and the epoch start time.
    fn after_loss_at(w_max: u64, rtt: Duration) -> (Cubic, Fluid, Duration) {
        let mut cc = cubic(false, w_max);
        let mut fluid = Fluid::new();
        fluid.now = 10 * MS;
        fluid.loss(&mut cc, MDS, false);
        assert_eq!(cc.window(), w_max * MDS * 7 / 10);
        let epoch_start = fluid.round(&mut cc, MDS, rtt);
        assert_eq!(cc.phase(), Phase::CongestionAvoidance);
        (cc, fluid, epoch_start)
    }

    #[test]
    fn k_matches_the_rfc_formula() {
        let (cc, _, _) = after_loss_at(100, 100 * MS);
        let epoch = cc.epoch.expect("epoch started");
        assert!(
            (epoch.k - 75f64.cbrt()).abs() < 1e-9,
            "K = cbrt((100 - 70) / 0.4), got {}",
            epoch.k
        );
        assert_eq!(epoch.w_max, 100.0 * MDS as f64);
        assert_eq!(
            k_seconds(10.0, 20.0, 1.0),
            -(25f64.cbrt()),
            "window above W_max: convex from the start"
        );
    }

    #[test]
    fn window_follows_the_cubic_curve() {
        // A large BDP so the cubic curve, not the Reno-friendly estimate, sets the window.
        let rtt = 100 * MS;
        let (mut cc, mut fluid, epoch_start) = after_loss_at(1000, rtt);
        let k = 750f64.cbrt();
        let curve = |t: f64| w_cubic_bytes(t, k, 1000.0 * MDS as f64, MDS as f64);
        let mut checked = 0;
        for _ in 0..120 {
            let acked = fluid.round(&mut cc, MDS, rtt);
            // Aiming at W_cubic(t + RTT) while closing (target - cwnd)/cwnd per ACK leaves the
            // window between the curve now and the curve one RTT ahead.
            let t = (acked - epoch_start).as_secs_f64();
            let (low, high) = (curve(t), curve(t + rtt.as_secs_f64()));
            let got = cc.cwnd;
            assert!(
                low * 0.999 <= got && got <= high * 1.001,
                "t={t:.2}s: {low:.0} <= {got:.0} <= {high:.0}"
            );
            assert!((got - curve(t)).abs() <= 0.03 * curve(t), "t={t:.2}s");
            if [0.2, 2.0, 5.0, 9.1, 11.0]
                .iter()
                .any(|mark| (t - mark).abs() < 0.05)
            {
                checked += 1;
            }
        }
        assert!(checked >= 5);
        // Past K the curve is convex: above W_max.
        assert!(cc.window() > 1000 * MDS);
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_rtt() {
        let rtt = MS;
        let (mut cc, mut fluid, epoch_start) = after_loss_at(20, rtt);
        let start = cc.window() as f64 / MDS as f64; // 14 datagrams
        for _ in 0..10 {
            fluid.round(&mut cc, MDS, rtt);
        }
        let alpha = 3.0 * 0.3 / 1.7;
        let early = cc.window() as f64 / MDS as f64 - start;
        assert!(
            (early - 10.0 * alpha).abs() < 0.6,
            "α_cubic ≈ 0.53 per RTT, grew {early:.2} in 10 RTTs"
        );
        for _ in 0..40 {
            fluid.round(&mut cc, MDS, rtt);
        }
        let before = cc.window() as f64 / MDS as f64;
        for _ in 0..50 {
            fluid.round(&mut cc, MDS, rtt);
        }
        let late = cc.window() as f64 / MDS as f64 - before;
        assert!(
            (late - 50.0).abs() < 3.0,
            "α = 1 above the pre-loss window, grew {late:.2} in 50 RTTs"
        );
        let t = (fluid.now - epoch_start).as_secs_f64();
        let curve = w_cubic_bytes(t, 15f64.cbrt(), 20.0 * MDS as f64, MDS as f64);
        assert!(
            cc.window() as f64 > 3.0 * curve,
            "W_est {} vs W_cubic {curve:.0}",
            cc.window()
        );
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let rtt = 100 * MS;
        let (mut cc, mut fluid, _) = after_loss_at(100, rtt);
        for _ in 0..5 {
            fluid.round(&mut cc, MDS, rtt);
        }
        let cwnd = cc.cwnd;
        assert!(cwnd < 100.0 * MDS as f64);
        fluid.loss(&mut cc, MDS, false);
        assert!((cc.w_max.unwrap() - cwnd * 0.85).abs() < 1e-6);
        assert_eq!(cc.window(), (cwnd * 0.7) as u64);
        // Losing above the previous W_max keeps W_max at the window.
        let mut cc = cubic(false, 100);
        cc.on_congestion_event(10 * MS, MS, false, MDS);
        cc.w_max = Some(50.0 * MDS as f64);
        cc.cwnd = 60.0 * MDS as f64;
        cc.on_congestion_event(20 * MS, 11 * MS, false, MDS);
        assert_eq!(cc.w_max, Some(60.0 * MDS as f64));
    }

    #[test]
    fn one_reduction_per_recovery_and_persistent_congestion() {
        let mut cc = cubic(false, 100);
        cc.on_congestion_event(100 * MS, 50 * MS, false, MDS);
        assert_eq!(cc.window(), 70 * MDS);
        assert_eq!(cc.phase(), Phase::Recovery);
        cc.on_congestion_event(110 * MS, 100 * MS, false, MDS);
        assert_eq!(cc.window(), 70 * MDS);
        cc.on_congestion_event(900 * MS, 90 * MS, true, MDS);
        assert_eq!(cc.window(), 2 * MDS);
        assert_eq!(cc.ssthresh(), Some(70 * MDS));
        assert_eq!(cc.phase(), Phase::SlowStart);
        // Slow start up to ssthresh, then the first epoch starts with W_max = cwnd and K = 0.
        let mut fluid = Fluid::new();
        fluid.now = 900 * MS;
        while cc.phase() == Phase::SlowStart {
            fluid.round(&mut cc, MDS, 100 * MS);
        }
        fluid.round(&mut cc, MDS, 100 * MS);
        let epoch = cc.epoch.expect("epoch started");
        assert_eq!(epoch.k, 0.0);
        assert!(epoch.w_max >= 70.0 * MDS as f64);
    }

    #[test]
    fn app_limited_does_not_grow_and_shifts_the_epoch() {
        let rtt = 100 * MS;
        let (mut cc, mut fluid, _) = after_loss_at(100, rtt);
        let start = cc.epoch.unwrap().start;
        let w = cc.window();
        for _ in 0..10 {
            fluid.round_with(&mut cc, MDS, rtt, true);
        }
        assert_eq!(cc.window(), w);
        let idle_from = fluid.now - 9 * (rtt + Duration::from_micros(1));
        let acked = fluid.round(&mut cc, MDS, rtt);
        let shifted = cc.epoch.unwrap().start;
        assert_eq!(shifted, start + (acked - idle_from));
        // Same window as a twin that never idled: the idle time did not count in t.
        let (mut twin, mut twin_fluid, _) = after_loss_at(100, rtt);
        twin_fluid.round(&mut twin, MDS, rtt);
        assert!(cc.window() > w);
        assert_eq!(cc.window(), twin.window());
        // Slow start: no growth either.
        let mut cc = cubic(false, 10);
        Fluid::new().round_with(&mut cc, MDS, rtt, true);
        assert_eq!(cc.window(), 10 * MDS);
    }

    #[test]
    fn hystart_constant_rtt_stays_in_slow_start() {
        let mut cc = cubic(true, 10);
        let mut fluid = Fluid::new();
        for round in 1..=8 {
            fluid.round(&mut cc, MDS, 100 * MS);
            assert_eq!(cc.window(), (10 * MDS) << round);
            assert_eq!(cc.ssthresh(), None);
        }
        assert!(!cc.hystart.as_ref().unwrap().in_css());
    }

    #[test]
    fn hystart_rising_rtt_enters_css_then_avoidance() {
        let mut cc = cubic(true, 10);
        let mut fluid = Fluid::new();
        for _ in 0..3 {
            fluid.round(&mut cc, MDS, 100 * MS);
        }
        assert_eq!(cc.window(), 80 * MDS);
        // 80 ACKs at +20 ms (> 12.5 ms): the 8th sample starts CSS and already gets its growth,
        // so 7 full and 73 quarter increments.
        fluid.round(&mut cc, MDS, 120 * MS);
        assert!(cc.hystart.as_ref().unwrap().in_css());
        assert_eq!(cc.window(), 80 * MDS + 7 * MDS + 73 * MDS / 4);
        for round in 2..=5 {
            let before = cc.window();
            let sent = before / MDS;
            fluid.round(&mut cc, MDS, 120 * MS);
            assert_eq!(
                cc.window(),
                before + sent * MDS / 4,
                "CSS grows by a quarter"
            );
            if round < 5 {
                assert_eq!(cc.ssthresh(), None);
                assert_eq!(cc.phase(), Phase::SlowStart);
            }
        }
        assert_eq!(cc.ssthresh(), Some(cc.window()));
        assert_eq!(cc.phase(), Phase::CongestionAvoidance);
        // First epoch: W_max = the window, K = 0.
        let w = cc.window();
        fluid.round(&mut cc, MDS, 120 * MS);
        assert_eq!(cc.epoch.unwrap().k, 0.0);
        assert!(cc.window() >= w);
    }

    #[test]
    fn hystart_spurious_css_returns_to_slow_start() {
        let mut cc = cubic(true, 10);
        let mut fluid = Fluid::new();
        for _ in 0..3 {
            fluid.round(&mut cc, MDS, 100 * MS);
        }
        fluid.round(&mut cc, MDS, 120 * MS);
        assert!(cc.hystart.as_ref().unwrap().in_css());
        let before = cc.window();
        fluid.round(&mut cc, MDS, 100 * MS);
        assert!(!cc.hystart.as_ref().unwrap().in_css());
        let sent = before / MDS;
        assert_eq!(
            cc.window(),
            before + 7 * MDS / 4 + (sent - 7) * MDS,
            "full growth from the 8th sample"
        );
        let before = cc.window();
        fluid.round(&mut cc, MDS, 100 * MS);
        assert_eq!(cc.window(), before + before / MDS * MDS, "doubling again");
        assert_eq!(cc.ssthresh(), None);
    }

    #[test]
    fn hystart_loss_during_css_is_a_normal_congestion_event() {
        let mut cc = cubic(true, 10);
        let mut fluid = Fluid::new();
        for _ in 0..3 {
            fluid.round(&mut cc, MDS, 100 * MS);
        }
        fluid.round(&mut cc, MDS, 120 * MS);
        let w = cc.cwnd;
        fluid.loss(&mut cc, MDS, false);
        assert_eq!(cc.window(), (w * 0.7) as u64);
        assert!(cc.hystart.is_none());
        assert_eq!(cc.w_max, Some(w));
    }

    #[test]
    fn without_hystart_rising_rtt_keeps_doubling() {
        let mut cc = cubic(false, 10);
        let mut fluid = Fluid::new();
        for (round, rtt) in [100, 100, 100, 120, 140, 160].into_iter().enumerate() {
            fluid.round(&mut cc, MDS, rtt * MS);
            assert_eq!(cc.window(), (10 * MDS) << (round + 1));
        }
    }

    #[test]
    fn odd_input_does_not_panic() {
        let common = CommonCcConfig {
            initial_window_packets: 0,
            loss_reduction_factor: f64::NAN,
            minimum_window_packets: 0,
        };
        let mut cc = Cubic::new(true, &common, 0);
        let rtt = RttSample {
            latest: Duration::MAX,
            smoothed: Duration::MAX,
            min: Duration::ZERO,
        };
        cc.on_ack(MS, Duration::ZERO, u64::MAX, false, &rtt);
        cc.on_end_acks(MS, 0, false, Some(u64::MAX));
        cc.on_congestion_event(2 * MS, MS, false, 0);
        cc.on_ack(Duration::MAX, Duration::MAX, u64::MAX, false, &rtt);
        cc.on_ack(Duration::MAX, Duration::MAX, u64::MAX, true, &rtt);
        cc.on_ack(Duration::ZERO, Duration::MAX, u64::MAX, false, &rtt);
        assert!(cc.window() >= 1);
        cc.on_congestion_event(Duration::MAX, Duration::MAX, true, 0);
        cc.on_mtu_update(0);
        assert_eq!(cc.window(), 1);
    }
}
