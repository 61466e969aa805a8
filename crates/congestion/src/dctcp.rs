//! DCTCP (RFC 8257) with the semantics of Linux's `tcp_dctcp.c`: Reno's growth in whole
//! datagrams, an estimate α of the fraction of CE-marked bytes updated once per observation
//! window with gain g = 1/16 (α in units of 1/1024, starting at 1 as Linux's
//! `dctcp_alpha_on_init = 1024`), ssthresh = cwnd − ⌊cwnd · α / 2⌋ (at least the minimum
//! window) on a reduction that is not a loss (ECN-CE, or TCP's tail-loss-probe repair, for
//! which Linux also asks the controller's ssthresh), and Reno's halving on loss and on a
//! retransmission timeout (Linux's `dctcp_react_to_loss`).
//!
//! Linux counts delivered and CE-marked segments; the controller counts bytes, which is the
//! same fraction for full-size segments. Linux's undo of a spurious reduction
//! (`dctcp_cwnd_undo`) has nothing to act on: the transports do not undo reductions.

use std::time::Duration;

use crate::ce_window::CeWindow;
use crate::config::{CommonCcConfig, RenoCounting};
use crate::newreno::NewReno;
use crate::{CongestionController, Phase, RttSample};

/// α = 1 in DCTCP's fixed point (Linux's DCTCP_MAX_ALPHA).
pub(crate) const MAX_ALPHA: u64 = 1024;
/// g = 1/2^4 (Linux's default `dctcp_shift_g`).
const SHIFT_G: u32 = 4;

/// One EWMA step: α ← (1 − g) · α + g · F, with F = `ce` / `delivered`, in Linux's integer
/// arithmetic (a value below 1/g of a unit decays to zero at once).
pub(crate) fn next_alpha(alpha: u64, delivered: u64, ce: u64) -> u64 {
    let decay = alpha >> SHIFT_G;
    let mut a = alpha - if decay == 0 { alpha } else { decay };
    if ce > 0 {
        let f = (u128::from(ce) << (10 - SHIFT_G)) / u128::from(delivered.max(1));
        a = (u128::from(a) + f).min(u128::from(MAX_ALPHA)) as u64;
    }
    a
}

/// DCTCP state: Reno plus the α estimator.
#[derive(Debug, Clone)]
pub(crate) struct Dctcp {
    reno: NewReno,
    /// Marked fraction's moving average, in 1/1024.
    alpha: u64,
    window: CeWindow,
}

impl Dctcp {
    /// A controller at its initial window, α = 1.
    pub(crate) fn new(common: &CommonCcConfig, max_datagram_size: u64) -> Self {
        Self {
            reno: NewReno::new(RenoCounting::Linux, common, max_datagram_size),
            alpha: MAX_ALPHA,
            window: CeWindow::default(),
        }
    }

    /// α in 1/1024.
    #[cfg(test)]
    pub(crate) fn alpha(&self) -> u64 {
        self.alpha
    }

    /// ssthresh of a CE reaction: cwnd − ⌊cwnd · α / 2048⌋ whole datagrams.
    fn ce_ssthresh(&self) -> u64 {
        let mds = self.reno.mds();
        let cwnd = self.reno.window() / mds;
        let segments = cwnd - ((u128::from(cwnd) * u128::from(self.alpha)) >> 11) as u64;
        (segments * mds).max(self.reno.min_window())
    }
}

impl CongestionController for Dctcp {
    fn on_sent(&mut self, now: Duration, bytes: u64, pn: u64) {
        self.window.on_sent(pn);
        self.reno.on_sent(now, bytes, pn);
    }

