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
}

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
    /// CUBIC (RFC 9438), optionally with HyStart++ (RFC 9406) in slow start.
    Cubic {
        /// Use HyStart++ (RFC 9406) instead of classic slow start.
        hystart: bool,
        /// Window knobs (`loss_reduction_factor` is CUBIC's β, default 0.7).
        common: CommonCcConfig,
    },
}
