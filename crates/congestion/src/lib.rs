//! Congestion controllers shared by every quiclab transport: `none`, NewReno (RFC 9002 §7, exact
//! or approximate counting, or Linux's Reno), CUBIC in two profiles (Linux's `tcp_cubic.c`
//! with its HyStart, or RFC 9438 with optional HyStart++, RFC 9406), and the scalable
//! ECN-driven controllers DCTCP (RFC 8257 as Linux's `tcp_dctcp.c`) and TCP Prague (the ICCRG
//! draft and the L4STeam's reference code), and the model-based BBR v1 (Linux's `tcp_bbr.c`)
//! and BBRv3 (the IETF CCWG draft). [`CcConfig::ect`] is the ECN codepoint a sender
//! running the controller uses.
//!
//! Controllers are pure state machines behind [`CongestionController`]; [`build`] makes one from a
//! [`CcConfig`]. The trait mirrors quinn-proto's `congestion::Controller` so a thin adapter can
//! plug it into quinn, and a TCP model can drive it with the same calls.
//!
//! # Callback contract
//!
//! - **Time** is a `Duration` since the start of the run and never goes backwards.
//! - **Bytes** are what the window counts: QUIC UDP payload bytes, TCP payload bytes. The
//!   `max_datagram_size` passed to [`build`] and [`CongestionController::on_mtu_update`] is a full
//!   packet in the same unit (QUIC max UDP payload / TCP MSS).
//! - [`on_sent`](CongestionController::on_sent): once per packet that counts towards bytes in
//!   flight, in sending order; packet numbers must increase (HyStart++ delimits its rounds by them).
//! - [`on_ack`](CongestionController::on_ack): once per newly acknowledged in-flight packet, with
//!   that packet's send time and size. ACKs of packets sent at or before the start of the current
//!   recovery period never grow the window; the first ACK of a packet sent after it ends recovery.
//!   `app_limited` = the sender was not filling the window: the window does not grow (RTT samples
//!   are still used by HyStart++). `rtt.latest` is the sample of this ACK frame, `rtt.smoothed`
//!   the SRTT (CUBIC's target horizon).
//! - [`on_end_acks`](CongestionController::on_end_acks): once per ACK frame, after its `on_ack`
//!   calls; `largest_acked` is the largest newly acknowledged packet number (ends HyStart++ rounds).
//! - [`on_ecn_feedback`](CongestionController::on_ecn_feedback): once per ACK (TCP segment,
//!   QUIC ACK frame) that newly acknowledges data while ECN is in use, after its `on_ack` calls
//!   and before `on_end_acks`, with the bytes it newly acknowledged and how many of them the
//!   receiver reported CE-marked. TCP with RFC 3168 feedback counts every byte an ACK carrying
//!   ECE acknowledges (the receiver repeats ECE until it sees CWR, so this over-counts); QUIC's
//!   ACK_ECN counts packets, so the research model reports the CE count's increase times the
//!   mean size of the newly acknowledged packets. With a controller that [needs
//!   ECN](CcConfig::needs_ecn) (DCTCP, Prague) the TCP model's receiver echoes CE as Linux's
//!   DCTCP does (ECE exactly on the ACKs of CE-marked data, an immediate ACK when that
//!   changes), so the count is accurate to the ACK. DCTCP and Prague take the marked fraction
//!   from here; the reaction itself still arrives as
//!   [`on_congestion_event`](CongestionController::on_congestion_event) with `lost_bytes` 0.
//! - `lost_bytes` 0 in `on_congestion_event` means a reduction not caused by a newly detected
//!   loss: an ECN-CE reaction, or TCP's tail-loss-probe repair (for which Linux also asks the
//!   controller's ssthresh); DCTCP and Prague answer it with their α-scaled reduction, and a
//!   loss (`lost_bytes` > 0) or a timeout with the classic one.
//! - [`on_congestion_event`](CongestionController::on_congestion_event): once per batch of losses
//!   (or ECN-CE increase) with the send time of the newest lost packet. Call it for every batch:
//!   the controller ignores events for packets sent at or before its current recovery start (one
//!   reduction per window, RFC 9002 §7.3.2). `persistent_congestion` (RFC 9002 §7.6) additionally
//!   collapses the window to the minimum and forgets the recovery period, even if the reduction
//!   itself was ignored.
//! - [`on_rate_sample`](CongestionController::on_rate_sample): once per ACK that the
//!   transport's delivery-rate sampler (Linux's `tcp_rate.c`) processed, after the loss
//!   state machine ran for that ACK and after its `on_ack`/`on_end_acks` calls (Linux's
//!   `cong_control` hook sees the ACK last). Counts in a [`RateSample`] are packets (TCP
//!   segments), as Linux counts them; `in_flight` is the packets in flight after the ACK.
//!   Only transports that sample delivery rates call it (today the TCP model); window-based
//!   controllers ignore it. A controller that needs it (BBR) says so with
//!   [`needs_rate_samples`](CcConfig::needs_rate_samples), so a transport without a sampler
//!   refuses it. After the call the transport reads
//!   [`marks_app_limited`](CongestionController::marks_app_limited).
//!   A sample also carries the sampled packet's `tx_in_flight`, the `lost` count since it
//!   was sent and whether the sender was window-limited (BBRv3's loss-rate and probing
//!   checks).
//! - [`on_packet_lost`](CongestionController::on_packet_lost): once per packet the
//!   transport newly marks lost (by SACK, RACK, a duplicate-ACK count, the reordering
//!   timer or a timeout), in marking order, as it marks it and so before the ACK's
//!   [`on_rate_sample`](CongestionController::on_rate_sample), with the packets in flight at
//!   its send and the packets marked lost since then, itself included (Linux's
//!   `skb_marked_lost` hook). Transports with a rate sampler call it (the TCP model, and the
//!   QUIC research model for controllers that [use rate samples](CongestionController::uses_rate_samples));
//!   controllers other than BBRv3 ignore it.
//! - [`on_tx_start`](CongestionController::on_tx_start): when a data segment leaves with
//!   nothing in flight (Linux's `CA_EVENT_TX_START`), with whether the sampler currently
//!   marks the connection application-limited.
//! - [`pacing_rate`](CongestionController::pacing_rate): read before each data segment; while
//!   it is `Some`, the TCP model paces as Linux's internal pacing does (a segment leaves no
//!   earlier than the previous one's departure plus its length at the rate).
//! - [`window`](CongestionController::window) may be read at any time. Windows never fall below
//!   `minimum_window_packets` (at least one) datagrams.
//!
//! Determinism: no clocks and no global randomness: BBR's random gain-cycle phase and
//! BBRv3's random probe waits come from the seed given to [`build_seeded`]; CUBIC uses `f64` (including `cbrt`), so results are
//! bit-identical for the same inputs on the same platform.

