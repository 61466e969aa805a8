//! The queue delays of one time bin (the simulator's series); the run's whole distribution is a
//! [`quantile::DelayHistogram`].

use std::time::Duration;

/// Count, exact mean and maximum of the queue delays of the packets of one time bin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DelayWindow {
    /// Packets recorded.
    pub packets: u64,
    /// Sum of their delays, ns.
    sum_ns: u128,
    /// Largest delay.
    max: Duration,
}

impl DelayWindow {
    /// Records one packet that waited `delay`.
    pub fn record(&mut self, delay: Duration) {
        self.packets += 1;
        self.sum_ns = self.sum_ns.saturating_add(delay.as_nanos());
        self.max = self.max.max(delay);
    }

    /// Mean delay, s; `None` without packets.
    pub fn mean_s(&self) -> Option<f64> {
        (self.packets > 0).then(|| self.sum_ns as f64 / self.packets as f64 / 1e9)
    }

    /// Largest delay, s; `None` without packets.
    pub fn max_s(&self) -> Option<f64> {
        (self.packets > 0).then_some(self.max.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_has_no_values_until_a_packet_comes() {
        let mut w = DelayWindow::default();
        assert_eq!((w.mean_s(), w.max_s()), (None, None));
        w.record(Duration::ZERO);
        assert_eq!((w.mean_s(), w.max_s()), (Some(0.0), Some(0.0)));
        w.record(Duration::from_millis(3));
        w.record(Duration::from_millis(1));
        assert_eq!(w.packets, 3);
        assert!((w.mean_s().expect("mean") - 4e-3 / 3.0).abs() < 1e-15);
        assert_eq!(w.max_s(), Some(0.003));
    }
}
