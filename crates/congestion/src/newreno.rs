//! NewReno as specified by RFC 9002 §7, with exact or approximate congestion-avoidance counting,
//! or Linux's Reno (`tcp_cong.c`: `tcp_reno_cong_avoid`, `tcp_slow_start`, `tcp_cong_avoid_ai`,
//! `tcp_reno_ssthresh`), which keeps the window in whole datagrams.

use std::time::Duration;

use crate::config::{CommonCcConfig, RenoCounting};
use crate::params::Limits;
use crate::recovery::Recovery;
use crate::{window_phase, CongestionController, Phase, RttSample};

/// Reduction factor used when the configured one is not a number (RFC 9002's kLossReductionFactor).
const DEFAULT_BETA: f64 = 0.5;

/// NewReno state; all sizes in bytes.
#[derive(Debug, Clone)]
pub(crate) struct NewReno {
    counting: RenoCounting,
    limits: Limits,
    cwnd: u64,
    ssthresh: Option<u64>,
    recovery: Recovery,
    /// Exact counting: bytes acknowledged in congestion avoidance not yet turned into window.
    /// Linux counting: acknowledged bytes not yet a whole datagram.
    bytes_acked: u64,
    /// Linux counting: `snd_cwnd_cnt`, acknowledged datagrams towards the next increment.
    cwnd_cnt: u64,
}

impl NewReno {
    /// A controller at its initial window with an infinite ssthresh.
    pub(crate) fn new(
        counting: RenoCounting,
        common: &CommonCcConfig,
        max_datagram_size: u64,
    ) -> Self {
        let limits = Limits::new(common, max_datagram_size, DEFAULT_BETA);
        Self {
            counting,
            limits,
            cwnd: limits.initial_window(),
            ssthresh: None,
            recovery: Recovery::default(),
            bytes_acked: 0,
            cwnd_cnt: 0,
        }
    }

    /// Linux's Reno for one ACK: slow start up to ssthresh, the rest through the counter
    /// (one datagram per window's worth of acknowledged datagrams).
    fn linux_on_ack(&mut self, bytes: u64) {
        let mds = self.limits.mds();
        self.bytes_acked = self.bytes_acked.saturating_add(bytes);
        let mut acked = self.bytes_acked / mds;
        self.bytes_acked %= mds;
        let mut cwnd = self.cwnd / mds;
        if self.ssthresh.is_none_or(|s| cwnd < s / mds) {
            let target = cwnd.saturating_add(acked);
            let grown = self.ssthresh.map_or(target, |s| target.min(s / mds));
            acked -= grown - cwnd;
            cwnd = grown;
        }
        if acked > 0 {
            // tcp_cong_avoid_ai with w = cwnd.
            let w = cwnd.max(1);
            if self.cwnd_cnt >= w {
                self.cwnd_cnt = 0;
                cwnd += 1;
            }
            self.cwnd_cnt += acked;
            if self.cwnd_cnt >= w {
                let delta = self.cwnd_cnt / w;
                self.cwnd_cnt -= delta * w;
                cwnd += delta;
            }
        }
        self.cwnd = cwnd.saturating_mul(mds);
    }

    /// The reduced window: Linux's max(cwnd / 2, 2) in whole datagrams (the floor is the
    /// minimum window), RFC 9002's cwnd · β in bytes.
    fn reduced(&self) -> u64 {
        let min = self.limits.min_window();
        match self.counting {
            RenoCounting::Linux => {
                let mds = self.limits.mds();
                let segments = (self.cwnd / mds) as f64 * self.limits.beta();
                (segments as u64 * mds).max(min)
            }
            // RFC 9002 leaves ssthresh below the minimum window possible; keeping it at least
            // the minimum makes `cwnd >= ssthresh` (congestion avoidance) hold after every event.
            _ => ((self.cwnd as f64 * self.limits.beta()) as u64).max(min),
        }
    }

    fn slow_start(&mut self, bytes: u64) {
        self.cwnd = self.cwnd.saturating_add(bytes);
        if self.counting == RenoCounting::Inet {
            // INET grows by the whole ACK (it may pass ssthresh) and restarts the counter.
            self.bytes_acked = 0;
            return;
        }
        if let (RenoCounting::Exact, Some(ssthresh)) = (self.counting, self.ssthresh) {
            // Without the carry, the bytes of the crossing ACK above ssthresh would be counted
            // neither as slow-start growth nor towards the first congestion-avoidance increment.
            if self.cwnd > ssthresh {
                self.bytes_acked = self.bytes_acked.saturating_add(self.cwnd - ssthresh);
                self.cwnd = ssthresh;
            }
        }
    }

