//! The receiver side of one packet-number space: which packet numbers arrived, and when to
//! acknowledge them (RFC 9000 §13.2 with the model's knobs).
//!
//! Policy, for the Data space: an ACK goes out at once when `ratio` ack-eliciting packets are
//! unacknowledged (the receiver's `receiver_ack_ratio`, or `threshold + 1` from the newest
//! ACK_FREQUENCY frame), when an ack-eliciting packet arrives out of order or fills a gap
//! (`ack_on_reorder`; with an ACK_FREQUENCY frame its reordering threshold: 0 never, 1 on any
//! gap, n ≥ 2 only when the gap lets the sender declare a loss, the draft's and quinn's rule),
//! or when it carries the I-bit (`ibit`); otherwise the ACK timer
//! (`ack_delay`, or the ACK_FREQUENCY frame's max ack delay) fires at most that late after the
//! first unacknowledged ack-eliciting packet. Initial and Handshake packets are acknowledged at
//! once. Non-ack-eliciting packets never trigger an ACK; with `bundle_acks` an ACK frame for
//! them rides on an ack-eliciting packet the receiver sends anyway.

use std::time::Duration;

use super::ranges::RangeSet;
use super::wire::{Ack, MAX_ACK_RANGES};

/// When the receiver acknowledges (the Data space's knobs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AckPolicy {
    /// ACK after this many ack-eliciting packets.
    pub ratio: u32,
    /// ACK timer.
    pub delay: Duration,
    /// Reordering threshold: 0 never ACK at once on reordering, 1 on any gap (RFC 9000
    /// §13.2.1), n ≥ 2 when the gap is n or more packets below the largest (ACK-frequency draft).
    pub reorder: u8,
    /// ACK at once on an I-bit packet.
    pub ibit: bool,
    /// Bundle ACKs of non-ack-eliciting packets.
    pub bundle: bool,
}

/// Receive state of one space.
#[derive(Debug, Default)]
pub(crate) struct AckState {
    /// Received packet numbers not yet known to be acknowledged by the peer.
    ranges: RangeSet,
    /// Largest packet number received and when.
    largest: Option<(u64, Duration)>,
    /// Ack-eliciting packets since the last ACK frame.
    pub eliciting_unacked: u32,
    /// Non-ack-eliciting packets since the last ACK frame.
    non_eliciting_unacked: bool,
    /// An ACK must go out now.
    pub immediate: bool,
    /// The ACK timer.
    pub deadline: Option<Duration>,
    /// Every packet number ever received below this is in `seen_below` or `ranges` (for
    /// duplicate detection after ranges were forgotten).
    forgotten_below: u64,
    /// Largest ack-eliciting packet number received.
    largest_eliciting: Option<u64>,
    /// Largest ack-eliciting packet number when the last ACK frame was sent.
    largest_reported: Option<u64>,
}

/// What the receiver learnt from one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// A new packet.
    New,
    /// Already received (or too old to tell): drop it.
    Duplicate,
}

impl AckState {
    /// Records packet `pn` arriving at `now`; `immediate_space`: Initial/Handshake (ACK at once).
    pub(crate) fn on_packet(
        &mut self,
        pn: u64,
        ack_eliciting: bool,
        ibit: bool,
        now: Duration,
        policy: &AckPolicy,
        immediate_space: bool,
    ) -> Arrival {
        if pn < self.forgotten_below || self.ranges.contains(pn) {
            return Arrival::Duplicate;
        }
        let reordered = match self.largest {
            Some((l, _)) => pn < l || pn > l + 1,
            None => pn > 0,
        };
        self.ranges.insert(pn, pn + 1);
        if self.ranges.len() > MAX_ACK_RANGES {
            self.ranges.keep_highest(MAX_ACK_RANGES);
            if let Some(&(s, _)) = self.ranges.iter().next() {
                self.forgotten_below = self.forgotten_below.max(s);
            }
        }
        if self.largest.is_none_or(|(l, _)| pn > l) {
            self.largest = Some((pn, now));
        }
        if !ack_eliciting {
            self.non_eliciting_unacked = true;
            return Arrival::New;
        }
        self.largest_eliciting = Some(self.largest_eliciting.map_or(pn, |l| l.max(pn)));
        self.eliciting_unacked += 1;
        let reorder = match policy.reorder {
            0 => false,
            1 => reordered,
            n => self.gap_reveals_loss(u64::from(n)),
        };
        if immediate_space
            || reorder
            || (policy.ibit && ibit)
            || self.eliciting_unacked >= policy.ratio.max(1)
        {
            self.immediate = true;
        } else if self.deadline.is_none() {
            self.deadline = Some(now + policy.delay);
        }
        Arrival::New
    }

    /// The draft's rule for a reordering threshold `n` ≥ 2: ACK at once if a packet missing
    /// since the last ACK is `n` or more below the largest ack-eliciting one, so the ACK lets the
    /// sender declare it lost.
    fn gap_reveals_loss(&self, n: u64) -> bool {
        let (Some(reported), Some(largest)) = (self.largest_reported, self.largest_eliciting)
        else {
            return false;
        };
        if n > reported {
            return false;
        }
        let from = reported - n + 1;
        match self.ranges.first_gap(from, largest + 1) {
            Some((missing, _)) => largest - missing >= n,
            None => false,
        }
    }

