//! Delivery-rate sampling as draft-cheng-iccrg-delivery-rate-estimation specifies it (the
//! algorithm of Linux's `tcp_rate.c`), shared by the TCP model and the QUIC research model:
//! every transmission records the connection's delivered count and when it last grew; every
//! ACK turns the most recently sent packet it delivered into a sample
//! `delivered / max(send interval, ACK interval)`.
//!
//! Counts are packets: TCP segments (one per segment: the TCP model has no TSO) or QUIC
//! packets that count in flight. Where the delivered count starts is the transport's choice
//! ([`RateSampler::new`]): Linux counts the SYN (client) or SYN-ACK (server) as delivered by
//! the end of the handshake, so the TCP model starts at 1; the QUIC model starts at 0, as the
//! draft does, since its handshake packets are sampled like any other.
//!
//! Application-limited marking (the draft's "detecting application-limited phases", Linux's
//! `tcp_rate_check_app_limited`) runs when the sender finds less than a packet to send: if the
//! window was not full and every lost packet had been repaired, the connection is
//! application-limited until what is in flight now has been delivered, and samples of packets
//! sent meanwhile say so.

use std::time::Duration;

use congestion::{CaState, RateSample};

/// What a segment remembers of the connection when it was (last) sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TxState {
    /// The connection's delivered count.
    pub delivered: u64,
    /// When it last grew (`None` would be Linux's 0: no timing; never the case here).
    pub delivered_mstamp: Duration,
    /// Send time of the segment the sample's send phase starts at.
    pub first_tx_mstamp: Duration,
    /// Sent while the connection was application-limited.
    pub is_app_limited: bool,
    /// Segments in flight when it left, itself included (Linux's `tx.in_flight`).
    pub in_flight: u64,
    /// The connection's lost count when it left (Linux's `tx.lost`).
    pub lost: u64,
}

/// One newly delivered segment, as the rate sampler needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeliveredTx {
    /// Its state at its latest transmission.
    pub tx: TxState,
    /// Its latest transmission time.
    pub sent: Duration,
    /// Ever retransmitted.
    pub retransmitted: bool,
}

/// The connection-wide part of the sampler (the `tcp_sock` fields `tcp_rate.c` keeps).
#[derive(Debug, Clone)]
pub(crate) struct RateSampler {
    /// Segments delivered (cumulatively or selectively acknowledged) so far.
    delivered: u64,
    /// Segments marked lost so far.
    lost: u64,
    /// When `delivered` last grew.
    delivered_mstamp: Duration,
    /// Send time of the most recently sent segment delivered so far.
    first_tx_mstamp: Duration,
    /// Application-limited until `delivered` passes this; `None`: not limited.
    app_limited: Option<u64>,
}

/// One ACK's sample under construction (Linux's `struct rate_sample` before `tcp_rate_gen`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AckSample {
    prior_delivered: Option<u64>,
    prior_mstamp: Duration,
    interval: Duration,
    is_app_limited: bool,
    is_retrans: bool,
    rtt: Option<Duration>,
    tx_in_flight: u64,
    tx_lost: u64,
}

/// What `gen` needs from the sender besides the delivered segments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AckContext {
    /// Segments newly delivered by this ACK.
    pub newly_delivered: u64,
    /// Segments newly marked lost while processing it.
    pub newly_lost: u64,
    /// Segments in flight before it.
    pub prior_in_flight: u64,
    /// The ACK revealed SACK reneging: no valid sample.
    pub sack_reneg: bool,
    /// The transport's minimum RTT (samples shorter than it are invalid).
    pub min_rtt: Duration,
    /// The transport's smoothed RTT.
    pub srtt: Duration,
    /// One runt segment acknowledged alone (Linux's FLAG_ACK_MAYBE_DELAYED).
    pub ack_maybe_delayed: bool,
    /// The pacing layer's next departure time.
    pub next_departure: Duration,
    /// Loss-recovery state after this ACK's loss detection.
    pub ca_state: CaState,
    /// The sender was window-limited when it last stopped sending.
    pub is_cwnd_limited: bool,
}

impl RateSampler {
    /// A sampler whose delivered count starts at `delivered` (see the module docs).
    pub(crate) fn new(delivered: u64) -> RateSampler {
        RateSampler {
            delivered,
            lost: 0,
            delivered_mstamp: Duration::ZERO,
            first_tx_mstamp: Duration::ZERO,
            app_limited: None,
        }
    }

