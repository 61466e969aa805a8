//! The recovery period of RFC 9002 §7.3.2, keyed on packet send times.

use std::time::Duration;

/// Tracks when the current recovery period started and whether it is still running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Recovery {
    start: Option<Duration>,
    active: bool,
}

impl Recovery {
    /// True if a packet sent at `sent` belongs to the current (or last) recovery period, so a
    /// loss of it must not reduce the window again and its ACK must not grow it.
    pub(crate) fn covers(&self, sent: Duration) -> bool {
        self.start.is_some_and(|start| sent <= start)
    }

    /// Starts a recovery period at `now`.
    pub(crate) fn enter(&mut self, now: Duration) {
        self.start = Some(now);
        self.active = true;
    }

    /// Forgets the recovery period (persistent congestion), so any later loss reduces again.
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }

    /// Handles the ACK of a packet sent at `sent`; returns whether it may grow the window.
    /// Acknowledging a packet sent after the period started ends the period.
    pub(crate) fn on_ack(&mut self, sent: Duration) -> bool {
        if self.covers(sent) {
            return false;
        }
        self.active = false;
        true
    }

    /// True between a congestion event and the ACK of a packet sent after it.
    pub(crate) fn active(&self) -> bool {
        self.active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn period_ends_only_on_ack_of_packet_sent_after_it_started() {
        let mut r = Recovery::default();
        assert!(!r.covers(MS));
        r.enter(10 * MS);
        assert!(r.active());
        assert!(
            r.covers(10 * MS),
            "sent at the start instant belongs to the old window"
        );
        assert!(!r.on_ack(5 * MS));
        assert!(r.active());
        assert!(r.on_ack(11 * MS));
        assert!(!r.active());
        assert!(
            r.covers(9 * MS),
            "the start time is kept after the period ends"
        );
        r.reset();
        assert!(!r.covers(9 * MS));
    }
}
