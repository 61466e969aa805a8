//! Configuration of a congestion controller, in base units (bytes, packets, ratios).

use serde::{Deserialize, Serialize};

/// How NewReno grows its window in congestion avoidance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RenoCounting {
    /// Accumulate acknowledged bytes; add one max datagram size each time a whole window has
    /// been acknowledged (exactly one datagram per RTT; RFC 3465 appropriate byte counting).
    Exact,
    /// RFC 9002's pseudo code: on every ACK, `cwnd += max_datagram_size * acked_bytes / cwnd`
    /// (integer arithmetic; grows slightly less than one datagram per RTT).
    Approximate,
    /// Linux's Reno (`tcp_reno_cong_avoid`, `tcp_cong_avoid_ai`, `tcp_reno_ssthresh`): the
    /// window in whole datagrams, a counter of acknowledged datagrams (`snd_cwnd_cnt`) that
    /// adds one datagram per window's worth and restarts at every reduction, and
    /// ssthresh = max(⌊cwnd · β⌋, minimum window) in whole datagrams (Linux: β = 1/2, floor 2).
    Linux,
    /// INET's NewReno (`accurateIncreaseInNewRenoCongestionAvoidance = true`): exact counting,
    /// and the bytes acknowledged during a recovery period (packets sent before it started,
    /// whose ACKs RFC 9002 ignores for growth) still count towards the next increase once the
    /// period ends, so the window keeps growing one datagram per round trip across recoveries.
    Inet,
}

/// Which CUBIC the controller runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CubicProfile {
    /// Linux's `tcp_cubic.c`: windows in whole datagrams, β = 717/1024 with ssthresh in whole
    /// datagrams, the TCP-friendliness estimate at its constant rate 3(1−β)/(1+β) (no switch to
    /// 1 once W_max is regained), Linux's fast convergence, the growth counter restarted at
    /// every reduction, the target one minimum RTT ahead, and Linux's HyStart (ACK train +
    /// delay increase) when `hystart` is on.
    Linux,
    /// RFC 9438 in bytes (β from `loss_reduction_factor`, α_cubic = 1 once W_est regains
    /// the pre-loss window), with HyStart++ (RFC 9406) when `hystart` is on.
    Rfc9438,
}

choice::names!(CubicProfile { Linux = "linux", Rfc9438 = "rfc9438" });

/// Knobs common to every window-based controller.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CommonCcConfig {
    /// Initial congestion window in datagrams of the current max datagram size (RFC 9002: 10).
    /// Not capped at 14720 bytes, so jumbo-MTU runs keep a 10-packet initial window.
    pub initial_window_packets: u64,
    /// Multiplicative decrease on a congestion event (NewReno: 0.5, CUBIC: 0.7).
    pub loss_reduction_factor: f64,
    /// Minimum congestion window in datagrams (RFC 9002: 2).
    pub minimum_window_packets: u64,
}

/// Which controller to build, with its knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum CcConfig {
    /// No congestion control: unlimited window (flow control and pacing still apply).
    None,
    /// NewReno (RFC 9002 section 7 / RFC 6582).
    NewReno {
        /// Congestion-avoidance increase rule.
        counting: RenoCounting,
        /// Window knobs.
        common: CommonCcConfig,
    },
    /// CUBIC, Linux's or RFC 9438's, optionally with a slow-start exit heuristic.
    Cubic {
        /// Leave slow start early on rising delay: Linux's HyStart (profile `Linux`) or
        /// HyStart++ (RFC 9406, profile `Rfc9438`).
        hystart: bool,
        /// Linux's CUBIC or RFC 9438's.
        profile: CubicProfile,
        /// Window knobs (`loss_reduction_factor` is CUBIC's β, default 0.7).
        common: CommonCcConfig,
    },
    /// DCTCP (RFC 8257) as Linux's `tcp_dctcp.c`: Reno growth, a CE reaction of
    /// cwnd · (1 − α/2) with α the marked fraction's moving average, Reno's halving on loss.
    Dctcp {
        /// Window knobs (`loss_reduction_factor` is the loss response, default 0.5).
        common: CommonCcConfig,
    },
    /// TCP Prague (draft-briscoe-iccrg-prague-congestion-control, L4STeam's `tcp_prague.c`):
    /// DCTCP's α with a fractional window, RTT-independent additive increase, ECT(1).
    Prague {
        /// Window knobs (`loss_reduction_factor` is the loss response, default 0.5).
        common: CommonCcConfig,
    },
    /// BBR v1 as Linux 6.18's `tcp_bbr.c`: a model of the bottleneck bandwidth (windowed max
    /// of delivery-rate samples) and the minimum RTT, paced at gain · bandwidth with a window
    /// of 2 · BDP. Needs per-ACK delivery-rate samples (the TCP model).
    Bbr {
        /// Window knobs (`initial_window_packets`; loss does not reduce BBR multiplicatively,
        /// so `loss_reduction_factor` is unused; BBR's own minimum window is 4 packets).
        common: CommonCcConfig,
    },
    /// BBRv3 as the IETF CCWG draft (draft-ietf-ccwg-bbr): BBR's model plus a short-term
    /// rate and volume cut by 0.7 in loss rounds and a long-term volume bounded where a
    /// probing flight lost more than 2%; PROBE_BW cycles DOWN, CRUISE, REFILL, UP. Needs
    /// per-ACK delivery-rate samples and per-packet loss reports (the TCP model).
    Bbr3 {
        /// Window knobs (`initial_window_packets`; BBRv3's loss response is its own β = 0.7,
        /// so `loss_reduction_factor` is unused; its minimum window is 4 packets).
        common: CommonCcConfig,
    },
}

/// The ECN-capable codepoint a sender puts on its packets when ECN is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ect {
    /// ECT(0): classic ECN (RFC 3168); a DualPI2 queue puts it in the classic queue.
    Ect0,
    /// ECT(1): the L4S identifier (RFC 9331); a DualPI2 queue puts it in the L queue.
    Ect1,
}

impl CcConfig {
    /// The codepoint of a sender running this controller: the one place both transports take
    /// it from. Prague sends ECT(1) (RFC 9331); every other controller ECT(0), DCTCP included,
    /// as Linux 6.18 does (`INET_ECN_xmit` sets ECT(0); the ECT(1) flag for congestion
    /// controls came in later kernels).
    pub fn ect(&self) -> Ect {
        match self {
            CcConfig::Prague { .. } => Ect::Ect1,
            _ => Ect::Ect0,
        }
    }

    /// A scalable controller that needs ECN and per-ACK accurate CE feedback (Linux's
    /// `TCP_CONG_NEEDS_ECN`): the TCP model negotiates ECN for it whatever `flow.ecn` says,
    /// marks every packet ECN-capable (SYN, pure ACKs and retransmissions too) and its
    /// receiver echoes CE as Linux's DCTCP does (ECE exactly on ACKs of CE-marked data).
    pub fn needs_ecn(&self) -> bool {
        matches!(self, CcConfig::Dctcp { .. } | CcConfig::Prague { .. })
    }

    /// The controller works from per-ACK delivery-rate samples
    /// ([`on_rate_sample`](crate::CongestionController::on_rate_sample)): only a transport
    /// that samples delivery rates (the TCP model) may run it.
    pub fn needs_rate_samples(&self) -> bool {
        matches!(self, CcConfig::Bbr { .. } | CcConfig::Bbr3 { .. })
    }
}