    fn congestion_avoidance(&mut self, bytes: u64) {
        let mds = self.limits.mds();
        match self.counting {
            RenoCounting::Inet => {
                // INET's rule: one datagram once more than cwnd − 1 datagram is acknowledged,
                // the counter keeping only what exceeds the grown window. The two differ from
                // `Exact` when the window is not a whole number of datagrams (after halving an
                // odd one): the k + ½ window grows after k ACKs, as it sends k packets a round.
                self.bytes_acked = self.bytes_acked.saturating_add(bytes);
                if self.bytes_acked > self.cwnd.saturating_sub(mds) {
                    self.cwnd = self.cwnd.saturating_add(mds);
                    self.bytes_acked = self.bytes_acked.saturating_sub(self.cwnd);
                }
            }
            RenoCounting::Exact => {
                self.bytes_acked = self.bytes_acked.saturating_add(bytes);
                if self.bytes_acked >= self.cwnd {
                    self.bytes_acked -= self.cwnd;
                    self.cwnd = self.cwnd.saturating_add(mds);
                }
            }
            RenoCounting::Linux => self.linux_on_ack(bytes),
            RenoCounting::Approximate => {
                let increase = u128::from(mds) * u128::from(bytes) / u128::from(self.cwnd.max(1));
                self.cwnd = self
                    .cwnd
                    .saturating_add(u64::try_from(increase).unwrap_or(u64::MAX));
            }
        }
    }
}

impl CongestionController for NewReno {
    fn on_sent(&mut self, _now: Duration, _bytes: u64, _pn: u64) {}

    fn on_ack(
        &mut self,
        _now: Duration,
        sent: Duration,
        bytes: u64,
        app_limited: bool,
        _rtt: &RttSample,
    ) {
        // Recovery must see every ACK (it may end the period) before app-limiting stops growth.
        if !self.recovery.on_ack(sent) {
            if self.counting == RenoCounting::Inet && self.ssthresh.is_some_and(|s| self.cwnd >= s)
            {
                // INET counts these bytes (no growth now; they carry into congestion avoidance).
                self.bytes_acked = self.bytes_acked.saturating_add(bytes);
            }
            return;
        }
        if app_limited {
            return;
        }
        if self.counting == RenoCounting::Linux {
            self.linux_on_ack(bytes);
            return;
        }
        match self.ssthresh {
            Some(ssthresh) if self.cwnd >= ssthresh => self.congestion_avoidance(bytes),
            _ => self.slow_start(bytes),
        }
    }

    fn on_end_acks(
        &mut self,
        _now: Duration,
        _in_flight: u64,
        _app_limited: bool,
        _largest_acked: Option<u64>,
    ) {
    }

    fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent_congestion: bool,
        _lost_bytes: u64,
    ) {
        let ssthresh = self.reduced();
        self.reduce_to(now, sent, persistent_congestion, ssthresh);
    }

    fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64) {
        let ssthresh = self.reduced();
        self.timeout_to(now, reduce, window, ssthresh);
    }

    fn on_mtu_update(&mut self, max_datagram_size: u64) {
        self.limits.set_mds(max_datagram_size);
        self.cwnd = self.cwnd.max(self.limits.min_window());
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh
    }

    fn initial_window(&self) -> u64 {
        self.limits.initial_window()
    }

    fn phase(&self) -> Phase {
        window_phase(self.cwnd, self.ssthresh, self.recovery.active())
    }

    fn box_clone(&self) -> Box<dyn CongestionController> {
        Box::new(self.clone())
    }
}

