//! Window limits derived from the common configuration and the current max datagram size.

use crate::config::CommonCcConfig;

/// Sanitised knobs shared by the window-based controllers, in bytes of the current datagram size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    initial_window_packets: u64,
    minimum_window_packets: u64,
    beta: f64,
    mds: u64,
}

impl Limits {
    /// Builds limits; `default_beta` replaces a non-finite reduction factor.
    pub(crate) fn new(common: &CommonCcConfig, max_datagram_size: u64, default_beta: f64) -> Self {
        let beta = if common.loss_reduction_factor.is_finite() {
            common.loss_reduction_factor.clamp(0.0, 1.0)
        } else {
            default_beta
        };
        Self {
            initial_window_packets: common.initial_window_packets,
            // A zero minimum window would deadlock the sender for good: keep at least one datagram.
            minimum_window_packets: common.minimum_window_packets.max(1),
            beta,
            mds: max_datagram_size.max(1),
        }
    }

    /// Current max datagram size in bytes (never zero).
    pub(crate) fn mds(&self) -> u64 {
        self.mds
    }

    /// Records a new max datagram size.
    pub(crate) fn set_mds(&mut self, max_datagram_size: u64) {
        self.mds = max_datagram_size.max(1);
    }

    /// Multiplicative decrease factor in [0, 1].
    pub(crate) fn beta(&self) -> f64 {
        self.beta
    }

    /// Minimum congestion window in bytes.
    pub(crate) fn min_window(&self) -> u64 {
        self.minimum_window_packets.saturating_mul(self.mds)
    }

    /// Initial window in bytes. Deliberately not capped at RFC 9002's 14720 bytes: studies count
    /// the initial window in packets (IW10 of RFC 6928, INET's model), and the cap would silently
    /// shrink it for jumbo MTUs; a byte cap, if wanted, belongs in the configuration.
    pub(crate) fn initial_window(&self) -> u64 {
        self.initial_window_packets
            .saturating_mul(self.mds)
            .max(self.min_window())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(iw: u64, beta: f64, min: u64) -> CommonCcConfig {
        CommonCcConfig {
            initial_window_packets: iw,
            loss_reduction_factor: beta,
            minimum_window_packets: min,
        }
    }

    #[test]
    fn windows_scale_with_datagram_size_without_cap() {
        let l = Limits::new(&common(10, 0.5, 2), 8952, 0.5);
        assert_eq!(l.initial_window(), 89_520);
        assert_eq!(l.min_window(), 17_904);
    }

    #[test]
    fn odd_input_is_sanitised() {
        let l = Limits::new(&common(0, f64::NAN, 0), 0, 0.7);
        assert_eq!(l.mds(), 1);
        assert_eq!(l.min_window(), 1);
        assert_eq!(l.initial_window(), 1);
        assert_eq!(l.beta(), 0.7);
        assert_eq!(Limits::new(&common(10, 3.0, 2), 1200, 0.5).beta(), 1.0);
        assert_eq!(
            Limits::new(&common(u64::MAX, 0.5, 2), 1200, 0.5).initial_window(),
            u64::MAX
        );
    }
}