    /// The snapshot a segment takes as it leaves at `now` (`tcp_rate_skb_sent`);
    /// `nothing_outstanding`: no segment was outstanding before it (Linux's packets_out is 0),
    /// so the sample's phases start now; `in_flight`: segments in flight with it.
    pub(crate) fn on_sent(
        &mut self,
        now: Duration,
        nothing_outstanding: bool,
        in_flight: u64,
    ) -> TxState {
        if nothing_outstanding {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        TxState {
            delivered: self.delivered,
            delivered_mstamp: self.delivered_mstamp,
            first_tx_mstamp: self.first_tx_mstamp,
            is_app_limited: self.app_limited.is_some(),
            in_flight,
            lost: self.lost,
        }
    }

    /// One segment this ACK delivered (`tcp_rate_skb_delivered`): the most recently sent one
    /// (the highest delivered count at send) defines the sample.
    pub(crate) fn on_delivered(&mut self, rs: &mut AckSample, d: &DeliveredTx) {
        if rs.prior_delivered.is_none_or(|p| d.tx.delivered > p) {
            rs.prior_delivered = Some(d.tx.delivered);
            rs.prior_mstamp = d.tx.delivered_mstamp;
            rs.is_app_limited = d.tx.is_app_limited;
            rs.is_retrans = d.retransmitted;
            rs.tx_in_flight = d.tx.in_flight;
            rs.tx_lost = d.tx.lost;
            self.first_tx_mstamp = d.sent;
            // The send phase: from the first segment of the window to this one.
            rs.interval = d.sent.saturating_sub(d.tx.first_tx_mstamp);
        }
    }

    /// The RTT this ACK measured (most recently sent, never retransmitted segment, or the
    /// timestamp echo).
    pub(crate) fn set_rtt(rs: &mut AckSample, rtt: Option<Duration>) {
        rs.rtt = rtt;
    }

    /// Segments newly marked lost outside ACK processing (a timeout).
    pub(crate) fn on_lost(&mut self, n: u64) {
        self.lost += n;
    }

    /// Segments marked lost so far, not counting those of the ACK being processed (they
    /// are added when it ends).
    pub(crate) fn lost(&self) -> u64 {
        self.lost
    }

    /// Whether the connection is marked application-limited.
    pub(crate) fn app_limited(&self) -> bool {
        self.app_limited.is_some()
    }

    /// Ends the ACK (`tcp_rate_gen`): updates the connection's counters and returns the sample.
    pub(crate) fn gen(&mut self, rs: &AckSample, cx: &AckContext, now: Duration) -> RateSample {
        // Linux counts the ACK's deliveries before tcp_rate_gen runs.
        self.delivered += cx.newly_delivered;
        self.lost += cx.newly_lost;
        // The application-limited bubble is gone once what was in flight then is delivered.
        if self.app_limited.is_some_and(|m| self.delivered > m) {
            self.app_limited = None;
        }
        if cx.newly_delivered > 0 {
            self.delivered_mstamp = now;
        }
        let mut out = RateSample {
            delivered: None,
            interval: None,
            prior_delivered: rs.prior_delivered.unwrap_or(0),
            prior_in_flight: cx.prior_in_flight,
            is_app_limited: rs.is_app_limited,
            is_ack_delayed: cx.ack_maybe_delayed,
            losses: cx.newly_lost,
            acked_sacked: cx.newly_delivered,
            rtt: rs.rtt,
            total_delivered: self.delivered,
            total_lost: self.lost,
            delivered_mstamp: self.delivered_mstamp,
            srtt: cx.srtt,
            min_rtt: cx.min_rtt,
            next_departure: cx.next_departure,
            ca_state: cx.ca_state,
            tx_in_flight: 0,
            lost: 0,
            is_cwnd_limited: cx.is_cwnd_limited,
        };
        let Some(prior) = rs.prior_delivered else {
            return out;
        };
        out.tx_in_flight = rs.tx_in_flight;
        out.lost = self.lost - rs.tx_lost;
        if cx.sack_reneg {
            return out;
        }
        out.delivered = Some(self.delivered - prior);
        // Sending and acknowledging are two pipeline phases of the same window; ACK
        // compression can make the ACK phase the shorter one, so take the longer.
        let ack_phase = now.saturating_sub(rs.prior_mstamp);
        let interval = rs.interval.max(ack_phase);
        // Shorter than the minimum RTT: the sample would overestimate the rate.
        if interval < cx.min_rtt {
            return out;
        }
        out.interval = Some(interval);
        out
    }

    /// `tcp_rate_check_app_limited`, when the application writes: less than `mss` bytes were
    /// waiting, the window had room and no lost segment awaits retransmission.
    pub(crate) fn check_app_limited(
        &mut self,
        unsent: u64,
        mss: u64,
        in_flight_segs: u64,
        cwnd_segs: u64,
        lost_unretransmitted: bool,
    ) {
        if unsent < mss && in_flight_segs < cwnd_segs && !lost_unretransmitted {
            self.mark_app_limited(in_flight_segs);
        }
    }

    /// Marks the connection application-limited until what is in flight now is delivered
    /// (also BBR's PROBE_RTT).
    pub(crate) fn mark_app_limited(&mut self, in_flight_segs: u64) {
        self.app_limited = Some((self.delivered + in_flight_segs).max(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn cx(newly_delivered: u64) -> AckContext {
        AckContext {
            newly_delivered,
            newly_lost: 0,
            prior_in_flight: 0,
            sack_reneg: false,
            min_rtt: 10 * MS,
            srtt: 10 * MS,
            ack_maybe_delayed: false,
            next_departure: Duration::ZERO,
            ca_state: CaState::Open,
            is_cwnd_limited: false,
        }
    }

    fn delivered(tx: TxState, sent: Duration) -> DeliveredTx {
        DeliveredTx {
            tx,
            sent,
            retransmitted: false,
        }
    }

    /// Four segments sent 1 ms apart from idle at 0, RTT 10 ms, one ACK each. The third
    /// ACK (at 12 ms) samples segment 2, which left with delivered = 1 (the handshake) and
    /// delivered_mstamp = 0 (nothing delivered since idle): 4 − 1 = 3 segments over
    /// max(send phase 2 − 0 = 2 ms, ACK phase 12 − 0 = 12 ms).
    #[test]
    fn a_window_from_idle_samples_its_deliveries_over_the_longer_phase() {
        let mut r = RateSampler::new(1);
        let tx: Vec<TxState> = (0..4u32)
            .map(|k| r.on_sent(k * MS, k == 0, u64::from(k) + 1))
            .collect();
        assert!(tx
            .iter()
            .all(|t| t.delivered == 1 && t.first_tx_mstamp.is_zero()));
        let mut last = None;
        for k in 0..3u32 {
            let mut rs = AckSample::default();
            r.on_delivered(&mut rs, &delivered(tx[k as usize], k * MS));
            last = Some(r.gen(&rs, &cx(1), (10 + k) * MS));
        }
        let s = last.unwrap();
        assert_eq!(
            s.delivered,
            Some(3),
            "1 + 3 delivered now, 1 when segment 2 left"
        );
        assert_eq!(s.prior_delivered, 1);
        assert_eq!(
            s.interval,
            Some(12 * MS),
            "ACK phase 12 − 0 beats send phase 2 − 0"
        );
        assert_eq!(s.total_delivered, 4);
        assert_eq!(s.delivered_mstamp, 12 * MS);
        // A segment sent now carries delivered 4 and the ACK's time: the next window's
        // samples start from here.
        let t = r.on_sent(12 * MS, false, 2);
        assert_eq!((t.delivered, t.delivered_mstamp), (4, 12 * MS));
        assert_eq!(
            t.first_tx_mstamp,
            2 * MS,
            "send time of the latest delivered segment"
        );
    }

    /// A stretch ACK delivering two segments at once: the most recently sent one (highest
    /// delivered count at send) is the sample's base, and its send phase is longer than the
    /// compressed ACK phase.
    #[test]
    fn a_compressed_ack_uses_the_send_phase_and_the_newest_segment() {
        let mut r = RateSampler::new(1);
        // Steady state: segment a sent at 100 ms after delivered reached 50 at 95 ms, with
        // the window's first send at 90 ms; segment b later with delivered 52 at 99 ms.
        let a = TxState {
            delivered: 50,
            delivered_mstamp: 95 * MS,
            first_tx_mstamp: 90 * MS,
            is_app_limited: false,
            in_flight: 10,
            lost: 0,
        };
        let b = TxState {
            delivered: 52,
            delivered_mstamp: 99 * MS,
            first_tx_mstamp: 90 * MS,
            is_app_limited: true,
            in_flight: 11,
            lost: 2,
        };
        r.delivered = 60;
        r.lost = 5;
        let mut rs = AckSample::default();
        r.on_delivered(&mut rs, &delivered(b, 104 * MS));
        r.on_delivered(&mut rs, &delivered(a, 100 * MS));
        let mut c = cx(6);
        c.newly_lost = 1;
        let s = r.gen(&rs, &c, 110 * MS);
        // The newest segment's flight: 11 in flight when it left, 2 lost then, 5 + 1 now.
        assert_eq!((s.tx_in_flight, s.lost), (11, 4));
        assert_eq!(
            s.prior_delivered, 52,
            "the newest segment defines the sample"
        );
        assert_eq!(s.delivered, Some(66 - 52));
        // Send phase 104 − 90 = 14 ms; ACK phase 110 − 99 = 11 ms: the send phase.
        assert_eq!(s.interval, Some(14 * MS));
        assert!(s.is_app_limited, "b was sent app-limited");
        assert_eq!(s.acked_sacked, 6);
    }

    #[test]
    fn intervals_below_the_minimum_rtt_and_sack_reneging_give_no_rate() {
        let mut r = RateSampler::new(1);
        let t = r.on_sent(Duration::ZERO, true, 1);
        let mut rs = AckSample::default();
        r.on_delivered(&mut rs, &delivered(t, Duration::ZERO));
        // 5 ms < min RTT 10 ms: delivered is reported, the interval is not.
        let s = r.gen(&rs, &cx(1), 5 * MS);
        assert_eq!((s.delivered, s.interval), (Some(1), None));
        let mut c = cx(1);
        c.sack_reneg = true;
        let s = r.gen(&rs, &c, 20 * MS);
        assert_eq!((s.delivered, s.interval), (None, None));
        // An ACK that delivered nothing new has no sample either.
        let s = r.gen(&AckSample::default(), &cx(0), 30 * MS);
        assert_eq!(s.delivered, None);
        assert_eq!(s.total_delivered, 3);
    }

    /// A sampler starting at 0 (the QUIC model's): two packets leave from idle at 0 and
    /// 5 ms, one ACK at 40 ms delivers both. Both left with delivered = 0, which is a valid
    /// base (Linux's `!prior_delivered` test would read it as "no sample"): 2 − 0 = 2
    /// packets over max(send phase 0 − 0 = 0, ACK phase 40 − 0 = 40 ms).
    #[test]
    fn a_sampler_starting_at_zero_samples_its_first_flight() {
        let mut r = RateSampler::new(0);
        let t0 = r.on_sent(Duration::ZERO, true, 1);
        let t1 = r.on_sent(5 * MS, false, 2);
        assert_eq!((t0.delivered, t1.delivered), (0, 0));
        let mut rs = AckSample::default();
        r.on_delivered(&mut rs, &delivered(t0, Duration::ZERO));
        r.on_delivered(&mut rs, &delivered(t1, 5 * MS));
        let s = r.gen(&rs, &cx(2), 40 * MS);
        assert_eq!(s.prior_delivered, 0);
        assert_eq!(s.delivered, Some(2));
        assert_eq!(s.interval, Some(40 * MS));
        assert_eq!((s.total_delivered, s.tx_in_flight), (2, 1));
        // Nothing delivered and nothing in flight: the mark is 1 (never 0, which would read
        // as "not limited"), so it holds through the first delivery and ends with the second.
        let mut idle = RateSampler::new(0);
        idle.mark_app_limited(0);
        idle.gen(&AckSample::default(), &cx(1), 50 * MS);
        assert!(idle.app_limited());
        idle.gen(&AckSample::default(), &cx(1), 51 * MS);
        assert!(!idle.app_limited());
    }

    /// tcp_rate_check_app_limited: marked while the window has room and nothing waits; the
    /// mark holds until what was in flight then (plus what was delivered) is delivered.
    #[test]
    fn app_limited_marks_until_the_bubble_is_delivered() {
        let mut r = RateSampler::new(1);
        // Half a segment waits, 3 of 10 in flight, nothing lost: limited until delivered
        // passes 1 + 3 = 4.
        r.check_app_limited(500, 1448, 3, 10, false);
        assert!(r.app_limited());
        let t = r.on_sent(Duration::ZERO, false, 4);
        assert!(t.is_app_limited);
        for _ in 0..3 {
            r.gen(&AckSample::default(), &cx(1), 20 * MS);
            assert!(r.app_limited(), "delivered {} is not past 4", r.delivered);
        }
        r.gen(&AckSample::default(), &cx(1), 21 * MS);
        assert!(!r.app_limited(), "delivered 5 > 4 at the next ACK");
        // A full window, a waiting segment or a lost segment not yet resent: not limited.
        r.check_app_limited(500, 1448, 10, 10, false);
        r.check_app_limited(1448, 1448, 3, 10, false);
        r.check_app_limited(0, 1448, 3, 10, true);
        assert!(!r.app_limited());
    }
}