mod bbr;
mod bbr3;
mod bbr_common;
mod ce_window;
pub mod config;
mod cubic;
mod cubic_linux;
mod dctcp;
#[cfg(test)]
mod fluid;
mod hystart;
mod newreno;
mod none;
mod params;
mod prague;
mod recovery;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use config::{CcConfig, CommonCcConfig, CubicProfile, Ect, RenoCounting};

/// RTT information available at an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttSample {
    /// The RTT sample of this ACK frame.
    pub latest: Duration,
    /// Smoothed RTT (RFC 9002 §5.3).
    pub smoothed: Duration,
    /// Minimum RTT observed so far.
    pub min: Duration,
}

/// The sender's loss-recovery state at an ACK, as a controller that watches it sees it
/// (Linux's `icsk_ca_state`, with Disorder folded into `Open`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum CaState {
    /// No loss being repaired.
    #[default]
    Open,
    /// A window reduction in answer to ECN-Echo (Linux's CWR state).
    Cwr,
    /// Fast recovery.
    Recovery,
    /// After a retransmission timeout, until everything sent before it is acknowledged.
    Loss,
}

/// One ACK's delivery-rate sample (Linux's `struct rate_sample`, filled as `tcp_rate.c`
/// does). Counts are packets (segments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSample {
    /// Packets delivered between the transmission of the most recently sent packet this ACK
    /// delivered and now; `None`: no valid sample (no timing information, SACK reneging, or
    /// an interval shorter than the minimum RTT).
    pub delivered: Option<u64>,
    /// The sample's interval: the longer of its send phase and its ACK phase; `None` with
    /// `delivered` (or alone when the interval was shorter than the minimum RTT).
    pub interval: Option<Duration>,
    /// The connection's delivered count when that packet was sent.
    pub prior_delivered: u64,
    /// Packets in flight before this ACK was processed.
    pub prior_in_flight: u64,
    /// That packet was sent while the connection was application-limited.
    pub is_app_limited: bool,
    /// The ACK may have been delayed by the receiver (one runt segment acknowledged alone).
    pub is_ack_delayed: bool,
    /// Packets newly marked lost while processing this ACK.
    pub losses: u64,
    /// Packets newly acknowledged or SACKed by this ACK.
    pub acked_sacked: u64,
    /// RTT of the most recently sent packet this ACK delivered (never retransmitted), or
    /// from the timestamp echo; `None` if neither gives one.
    pub rtt: Option<Duration>,
    /// Connection totals at this ACK: packets delivered (the SYN counts, as in Linux) and
    /// marked lost.
    pub total_delivered: u64,
    /// Packets marked lost since the connection started (RTO markings included).
    pub total_lost: u64,
    /// When the delivered count last grew (Linux's `delivered_mstamp`).
    pub delivered_mstamp: Duration,
    /// The transport's smoothed and minimum RTT (zero before any sample).
    pub srtt: Duration,
    /// The transport's minimum RTT, the handshake's included.
    pub min_rtt: Duration,
    /// The pacing layer's earliest departure time for the next segment (Linux's
    /// `tcp_wstamp_ns`); at most `now` when nothing is held back.
    pub next_departure: Duration,
    /// The loss-recovery state after this ACK's loss detection.
    pub ca_state: CaState,
    /// Packets in flight when the sample's packet was sent, itself included (Linux's
    /// `tx.in_flight`); 0 without a sampled packet.
    pub tx_in_flight: u64,
    /// Packets marked lost between the sending of the sample's packet and this ACK (Linux's
    /// `tp->lost - tx.lost`); 0 without a sampled packet.
    pub lost: u64,
    /// The sender was limited by the congestion window when it last stopped sending (Linux's
    /// `tp->is_cwnd_limited`).
    pub is_cwnd_limited: bool,
}

