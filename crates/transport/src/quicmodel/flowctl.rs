//! Receive-side flow-control credit (RFC 9000 §4): one [`RecvWindow`] per receive stream and one
//! for the connection, each granting credit by one of the two update policies, with optional
//! auto-tuning.
//!
//! - `threshold`: an update is due once the application has consumed `fc_threshold` of the
//!   window since the last advertised limit (the new limit is always consumed + window); with
//!   `fc_immediate` it goes out in a packet of its own, otherwise on the next packet sent anyway.
//! - `every-ack` (ModQUIC): each ACK frame carries fresh MAX_DATA / MAX_STREAM_DATA whenever the
//!   limit can advance.
//! - auto-tuning: when a window's worth of data was consumed in less than two smoothed RTTs,
//!   the window doubles, up to 16× its initial size.

use std::time::Duration;

use super::knobs::FcUpdate;

/// Largest auto-tuned window as a multiple of the initial one.
pub(crate) const AUTOTUNE_MAX_FACTOR: u64 = 16;

/// How credit is granted (from the knobs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FcPolicy {
    /// Update policy.
    pub update: FcUpdate,
    /// threshold: fraction of the window.
    pub threshold: f64,
    /// threshold: send at once.
    pub immediate: bool,
    /// Auto-tuning on.
    pub autotune: bool,
}

/// One receive window (a stream's or the connection's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvWindow {
    initial: u64,
    /// Window kept open ahead of the consumed offset.
    pub window: u64,
    /// Limit advertised last (the peer may send up to here).
    pub advertised: u64,
    /// Bytes the application consumed.
    pub consumed: u64,
    /// An update is due (threshold policy).
    pub due: bool,
    epoch_at: Duration,
    epoch_consumed: u64,
}

impl RecvWindow {
    /// A window of `initial` bytes, advertised in the transport parameters.
    pub(crate) fn new(initial: u64, now: Duration) -> RecvWindow {
        RecvWindow {
            initial,
            window: initial,
            advertised: initial,
            consumed: 0,
            due: false,
            epoch_at: now,
            epoch_consumed: 0,
        }
    }

    /// The application consumed `n` more bytes at `now`.
    pub(crate) fn on_consumed(&mut self, n: u64, now: Duration, srtt: Duration, p: &FcPolicy) {
        if n == 0 {
            return;
        }
        self.consumed += n;
        if p.autotune && self.consumed - self.epoch_consumed >= self.window {
            if now.saturating_sub(self.epoch_at) < srtt * 2 {
                self.window = self
                    .window
                    .saturating_mul(2)
                    .min(self.initial.saturating_mul(AUTOTUNE_MAX_FACTOR));
            }
            self.epoch_at = now;
            self.epoch_consumed = self.consumed;
        }
        if p.update == FcUpdate::Threshold {
            let open = self
                .consumed
                .saturating_add(self.window)
                .saturating_sub(self.advertised);
            if open as f64 >= p.threshold * self.window as f64 {
                self.due = true;
            }
        }
    }

    /// The limit could advance.
    pub(crate) fn can_advance(&self) -> bool {
        self.consumed.saturating_add(self.window) > self.advertised
    }

    /// Takes the new limit for a MAX_* frame.
    pub(crate) fn take(&mut self) -> u64 {
        self.advertised = self
            .advertised
            .max(self.consumed.saturating_add(self.window));
        self.due = false;
        self.advertised
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(update: FcUpdate, autotune: bool) -> FcPolicy {
        FcPolicy {
            update,
            threshold: 0.5,
            immediate: true,
            autotune,
        }
    }

    #[test]
    fn threshold_due_after_the_fraction() {
        let p = policy(FcUpdate::Threshold, false);
        let mut w = RecvWindow::new(1000, Duration::ZERO);
        w.on_consumed(499, Duration::ZERO, Duration::from_millis(10), &p);
        assert!(!w.due);
        w.on_consumed(1, Duration::ZERO, Duration::from_millis(10), &p);
        assert!(w.due);
        assert_eq!(w.take(), 1500);
        assert!(!w.due);
        let e = policy(FcUpdate::EveryAck, false);
        w.on_consumed(10, Duration::ZERO, Duration::from_millis(10), &e);
        assert!(!w.due && w.can_advance());
    }

    #[test]
    fn autotuning_doubles_up_to_sixteen_times() {
        let p = policy(FcUpdate::Threshold, true);
        let mut w = RecvWindow::new(1000, Duration::ZERO);
        let mut t = Duration::ZERO;
        for _ in 0..100 {
            t += Duration::from_millis(1);
            w.on_consumed(w.window, t, Duration::from_millis(10), &p);
        }
        assert_eq!(w.window, 16_000);
        let mut slow = RecvWindow::new(1000, Duration::ZERO);
        slow.on_consumed(
            1000,
            Duration::from_millis(30),
            Duration::from_millis(10),
            &p,
        );
        assert_eq!(slow.window, 1000, "consumed over three RTTs: no growth");
    }
}