    /// Already received, or older than the ranges still remembered.
    pub(crate) fn seen(&self, pn: u64) -> bool {
        pn < self.forgotten_below || self.ranges.contains(pn)
    }

    /// The ACK timer fired.
    pub(crate) fn on_timer(&mut self, now: Duration) {
        if self.deadline.is_some_and(|d| d <= now) {
            self.deadline = None;
            if self.eliciting_unacked > 0 {
                self.immediate = true;
            }
        }
    }

    /// An ACK frame must be sent now.
    pub(crate) fn must_send(&self) -> bool {
        self.immediate
    }

    /// An ACK frame may ride on an ack-eliciting packet sent anyway.
    pub(crate) fn may_bundle(&self, bundle: bool) -> bool {
        self.eliciting_unacked > 0 || (bundle && self.non_eliciting_unacked)
    }

    /// Builds the ACK frame for `now` (delay in units of 8 µs) and resets the triggers.
    pub(crate) fn take_ack(&mut self, now: Duration) -> Option<Ack> {
        let (largest, at) = self.largest?;
        let delay = u64::try_from(now.saturating_sub(at).as_micros() >> 3).unwrap_or(u64::MAX);
        let mut a = Ack::new(largest, delay);
        for &(s, e) in self.ranges.iter().rev() {
            if !a.push(s, e - 1) {
                break;
            }
        }
        if a.count() == 0 {
            return None;
        }
        self.eliciting_unacked = 0;
        self.non_eliciting_unacked = false;
        self.immediate = false;
        self.deadline = None;
        self.largest_reported = self.largest_eliciting;
        Some(a)
    }

    /// The peer acknowledged a packet whose ACK frame covered up to `largest`: those packet
    /// numbers need not be acknowledged again (quinn: pending_acks.subtract_below).
    pub(crate) fn peer_saw_ack_up_to(&mut self, largest: u64) {
        // Keep the largest so the next ACK frame still names it.
        if self.ranges.max_end().is_some_and(|e| e > largest + 1) {
            self.ranges.remove_below(largest + 1);
            self.forgotten_below = self.forgotten_below.max(largest + 1);
        }
    }

    /// Anything received at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.largest.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(ratio: u32) -> AckPolicy {
        AckPolicy {
            ratio,
            delay: Duration::from_millis(25),
            reorder: 1,
            ibit: true,
            bundle: false,
        }
    }

    #[test]
    fn ratio_timer_reorder_and_ibit() {
        let t = Duration::from_millis(1);
        let mut a = AckState::default();
        let p = policy(3);
        a.on_packet(0, true, false, t, &p, false);
        a.on_packet(1, true, false, t, &p, false);
        assert!(!a.must_send());
        assert_eq!(a.deadline, Some(t + Duration::from_millis(25)));
        a.on_packet(2, true, false, t, &p, false);
        assert!(a.must_send());
        let ack = a.take_ack(t).unwrap();
        assert_eq!(ack.ranges().collect::<Vec<_>>(), vec![(0, 2)]);
        // A gap: at once.
        a.on_packet(4, true, false, t, &p, false);
        assert!(a.must_send());
        let ack = a.take_ack(t + Duration::from_micros(80)).unwrap();
        assert_eq!(ack.ranges().collect::<Vec<_>>(), vec![(4, 4), (0, 2)]);
        assert_eq!(ack.delay, 10);
        // The I-bit: at once.
        a.on_packet(5, true, true, t, &p, false);
        assert!(a.must_send());
        a.take_ack(t);
        assert_eq!(
            a.on_packet(5, true, false, t, &p, false),
            Arrival::Duplicate
        );
        // The timer.
        a.on_packet(6, true, false, t, &p, false);
        a.on_timer(t + Duration::from_millis(25));
        assert!(a.must_send());
        a.peer_saw_ack_up_to(4);
        let ack = a.take_ack(t).unwrap();
        assert_eq!(ack.ranges().collect::<Vec<_>>(), vec![(5, 6)]);
    }

    #[test]
    fn reordering_threshold_two_waits_until_a_loss_can_be_declared() {
        let t = Duration::from_millis(1);
        let mut p = policy(10);
        p.reorder = 2;
        p.ibit = false;
        let mut a = AckState::default();
        for pn in 0..3 {
            a.on_packet(pn, true, false, t, &p, false);
        }
        a.take_ack(t);
        // 3 is missing: 4 alone is not enough (4 − 3 < 2), 5 is.
        a.on_packet(4, true, false, t, &p, false);
        assert!(!a.must_send());
        a.on_packet(5, true, false, t, &p, false);
        assert!(a.must_send());
        let mut q = policy(10);
        q.reorder = 0;
        let mut b = AckState::default();
        b.on_packet(0, true, false, t, &q, false);
        b.on_packet(5, true, false, t, &q, false);
        assert!(!b.must_send(), "threshold 0: never at once");
    }
}