/// One packet newly marked lost, as the transport remembers it from its (latest) sending;
/// counts are packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LostPacket {
    /// Packets in flight when it was sent, itself included.
    pub tx_in_flight: u64,
    /// Packets marked lost since it was sent, itself included.
    pub lost: u64,
    /// It was sent while the connection was application-limited.
    pub is_app_limited: bool,
}

/// The controller's state, for metrics and traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Window below ssthresh (HyStart++'s conservative slow start is reported here too).
    SlowStart,
    /// Window at or above ssthresh, outside recovery.
    CongestionAvoidance,
    /// Between a congestion event and the ACK of a packet sent after it.
    Recovery,
    /// No congestion control (`none`).
    Unlimited,
    /// BBR's STARTUP.
    Startup,
    /// BBR's DRAIN.
    Drain,
    /// BBR's PROBE_BW.
    ProbeBw,
    /// BBR's PROBE_RTT.
    ProbeRtt,
}

/// A congestion controller; see the crate docs for the callback contract.
pub trait CongestionController: Send + Sync + std::fmt::Debug {
    /// A packet (packet number `pn`) of `bytes` was sent at `now`.
    fn on_sent(&mut self, now: Duration, bytes: u64, pn: u64);
    /// One newly acknowledged packet, sent at `sent`, of `bytes`. `app_limited`: the sender was not using the full window before these ACKs.
    fn on_ack(
        &mut self,
        now: Duration,
        sent: Duration,
        bytes: u64,
        app_limited: bool,
        rtt: &RttSample,
    );
    /// End of a batch of ACKs processed at `now` (one ACK frame); `largest_acked` = largest packet number newly acknowledged.
    fn on_end_acks(
        &mut self,
        now: Duration,
        in_flight: u64,
        app_limited: bool,
        largest_acked: Option<u64>,
    );
    /// One ACK's ECN feedback (see the crate docs): `acked_bytes` newly acknowledged, of which
    /// `ce_bytes` were reported CE-marked. Loss-based controllers ignore it (their response
    /// to CE is the congestion event).
    fn on_ecn_feedback(&mut self, now: Duration, acked_bytes: u64, ce_bytes: u64) {
        let _ = (now, acked_bytes, ce_bytes);
    }
    /// Loss (or ECN-CE) detected at `now`; `sent` = send time of the most recent lost packet. The controller itself ignores events for packets sent before its current recovery period started (RFC 9002 §7.3.2), so callers may call it for every batch of losses.
    fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent_congestion: bool,
        lost_bytes: u64,
    );
    /// A TCP retransmission timeout at `now` (Linux's `tcp_enter_loss`). `reduce`: the first
    /// timeout outside a recovery episode, which sets a new ssthresh as a congestion event
    /// would (later backoffs, or a timeout inside fast recovery, keep it). The window becomes
    /// `window` bytes (at least one datagram; Linux: the segments still in flight + 1, RFC 5681:
    /// one), slow start resumes, and the recovery period and growth epoch are forgotten.
    fn on_retransmission_timeout(&mut self, now: Duration, reduce: bool, window: u64);
    /// The max datagram size changed (payload bytes of a full packet: QUIC UDP payload / TCP MSS).
    fn on_mtu_update(&mut self, max_datagram_size: u64);
    /// Congestion window in bytes.
    fn window(&self) -> u64;
    /// Slow-start threshold in bytes; `None` while infinite.
    fn ssthresh(&self) -> Option<u64>;
    /// Initial window in bytes for the current max datagram size.
    fn initial_window(&self) -> u64;
    /// Current state, for metrics.
    fn phase(&self) -> Phase;
    /// The rate in bytes per second the controller wants the sender to pace at (Prague);
    /// `None`: the transport's own pacing, if any.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// The controller is driven by delivery-rate samples (BBR, BBRv3): a transport that
    /// samples only for such controllers (the QUIC research model) runs its sampler, reports
    /// lost packets and paces at [`pacing_rate`](Self::pacing_rate) when this is true.
    fn uses_rate_samples(&self) -> bool {
        false
    }
    /// One ACK's delivery-rate sample (see the crate docs); `in_flight` = packets in flight
    /// after the ACK. Window-based controllers ignore it.
    fn on_rate_sample(&mut self, now: Duration, rs: &RateSample, in_flight: u64) {
        let _ = (now, rs, in_flight);
    }
    /// One packet newly marked lost (see the crate docs). Only controllers that judge the
    /// loss rate of the flight a lost packet belonged to (BBRv3) use it.
    fn on_packet_lost(&mut self, now: Duration, lost: &LostPacket) {
        let _ = (now, lost);
    }
    /// After [`on_rate_sample`](Self::on_rate_sample): the transport must mark the
    /// connection application-limited now (BBR's PROBE_RTT keeps its low-rate samples out of
    /// the bandwidth filter this way, writing Linux's `tp->app_limited`).
    fn marks_app_limited(&self) -> bool {
        false
    }
    /// A data segment leaves with nothing in flight (Linux's `CA_EVENT_TX_START`);
    /// `app_limited`: the rate sampler marks the connection application-limited.
    fn on_tx_start(&mut self, now: Duration, app_limited: bool) {
        let _ = (now, app_limited);
    }
    /// The controller sets its window on every ACK, during reductions too (Linux's
    /// `cong_control`, which Prague uses): the transport runs no proportional rate reduction
    /// of its own and passes the ACKs of a window reduction on as able to grow the window.
    fn controls_reductions(&self) -> bool {
        false
    }
    /// A boxed copy of this controller with its full state.
    fn box_clone(&self) -> Box<dyn CongestionController>;
}