impl NewReno {
    /// A congestion event whose new ssthresh is `ssthresh` bytes (a controller built on Reno,
    /// such as DCTCP, computes its own): once per recovery period, as `on_congestion_event`.
    pub(crate) fn reduce_to(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent_congestion: bool,
        ssthresh: u64,
    ) {
        let min = self.limits.min_window();
        if !self.recovery.covers(sent) {
            self.recovery.enter(now);
            self.ssthresh = Some(ssthresh);
            self.cwnd = ssthresh;
            self.bytes_acked = 0;
            self.cwnd_cnt = 0;
        }
        if persistent_congestion {
            self.cwnd = min;
            self.bytes_acked = 0;
            self.cwnd_cnt = 0;
            self.recovery.reset();
        }
    }

    /// A retransmission timeout whose new ssthresh (when `reduce`) is `ssthresh` bytes.
    pub(crate) fn timeout_to(&mut self, _now: Duration, reduce: bool, window: u64, ssthresh: u64) {
        if reduce {
            self.ssthresh = Some(ssthresh);
        }
        let mds = self.limits.mds();
        self.cwnd = window.max(mds);
        if self.counting == RenoCounting::Linux {
            self.cwnd = self.cwnd / mds * mds;
        }
        self.bytes_acked = 0;
        self.cwnd_cnt = 0;
        self.recovery.reset();
    }

    /// Current max datagram size in bytes.
    pub(crate) fn mds(&self) -> u64 {
        self.limits.mds()
    }

    /// Minimum window in bytes.
    pub(crate) fn min_window(&self) -> u64 {
        self.limits.min_window()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::Fluid;

    const MDS: u64 = 1000;
    const RTT: Duration = Duration::from_millis(50);
    const MS: Duration = Duration::from_millis(1);

    fn reno(counting: RenoCounting) -> NewReno {
        let common = CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.5,
            minimum_window_packets: 2,
        };
        NewReno::new(counting, &common, MDS)
    }

    fn rtt() -> RttSample {
        RttSample {
            latest: RTT,
            smoothed: RTT,
            min: RTT,
        }
    }