    fn on_ack(
        &mut self,
        now: Duration,
        sent: Duration,
        bytes: u64,
        app_limited: bool,
        rtt: &RttSample,
    ) {
        self.reno.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_ecn_feedback(&mut self, _now: Duration, acked_bytes: u64, ce_bytes: u64) {
        self.window.on_feedback(acked_bytes, ce_bytes);
    }

    fn on_end_acks(
        &mut self,
        now: Duration,
        in_flight: u64,
        app_limited: bool,
        largest_acked: Option<u64>,
    ) {
        // Linux updates α after the ACK's deliveries are counted (in_ack_event), so the ACK
        // that ends a window counts in it.
        if self.window.elapsed(largest_acked) {
            let c = self.window.restart();
            self.alpha = next_alpha(self.alpha, c.delivered, c.delivered_ce);
        }
        self.reno
            .on_end_acks(now, in_flight, app_limited, largest_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        if lost_bytes == 0 {
            let ssthresh = self.ce_ssthresh();
            self.reno
                .reduce_to(now, sent, persistent_congestion, ssthresh);
        } else {
            self.reno
                .on_congestion_event(now, sent, persistent_congestion, lost_bytes);
        }
    }

    fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64) {
        self.reno.on_retransmission_timeout(now, reduce, window);
    }

    fn on_mtu_update(&mut self, max_datagram_size: u64) {
        self.reno.on_mtu_update(max_datagram_size);
    }

    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> Option<u64> {
        self.reno.ssthresh()
    }

    fn initial_window(&self) -> u64 {
        self.reno.initial_window()
    }

    fn phase(&self) -> Phase {
        self.reno.phase()
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
    const RTT: Duration = Duration::from_millis(10);

    fn dctcp() -> Dctcp {
        let common = CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.5,
            minimum_window_packets: 2,
        };
        Dctcp::new(&common, MDS)
    }

    #[test]
    fn alpha_follows_the_ewma_by_hand() {
        // α = 1024, F = 1/4: 1024 − 64 + (1/4 · 64 = 16) = 976.
        assert_eq!(next_alpha(1024, 4000, 1000), 976);
        // No marks: 976 − 61 = 915.
        assert_eq!(next_alpha(976, 4000, 0), 915);
        // Below 16 the decay takes everything (Linux's min_not_zero).
        assert_eq!(next_alpha(15, 1000, 0), 0);
        // All marked from 0: g · 1 = 64.
        assert_eq!(next_alpha(0, 1000, 1000), 64);
        // Never above 1.
        assert_eq!(next_alpha(1024, 1000, 1000), 1024);
        assert_eq!(next_alpha(0, 0, 5), MAX_ALPHA.min(5 << 6));
    }

    #[test]
    fn alpha_updates_once_per_window_from_the_marked_fraction() {
        let mut cc = dctcp();
        let mut fluid = Fluid::new();
        // Linux's first window starts at setup, so the first ACK ends it (no marks).
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.alpha(), 960, "1024 − 64");
        // The next window ends at the first packet sent after that ACK (pn 10).
        let t = fluid.now + RTT;
        for pn in 10..30 {
            cc.on_sent(fluid.now, MDS, pn);
        }
        cc.on_ecn_feedback(t, 10 * MDS, 5 * MDS);
        cc.on_end_acks(t, 10 * MDS, false, Some(19));
        // F = 5000 / 10000: 960 − 60 + 32 = 932.
        assert_eq!(cc.alpha(), 932);
        // That ACK started a window ending at pn 30: nothing changes before it is acked.
        cc.on_ecn_feedback(t, 10 * MDS, 0);
        cc.on_end_acks(t, 0, false, Some(29));
        assert_eq!(cc.alpha(), 932);
        cc.on_sent(t, MDS, 30);
        cc.on_ecn_feedback(t + RTT, MDS, MDS);
        cc.on_end_acks(t + RTT, 0, false, Some(30));
        // F = 1000 / 11000: 932 − 58 + ⌊64000 / 11000⌋ = 874 + 5 = 879.
        assert_eq!(cc.alpha(), 879);
    }

    #[test]
    fn a_ce_reaction_reduces_by_half_alpha_and_loss_halves() {
        let mut cc = dctcp();
        let mut fluid = Fluid::new();
        fluid.round(&mut cc, MDS, RTT);
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.window(), 40 * MDS);
        cc.alpha = 512; // α = 1/2
        let t = fluid.now;
        cc.on_congestion_event(t, t, false, 0);
        // 40 − ⌊40 · 512 / 2048⌋ = 30.
        assert_eq!((cc.window(), cc.ssthresh()), (30 * MDS, Some(30 * MDS)));
        assert_eq!(cc.phase(), Phase::Recovery);
        // One reduction per round: a later CE on old data changes nothing.
        cc.on_congestion_event(t + RTT, t, false, 0);
        assert_eq!(cc.window(), 30 * MDS);
        // A small α barely reduces: 30 − ⌊30 · 64 / 2048⌋ = 30 − 0.
        cc.alpha = 64;
        cc.on_congestion_event(t + 2 * RTT, t + RTT, false, 0);
        assert_eq!(cc.window(), 30 * MDS);
        // A loss is Reno's: 30 / 2 = 15.
        cc.on_congestion_event(t + 3 * RTT, t + 3 * RTT, false, MDS);
        assert_eq!(cc.window(), 15 * MDS);
        // The timeout halves too.
        cc.on_retransmission_timeout(t + 4 * RTT, true, 3 * MDS);
        assert_eq!((cc.window(), cc.ssthresh()), (3 * MDS, Some(7 * MDS)));
    }

    #[test]
    fn the_ce_floor_is_the_minimum_window() {
        let mut cc = dctcp();
        cc.reno
            .reduce_to(Duration::ZERO, Duration::ZERO, true, 2 * MDS);
        assert_eq!(cc.window(), 2 * MDS);
        cc.on_congestion_event(RTT, RTT, false, 0);
        assert_eq!(cc.window(), 2 * MDS, "2 − 1 is floored at the minimum");
    }

    #[test]
    fn growth_is_linux_reno() {
        let mut cc = dctcp();
        let mut fluid = Fluid::new();
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.window(), 20 * MDS, "slow start doubles");
        cc.on_congestion_event(fluid.now, fluid.now, false, 0);
        // α = 960 after one unmarked window: 20 − ⌊20 · 960 / 2048⌋ = 11.
        assert_eq!(cc.window(), 11 * MDS);
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.window(), 12 * MDS, "one datagram per round");
        fluid.round(&mut cc, MDS, RTT);
        assert_eq!(cc.window(), 13 * MDS);
    }
}