impl Clone for Box<dyn CongestionController> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}

/// Builds the controller `config` describes for datagrams of `max_datagram_size` bytes,
/// starting at `now` (BBR's min-RTT filter starts then), with seed 0 for anything random.
pub fn build(
    config: &CcConfig,
    max_datagram_size: u64,
    now: Duration,
) -> Box<dyn CongestionController> {
    build_seeded(config, max_datagram_size, now, 0)
}

/// [`build`] with a seed for the controller's random choices (BBR's gain-cycle start phase,
/// BBRv3's probe waits);
/// the transport derives it from the run seed so a run stays a pure function of it.
pub fn build_seeded(
    config: &CcConfig,
    max_datagram_size: u64,
    now: Duration,
    seed: u64,
) -> Box<dyn CongestionController> {
    match config {
        CcConfig::Bbr { common } => Box::new(bbr::Bbr::new(common, max_datagram_size, now, seed)),
        CcConfig::Bbr3 { common } => {
            Box::new(bbr3::Bbr3::new(common, max_datagram_size, now, seed))
        }
        CcConfig::None => Box::new(none::Unlimited),
        CcConfig::NewReno { counting, common } => {
            Box::new(newreno::NewReno::new(*counting, common, max_datagram_size))
        }
        CcConfig::Cubic {
            hystart,
            profile: CubicProfile::Rfc9438,
            common,
        } => Box::new(cubic::Cubic::new(*hystart, common, max_datagram_size)),
        CcConfig::Cubic {
            hystart,
            profile: CubicProfile::Linux,
            common,
        } => Box::new(cubic_linux::LinuxCubic::new(
            *hystart,
            common,
            max_datagram_size,
        )),
        CcConfig::Dctcp { common } => Box::new(dctcp::Dctcp::new(common, max_datagram_size)),
        CcConfig::Prague { common } => Box::new(prague::Prague::new(common, max_datagram_size)),
    }
}

