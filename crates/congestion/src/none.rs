//! No congestion control.

use std::time::Duration;

use crate::{CongestionController, Phase, RttSample};

/// A window of `u64::MAX` bytes: only flow control limits the sender, and quinn turns its pacer
/// off above `u32::MAX`, which is what "no congestion control" should mean.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Unlimited;

impl CongestionController for Unlimited {
    fn on_sent(&mut self, _now: Duration, _bytes: u64, _pn: u64) {}
    fn on_ack(
        &mut self,
        _now: Duration,
        _sent: Duration,
        _bytes: u64,
        _app_limited: bool,
        _rtt: &RttSample,
    ) {
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
        _now: Duration,
        _sent: Duration,
        _persistent: bool,
        _lost_bytes: u64,
    ) {
    }
    fn on_retransmission_timeout(&mut self, _now: Duration, _reduce: bool, _window: u64) {}

    fn on_mtu_update(&mut self, _max_datagram_size: u64) {}
    fn window(&self) -> u64 {
        u64::MAX
    }
    fn ssthresh(&self) -> Option<u64> {
        None
    }
    fn initial_window(&self) -> u64 {
        u64::MAX
    }
    fn phase(&self) -> Phase {
        Phase::Unlimited
    }
    fn box_clone(&self) -> Box<dyn CongestionController> {
        Box::new(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_huge_and_ignores_loss() {
        let mut cc = Unlimited;
        assert!(cc.window() > u64::from(u32::MAX));
        cc.on_congestion_event(Duration::from_secs(1), Duration::ZERO, true, 1_000_000);
        cc.on_mtu_update(0);
        assert_eq!(cc.window(), u64::MAX);
        assert_eq!(cc.ssthresh(), None);
        assert_eq!(cc.phase(), Phase::Unlimited);
    }
}
