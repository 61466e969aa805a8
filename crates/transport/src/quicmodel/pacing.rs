//! quinn's pacer semantics: a token bucket holding the bytes of a 2 ms burst at the current
//! rate (at least 10, at most 256 full packets), refilled at 1.25 · cwnd / smoothed RTT. When
//! the bucket lacks a packet's bytes, the sender waits until 4/5 of the time the refill of
//! the missing bytes (at least a full bucket's worth) takes.

use std::time::Duration;

/// Burst interval the bucket holds.
const BURST_INTERVAL_NS: u128 = 2_000_000;
/// Smallest bucket, packets.
const MIN_BURST: u64 = 10;
/// Largest bucket, packets.
const MAX_BURST: u64 = 256;

/// Token-bucket pacer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacer {
    capacity: u64,
    last_window: u64,
    tokens: u64,
    prev: Duration,
}

fn capacity(srtt: Duration, window: u64, mtu: u32) -> u64 {
    let rtt = srtt.as_nanos().max(1);
    let c = (u128::from(window) * BURST_INTERVAL_NS / rtt) as u64;
    c.clamp(MIN_BURST * u64::from(mtu), MAX_BURST * u64::from(mtu))
}

impl Pacer {
    /// A full bucket for `window` at `srtt`.
    pub(crate) fn new(srtt: Duration, window: u64, mtu: u32, now: Duration) -> Pacer {
        let c = capacity(srtt, window, mtu);
        Pacer {
            capacity: c,
            last_window: window,
            tokens: c,
            prev: now,
        }
    }

    /// A packet of `bytes` left.
    pub(crate) fn on_transmit(&mut self, bytes: u32) {
        self.tokens = self.tokens.saturating_sub(u64::from(bytes));
    }

    /// `None` if `bytes` may go now, else when to try again.
    pub(crate) fn delay(
        &mut self,
        srtt: Duration,
        bytes: u64,
        mtu: u32,
        window: u64,
        now: Duration,
    ) -> Option<Duration> {
        if window != self.last_window {
            self.capacity = capacity(srtt, window, mtu);
            self.tokens = self.tokens.min(self.capacity);
            self.last_window = window;
        }
        if self.tokens >= bytes || window > u64::from(u32::MAX) || srtt.is_zero() {
            return None;
        }
        let elapsed = now.saturating_sub(self.prev);
        let new = window as f64 * 1.25 * (elapsed.as_secs_f64() / srtt.as_secs_f64());
        self.tokens = self.tokens.saturating_add(new as u64).min(self.capacity);
        self.prev = now;
        if self.tokens >= bytes {
            return None;
        }
        let missing = bytes.max(self.capacity) - self.tokens;
        let unscaled = srtt.as_nanos() * u128::from(missing) / u128::from(window.max(1));
        let wait = Duration::from_nanos(u64::try_from(unscaled / 5 * 4).unwrap_or(u64::MAX));
        Some(self.prev + wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_then_waits_four_fifths_of_the_refill() {
        let (w, mtu, rtt) = (2_000_000u64, 1000u32, Duration::from_millis(50));
        let t0 = Duration::from_secs(1);
        let mut p = Pacer::new(rtt, w, mtu, t0);
        let n = p.capacity / u64::from(mtu);
        assert_eq!(n, 80, "2 MB per 50 ms = 80 kB per 2 ms");
        for _ in 0..n {
            assert_eq!(p.delay(rtt, 1000, mtu, w, t0), None);
            p.on_transmit(mtu);
        }
        assert_eq!(
            p.delay(rtt, 1000, mtu, w, t0),
            Some(t0 + Duration::from_micros(1600))
        );
        // After half that time, half the bucket has refilled (at 1.25 × the rate).
        assert_eq!(
            p.delay(rtt, 1000, mtu, w, t0 + Duration::from_micros(800)),
            None
        );
        assert_eq!(p.tokens, p.capacity / 2);
    }
}