    /// A controller in congestion avoidance at 5 datagrams, recovery over.
    fn in_avoidance(counting: RenoCounting) -> (NewReno, Fluid) {
        let mut cc = reno(counting);
        let mut fluid = Fluid::new();
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.window(), 20 * MDS);
        fluid.loss(&mut cc, MDS, false);
        assert_eq!(cc.window(), 10 * MDS);
        fluid.round(&mut cc, MDS, RTT); // ends recovery; exact counting grows one datagram here
        (cc, fluid)
    }

    #[test]
    fn slow_start_doubles_per_round() {
        for counting in [RenoCounting::Exact, RenoCounting::Approximate] {
            let mut cc = reno(counting);
            let mut fluid = Fluid::new();
            for round in 1..=5 {
                fluid.round(&mut cc, MDS, RTT);
                assert_eq!(
                    cc.window(),
                    (10 * MDS) << round,
                    "{counting:?} round {round}"
                );
                assert_eq!(cc.phase(), Phase::SlowStart);
            }
        }
    }

    #[test]
    fn exact_counting_adds_one_datagram_per_window() {
        let (mut cc, mut fluid) = in_avoidance(RenoCounting::Exact);
        assert_eq!(cc.phase(), Phase::CongestionAvoidance);
        assert_eq!(cc.window(), 11 * MDS);
        for round in 1..=20 {
            fluid.round(&mut cc, MDS, RTT);
            assert_eq!(cc.window(), (11 + round) * MDS);
        }
    }

    #[test]
    fn approximate_counting_grows_a_bit_less() {
        let (mut approx, mut fa) = in_avoidance(RenoCounting::Approximate);
        let (mut exact, mut fe) = in_avoidance(RenoCounting::Exact);
        let start = approx.window();
        let mut previous = start;
        for _ in 0..20 {
            fa.round(&mut approx, MDS, RTT);
            fe.round(&mut exact, MDS, RTT);
            let growth = approx.window() - previous;
            assert!(growth > 8 * MDS / 10 && growth < MDS, "growth {growth}");
            previous = approx.window();
        }
        assert!(approx.window() < exact.window());
        // One ACK of a whole window adds exactly one datagram (integer arithmetic of the RFC).
        let w = approx.window();
        approx.on_ack(fa.now + MS, fa.now, w, false, &rtt());
        assert_eq!(approx.window(), w + MDS);
    }

    #[test]
    fn crossing_ssthresh_carries_the_overshoot() {
        let mut cc = reno(RenoCounting::Exact);
        cc.on_congestion_event(10 * MS, MS, true, MDS); // ssthresh 5000, cwnd 2000
        assert_eq!((cc.window(), cc.ssthresh()), (2 * MDS, Some(5 * MDS)));
        assert_eq!(cc.phase(), Phase::SlowStart);
        cc.on_ack(20 * MS, 11 * MS, 2500, false, &rtt());
        assert_eq!(cc.window(), 4500);
        cc.on_ack(20 * MS, 11 * MS, 1500, false, &rtt());
        assert_eq!(cc.window(), 5000);
        assert_eq!(cc.bytes_acked, 1000);
        cc.on_ack(20 * MS, 11 * MS, 4000, false, &rtt());
        assert_eq!(cc.window(), 6000, "1000 carried + 4000 = one window");
    }

    #[test]
    fn loss_halves_once_per_recovery_period() {
        let mut cc = reno(RenoCounting::Exact);
        cc.on_congestion_event(100 * MS, 50 * MS, false, MDS);
        assert_eq!((cc.window(), cc.ssthresh()), (5 * MDS, Some(5 * MDS)));
        assert_eq!(cc.phase(), Phase::Recovery);
        // Another loss of a packet sent before the recovery start: same window.
        cc.on_congestion_event(120 * MS, 90 * MS, false, MDS);
        cc.on_congestion_event(130 * MS, 100 * MS, false, MDS);
        assert_eq!(cc.window(), 5 * MDS);
        // ACKs of old packets neither grow the window nor end recovery.
        cc.on_ack(140 * MS, 99 * MS, MDS, false, &rtt());
        assert_eq!(cc.window(), 5 * MDS);
        assert_eq!(cc.phase(), Phase::Recovery);
        cc.on_ack(160 * MS, 101 * MS, MDS, false, &rtt());
        assert_eq!(cc.phase(), Phase::CongestionAvoidance);
        // A loss of a packet sent after the recovery start reduces again.
        cc.on_congestion_event(200 * MS, 101 * MS, false, MDS);
        assert_eq!(cc.window(), 2500);
        cc.on_congestion_event(300 * MS, 250 * MS, false, MDS);
        assert_eq!(cc.window(), 2 * MDS, "never below the minimum window");
    }

    #[test]
    fn inet_counts_bytes_acknowledged_while_recovering() {
        // RFC 9002 forgets the ACKs of packets sent before the recovery started; INET's
        // NewReno counts them towards the next increase.
        for (counting, grown) in [
            (RenoCounting::Exact, 5 * MDS),
            (RenoCounting::Inet, 6 * MDS),
        ] {
            let mut cc = reno(counting);
            cc.on_congestion_event(100 * MS, 50 * MS, false, MDS);
            assert_eq!(cc.window(), 5 * MDS);
            for _ in 0..5 {
                cc.on_ack(140 * MS, 99 * MS, MDS, false, &rtt());
            }
            assert_eq!(
                cc.window(),
                5 * MDS,
                "{counting:?}: no growth while recovering"
            );
            assert_eq!(cc.phase(), Phase::Recovery);
            cc.on_ack(160 * MS, 101 * MS, MDS, false, &rtt());
            assert_eq!(cc.phase(), Phase::CongestionAvoidance);
            assert_eq!(cc.window(), grown, "{counting:?}");
        }
    }

    #[test]
    fn inet_grows_a_half_datagram_window_after_whole_packets() {
        // 15 datagrams halve to 7.5, of which a round sends 7: INET grows once more than
        // cwnd − 1 datagram is acknowledged (after those 7), exact counting after 7.5 (the 8th).
        for (counting, acks) in [(RenoCounting::Exact, 8), (RenoCounting::Inet, 7)] {
            let mut cc = reno(counting);
            cc.on_ack(10 * MS, MS, 5 * MDS, false, &rtt());
            assert_eq!(cc.window(), 15 * MDS);
            cc.on_congestion_event(100 * MS, 50 * MS, false, MDS);
            assert_eq!(cc.window(), 7500);
            let mut n = 0;
            while cc.window() == 7500 {
                cc.on_ack(200 * MS, 101 * MS, MDS, false, &rtt());
                n += 1;
            }
            assert_eq!((n, cc.window()), (acks, 8500), "{counting:?}");
        }
    }

    #[test]
    fn persistent_congestion_collapses_to_minimum_window() {
        let mut cc = reno(RenoCounting::Approximate);
        cc.on_congestion_event(100 * MS, 50 * MS, false, MDS);
        // Reduction ignored (same recovery period), collapse still applies.
        cc.on_congestion_event(400 * MS, 60 * MS, true, 5 * MDS);
        assert_eq!(cc.window(), 2 * MDS);
        assert_eq!(cc.ssthresh(), Some(5 * MDS));
        assert_eq!(cc.phase(), Phase::SlowStart);
        // The recovery period is forgotten: an old packet's loss reduces again.
        cc.on_congestion_event(500 * MS, 60 * MS, false, MDS);
        assert_eq!(cc.ssthresh(), Some(2 * MDS));
    }

    #[test]
    fn app_limited_acks_do_not_grow() {
        let mut cc = reno(RenoCounting::Exact);
        let mut fluid = Fluid::new();
        fluid.round_with(&mut cc, MDS, RTT, true);
        assert_eq!(cc.window(), 10 * MDS);
        let (mut cc, mut fluid) = in_avoidance(RenoCounting::Exact);
        let w = cc.window();
        for _ in 0..5 {
            fluid.round_with(&mut cc, MDS, RTT, true);
        }
        assert_eq!(cc.window(), w);
        fluid.round_with(&mut cc, MDS, RTT, false);
        assert_eq!(cc.window(), w + MDS);
    }

    #[test]
    fn mtu_update_rescales_limits() {
        let mut cc = reno(RenoCounting::Exact);
        cc.on_congestion_event(10 * MS, MS, true, MDS);
        cc.on_mtu_update(1500);
        assert_eq!(cc.window(), 3000);
        assert_eq!(cc.initial_window(), 15_000);
    }

    #[test]
    fn odd_input_does_not_panic() {
        let common = CommonCcConfig {
            initial_window_packets: 0,
            loss_reduction_factor: f64::NAN,
            minimum_window_packets: 0,
        };
        let mut cc = NewReno::new(RenoCounting::Approximate, &common, 0);
        cc.on_ack(MS, Duration::ZERO, u64::MAX, false, &rtt());
        cc.on_ack(MS, Duration::ZERO, u64::MAX, false, &rtt());
        assert_eq!(cc.window(), u64::MAX);
        cc.on_congestion_event(Duration::MAX, Duration::MAX, true, u64::MAX);
        assert_eq!(cc.window(), 1);
        cc.on_ack(Duration::MAX, Duration::MAX, u64::MAX, false, &rtt());
        cc.on_mtu_update(0);
        assert!(cc.window() >= 1);
    }

    #[test]
    fn linux_reno_counts_segments_and_restarts_the_counter() {
        // tcp_reno_cong_avoid by hand: ssthresh = 20 / 2 = 10 segments; each window's worth
        // of acknowledged segments adds one; the counter restarts at the next reduction.
        let mut cc = reno(RenoCounting::Linux);
        let mut fluid = Fluid::new();
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.window(), 20 * MDS);
        fluid.loss(&mut cc, MDS, false);
        assert_eq!(cc.window(), 10 * MDS);
        // 10 segments acknowledged: one increment (the round ends recovery).
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.window(), 11 * MDS);
        // Most of a window, then a reduction: the counter is gone.
        for _ in 0..8 {
            cc.on_ack(fluid.now + RTT, fluid.now, MDS, false, &rtt());
        }
        assert_eq!(cc.cwnd_cnt, 8);
        cc.on_congestion_event(fluid.now + RTT, fluid.now + RTT, false, MDS);
        assert_eq!(cc.window(), 5 * MDS, "11 / 2 = 5 whole segments");
        assert_eq!(cc.cwnd_cnt, 0);
        // Sub-segment ACKs add up to segments before they count.
        let t = fluid.now + 3 * RTT;
        for _ in 0..9 {
            cc.on_ack(t, t, 500, false, &rtt());
        }
        assert_eq!((cc.cwnd_cnt, cc.bytes_acked), (4, 500));
        assert_eq!(cc.window(), 5 * MDS);
        cc.on_retransmission_timeout(t, true, 0);
        assert_eq!((cc.window(), cc.ssthresh()), (MDS, Some(2 * MDS)));
    }
}