/// Phase of a window-based controller from its window, threshold and recovery state.
fn window_phase(window: u64, ssthresh: Option<u64>, in_recovery: bool) -> Phase {
    if in_recovery {
        Phase::Recovery
    } else if ssthresh.is_none_or(|s| window < s) {
        Phase::SlowStart
    } else {
        Phase::CongestionAvoidance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(beta: f64) -> CommonCcConfig {
        CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: beta,
            minimum_window_packets: 2,
        }
    }

    #[test]
    fn build_honours_the_config() {
        let reno = build(
            &CcConfig::NewReno {
                counting: RenoCounting::Exact,
                common: common(0.5),
            },
            1200,
            Duration::ZERO,
        );
        assert_eq!(reno.window(), 12_000);
        assert_eq!(reno.initial_window(), 12_000);
        assert_eq!(reno.phase(), Phase::SlowStart);
        let cubic = build(
            &CcConfig::Cubic {
                hystart: true,
                profile: CubicProfile::Rfc9438,
                common: common(0.7),
            },
            1000,
            Duration::ZERO,
        );
        assert_eq!(cubic.window(), 10_000);
        let none = build(&CcConfig::None, 1200, Duration::ZERO);
        assert_eq!(none.phase(), Phase::Unlimited);
    }

    #[test]
    fn boxed_clone_keeps_state() {
        let mut cc = build(
            &CcConfig::NewReno {
                counting: RenoCounting::Exact,
                common: common(0.5),
            },
            1000,
            Duration::ZERO,
        );
        cc.on_congestion_event(
            Duration::from_millis(5),
            Duration::from_millis(1),
            false,
            1000,
        );
        let copy = cc.clone();
        assert_eq!(copy.window(), 5000);
        assert_eq!(copy.phase(), Phase::Recovery);
    }

    #[test]
    fn phase_from_window() {
        assert_eq!(window_phase(10, None, false), Phase::SlowStart);
        assert_eq!(window_phase(10, Some(11), false), Phase::SlowStart);
        assert_eq!(
            window_phase(11, Some(11), false),
            Phase::CongestionAvoidance
        );
        assert_eq!(window_phase(11, Some(11), true), Phase::Recovery);
    }
}
