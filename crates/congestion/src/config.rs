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
}
