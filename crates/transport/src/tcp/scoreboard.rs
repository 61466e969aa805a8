//! The sender's scoreboard (RFC 6675 §3): every transmitted, not yet cumulatively acknowledged
//! segment in sequence order, with its SACK / lost / retransmitted state and the `pipe`
//! estimate kept up to date incrementally.
//!
//! Cost per ACK is O(log n) plus the segments whose state actually changes: loss marking and
//! the search for the next retransmission advance monotonic cursors instead of rescanning.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use crate::rate::TxState;

/// How many SACKed segments above a hole declare it lost (RFC 6675 DupThresh).
pub(crate) const DUP_THRESH: usize = 3;

/// One transmitted segment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentSeg {
    /// First sequence number.
    pub start: u64,
    /// Data bytes.
    pub len: u32,
    /// Carries the FIN (one more sequence number).
    pub fin: bool,
    /// First transmission time.
    pub first_sent: Duration,
    /// Latest transmission time.
    pub sent: Duration,
    /// Packet counter of the latest transmission (for HyStart++ rounds).
    pub pn: u64,
    /// Selectively acknowledged.
    pub sacked: bool,
    /// Declared lost and not retransmitted since (or retransmitted: see `retx_in_flight`).
    pub lost: bool,
    /// A retransmission of it is in flight.
    pub retx_in_flight: bool,
    /// Ever retransmitted (Karn's rule).
    pub retransmitted: bool,
    /// The rate sampler's snapshot at its latest transmission.
    pub tx: TxState,
}

impl SentSeg {
    /// Sequence number after the segment.
    pub(crate) fn end(&self) -> u64 {
        self.start + u64::from(self.len) + u64::from(self.fin)
    }

    /// Bytes it counts for in the window (a bare FIN counts as one).
    fn bytes(&self) -> u64 {
        u64::from(self.len).max(1)
    }

    /// RACK may still declare it lost: not SACKed, and not already lost and awaiting its
    /// retransmission (the segments `rack_detect_loss` examines).
    fn rack_candidate(&self) -> bool {
        !self.sacked && (!self.lost || self.retx_in_flight)
    }

    /// Its place in the RACK candidates' send order.
    fn rack_key(&self) -> (Duration, u64, u64) {
        (self.sent, self.end(), self.start)
    }

    /// Its contribution to `pipe` (RFC 6675 SetPipe: not SACKed and not lost counts once, a
    /// retransmission in flight counts once more).
    fn pipe(&self) -> u64 {
        if self.sacked {
            return 0;
        }
        let mut p = 0;
        if !self.lost {
            p += self.bytes();
        }
        if self.retx_in_flight {
            p += self.bytes();
        }
        p
    }
}

/// What the ACK processing learns about one newly delivered segment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Delivered {
    /// Sequence number after the segment (RACK orders deliveries by send time, then by it).
    pub end: u64,
    /// First transmission time (the controller's recovery logic keys on it).
    pub first_sent: Duration,
    /// Latest transmission time.
    pub sent: Duration,
    /// Data bytes.
    pub bytes: u64,
    /// Packet counter of its latest transmission.
    pub pn: u64,
    /// Ever retransmitted (no RTT sample).
    pub retransmitted: bool,
    /// The rate sampler's snapshot at its latest transmission.
    pub tx: TxState,
}

impl From<&SentSeg> for Delivered {
    fn from(s: &SentSeg) -> Self {
        Delivered {
            end: s.end(),
            first_sent: s.first_sent,
            sent: s.sent,
            bytes: s.bytes(),
            pn: s.pn,
            retransmitted: s.retransmitted,
            tx: s.tx,
        }
    }
}

/// Segments newly declared lost by one call.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Losses {
    /// How many.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Latest send time among them.
    pub newest_sent: Duration,
}

impl Losses {
    fn add(&mut self, s: &SentSeg) {
        self.count += 1;
        self.bytes += s.bytes();
        self.newest_sent = self.newest_sent.max(s.sent);
    }
}

/// The scoreboard.
#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<SentSeg>,
    pipe: u64,
    /// Start sequence numbers of the highest SACKed segments, highest first.
    top_sacked: [u64; DUP_THRESH],
    n_top: usize,
    /// Loss marking by SACK has covered everything below this.
    lost_scan: u64,
    /// No segment below this awaits retransmission.
    retx_cursor: u64,
    /// Segments SACKed and not yet cumulatively acknowledged (Linux's sacked_out).
    sacked_out: u64,
    /// The segments RACK may still declare lost ([`SentSeg::rack_candidate`]) in send order,
    /// as (latest transmission time, end sequence, start): RFC 8985's "sent after" order. Like
    /// Linux's tsorted list (SACKed segments leave it, a retransmission moves to its tail), it
    /// lets RACK examine just the segments sent before the RACK segment instead of walking
    /// the whole window on every ACK.
    rack_candidates: BTreeSet<(Duration, u64, u64)>,
    /// What each segment newly marked lost remembered of its sending, in marking order,
    /// until the sender passes it on to the controller ([`Scoreboard::drain_lost_tx`]).
    lost_tx: Vec<TxState>,
}

/// What RACK (RFC 8985 §6.2) needs to know to declare segments lost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RackState {
    /// Latest transmission time of the most recently sent segment delivered so far.
    pub xmit_time: Duration,
    /// Its end sequence number (breaks ties between segments sent at one instant).
    pub end_seq: u64,
    /// The RTT measured on it.
    pub rtt: Duration,
}

impl RackState {
    /// RFC 8985's "sent after": `t1`/`seq1` was sent after `t2`/`seq2`.
    pub(crate) fn sent_after(t1: Duration, seq1: u64, t2: Duration, seq2: u64) -> bool {
        t1 > t2 || (t1 == t2 && seq1 > seq2)
    }
}

impl Scoreboard {
    /// RFC 6675 `pipe`: bytes the sender believes are in the network.
    pub(crate) fn pipe(&self) -> u64 {
        self.pipe
    }

    /// The sending snapshots of the segments marked lost since the last call, oldest
    /// marking first.
    pub(crate) fn drain_lost_tx(&mut self) -> std::vec::Drain<'_, TxState> {
        self.lost_tx.drain(..)
    }

    /// No segment outstanding.
    pub(crate) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Segments SACKed above the cumulative ACK.
    pub(crate) fn sacked_out(&self) -> u64 {
        self.sacked_out
    }

    /// Outstanding segments (Linux's packets_out).
    pub(crate) fn len(&self) -> usize {
        self.segs.len()
    }

    /// The oldest outstanding segment: its start and latest transmission time.
    pub(crate) fn head(&self) -> Option<(u64, Duration)> {
        self.segs.front().map(|s| (s.start, s.sent))
    }

    /// The newest outstanding segment (start, data bytes, FIN), for a tail loss probe.
    pub(crate) fn last(&self) -> Option<(u64, u32, bool)> {
        self.segs.back().map(|s| (s.start, s.len, s.fin))
    }

    /// Records a first transmission (always above every outstanding segment).
    pub(crate) fn push(&mut self, seg: SentSeg) {
        self.pipe += seg.pipe();
        if seg.rack_candidate() {
            self.rack_candidates.insert(seg.rack_key());
        }
        self.segs.push_back(seg);
    }

    /// Index of the first segment ending after `seq`.
    fn index_after(&self, seq: u64) -> usize {
        self.segs.partition_point(|s| s.end() <= seq)
    }

    /// Applies a mutation to segment `i`, keeping `pipe` and the RACK candidates right.
    fn update(&mut self, i: usize, f: impl FnOnce(&mut SentSeg)) {
        if let Some(s) = self.segs.get_mut(i) {
            let before = s.pipe();
            let old_key = s.rack_candidate().then(|| s.rack_key());
            f(s);
            self.pipe = self.pipe - before + s.pipe();
            let new_key = s.rack_candidate().then(|| s.rack_key());
            if old_key != new_key {
                if let Some(k) = old_key {
                    self.rack_candidates.remove(&k);
                }
                if let Some(k) = new_key {
                    self.rack_candidates.insert(k);
                }
            }
        }
    }

    /// Removes every segment cumulatively acknowledged by `ack`; newly delivered ones (not
    /// SACKed before) go to `out`.
    pub(crate) fn cum_ack(&mut self, ack: u64, out: &mut Vec<Delivered>) {
        while let Some(s) = self.segs.front() {
            if s.end() > ack {
                break;
            }
            self.pipe -= s.pipe();
            if !s.sacked {
                out.push(Delivered::from(s));
            } else {
                self.sacked_out -= 1;
            }
            if s.rack_candidate() {
                self.rack_candidates.remove(&s.rack_key());
            }
            self.segs.pop_front();
        }
    }

    /// Marks segments fully inside `[l, r)` SACKed; newly SACKed ones go to `out`.
    pub(crate) fn sack(&mut self, l: u64, r: u64, out: &mut Vec<Delivered>) {
        let mut i = self.segs.partition_point(|s| s.start < l);
        while let Some(s) = self.segs.get(i) {
            if s.end() > r {
                break;
            }
            if !s.sacked {
                out.push(Delivered::from(s));
                let start = s.start;
                self.update(i, |s| {
                    s.sacked = true;
                    s.retx_in_flight = false;
                });
                self.sacked_out += 1;
                self.note_sacked(start);
            }
            i += 1;
        }
    }

    /// Keeps the DUP_THRESH highest SACKed starts.
    fn note_sacked(&mut self, start: u64) {
        let mut v = start;
        for k in 0..self.n_top {
            if v > self.top_sacked[k] {
                std::mem::swap(&mut v, &mut self.top_sacked[k]);
            }
        }
        if self.n_top < DUP_THRESH {
            self.top_sacked[self.n_top] = v;
            self.n_top += 1;
        }
    }

    /// RFC 6675 IsLost for every segment: a segment with DUP_THRESH SACKed segments above it
    /// is lost. The boundary only ever rises, so each segment is visited once.
    pub(crate) fn mark_lost_by_sack(&mut self) -> Losses {
        let mut losses = Losses::default();
        if self.n_top < DUP_THRESH {
            return losses;
        }
        let frontier = self.top_sacked[DUP_THRESH - 1];
        if frontier <= self.lost_scan {
            return losses;
        }
        let mut i = self.index_after(self.lost_scan);
        while let Some(s) = self.segs.get(i) {
            if s.start >= frontier {
                break;
            }
            if !s.sacked && !s.lost && !s.retx_in_flight {
                losses.add(s);
                self.lost_tx.push(s.tx);
                let start = s.start;
                self.update(i, |s| s.lost = true);
                self.retx_cursor = self.retx_cursor.min(start);
            }
            i += 1;
        }
        self.lost_scan = frontier;
        losses
    }

    /// RACK's loss detection (RFC 8985 §6.2, Linux's tcp_rack_detect_loss): a segment not
    /// SACKed, sent before the most recently sent delivered one, is lost once `rack.rtt +
    /// reo_wnd` has passed since its (latest) transmission; a retransmission can be lost too.
    /// Returns the losses and, if some segments are not yet due, the longest wait until one is
    /// (the reordering timer). Only the candidates (neither SACKed nor awaiting
    /// retransmission) sent before the RACK segment are examined, oldest transmission first.
    /// The outcome does not depend on the visiting order (losses add up, waits take their
    /// maximum), so it is the same as a walk over the whole window in sequence order.
    pub(crate) fn rack_detect_loss(
        &mut self,
        rack: &RackState,
        reo_wnd: Duration,
        now: Duration,
    ) -> (Losses, Option<Duration>) {
        let mut losses = Losses::default();
        let mut wait: Option<Duration> = None;
        let deadline = rack.rtt + reo_wnd;
        // Keys below (xmit_time, end_seq, 0) are exactly the segments RACK's was sent after
        // (the RACK segment itself, start ≥ 0, is not below).
        let limit = (rack.xmit_time, rack.end_seq, 0);
        let mut from = (Duration::ZERO, 0, 0);
        while let Some(&key) = self.rack_candidates.range(from..limit).next() {
            from = (key.0, key.1, key.2 + 1);
            let i = self.index_after(key.2);
            let s = self.segs[i];
            debug_assert!(s.rack_key() == key && s.rack_candidate());
            debug_assert!(RackState::sent_after(
                rack.xmit_time,
                rack.end_seq,
                s.sent,
                s.end()
            ));
            let elapsed = now.saturating_sub(s.sent);
            if elapsed >= deadline {
                losses.add(&s);
                self.lost_tx.push(s.tx);
                self.update(i, |s| {
                    s.lost = true;
                    s.retx_in_flight = false;
                });
                self.retx_cursor = self.retx_cursor.min(s.start);
            } else {
                let left = deadline - elapsed;
                wait = Some(wait.map_or(left, |w| w.max(left)));
            }
        }
        (losses, wait)
    }

    /// Retransmission timeout as Linux marks it (tcp_timeout_mark_lost): the head segment is
    /// lost, and so is every segment not SACKed, except (with RACK, `rack_rtt` known) those
    /// sent within the last RACK RTT, which may still be on their way. With `forget_sacks`
    /// (reneging) every segment is lost, SACKed ones included.
    pub(crate) fn timeout_mark_lost(
        &mut self,
        rack_rtt: Option<Duration>,
        now: Duration,
        forget_sacks: bool,
    ) -> u64 {
        let mut marked = 0;
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            let recent = rack_rtt.is_some_and(|rtt| now.saturating_sub(s.sent) < rtt);
            if !forget_sacks && i > 0 && recent {
                continue;
            }
            // Counted as Linux's tp->lost counts: segments not already awaiting retransmission.
            if (!s.lost || s.retx_in_flight) && (forget_sacks || !s.sacked) {
                marked += 1;
                self.lost_tx.push(s.tx);
            }
            self.update(i, |s| {
                if forget_sacks && s.sacked {
                    s.sacked = false;
                    s.retransmitted = true;
                }
                if !s.sacked {
                    s.lost = true;
                    s.retx_in_flight = false;
                }
            });
        }
        if forget_sacks {
            self.top_sacked = [0; DUP_THRESH];
            self.n_top = 0;
            self.sacked_out = 0;
        }
        self.retx_cursor = 0;
        marked
    }

    /// Declares the first outstanding segment lost (fast retransmit without SACK, NewReno
    /// partial ACKs); returns it unless it was already lost or SACKed.
    pub(crate) fn mark_first_lost(&mut self) -> Losses {
        let mut losses = Losses::default();
        if let Some(s) = self.segs.front() {
            // A segment waiting for its retransmission is already counted as lost.
            let awaiting_retransmission = s.lost && !s.retx_in_flight;
            if !s.sacked && !awaiting_retransmission {
                losses.add(s);
                self.lost_tx.push(s.tx);
                let start = s.start;
                self.update(0, |s| {
                    s.lost = true;
                    s.retx_in_flight = false;
                });
                self.retx_cursor = self.retx_cursor.min(start);
            }
        }
        losses
    }

    /// The oldest outstanding segment is SACKed: the cumulative ACK stopped at data the
    /// receiver had selectively acknowledged, so it discarded that data (SACK reneging, RFC
    /// 2018 §8). The SACK marks above `una` can no longer be trusted.
    pub(crate) fn head_sacked(&self) -> bool {
        self.segs.front().is_some_and(|s| s.sacked)
    }

    /// The lowest segment declared lost and not yet retransmitted (RFC 6675 NextSeg rule 1).
    pub(crate) fn next_lost(&mut self) -> Option<(u64, u32, bool)> {
        let mut i = self.index_after(self.retx_cursor);
        while let Some(s) = self.segs.get(i) {
            if s.lost && !s.retx_in_flight && !s.sacked {
                self.retx_cursor = s.start;
                return Some((s.start, s.len, s.fin));
            }
            if !s.lost && !s.sacked {
                // Lost segments form a prefix of the unSACKed ones; nothing lost lies beyond.
                self.retx_cursor = s.start;
                return None;
            }
            i += 1;
        }
        self.retx_cursor = self.segs.back().map_or(0, |s| s.end());
        None
    }

    /// Records the retransmission of the segment starting at `start`, with the rate
    /// sampler's snapshot at that moment.
    pub(crate) fn retransmitted(&mut self, start: u64, now: Duration, pn: u64, tx: TxState) {
        let i = self.index_after(start);
        if self.segs.get(i).is_some_and(|s| s.start == start) {
            self.update(i, |s| {
                s.retx_in_flight = true;
                s.retransmitted = true;
                s.sent = now;
                s.pn = pn;
                s.tx = tx;
            });
        }
    }

    /// Segments marked lost and neither SACKed nor acknowledged exist, retransmitted or not
    /// (Linux's lost_out > 0).
    pub(crate) fn has_lost(&self) -> bool {
        self.segs.iter().any(|s| s.lost && !s.sacked)
    }

    /// Lost segments not yet retransmitted exist (Linux's lost_out > retrans_out).
    pub(crate) fn has_lost_unretransmitted(&self) -> bool {
        // As `next_lost` walks: lost segments form a prefix of the unSACKed ones.
        for s in self.segs.iter().skip(self.index_after(self.retx_cursor)) {
            if s.lost && !s.retx_in_flight && !s.sacked {
                return true;
            }
            if !s.lost && !s.sacked {
                return false;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for k in 0..n {
            b.push(SentSeg {
                start: 1 + 100 * k,
                len: 100,
                fin: false,
                first_sent: Duration::from_millis(k),
                sent: Duration::from_millis(k),
                pn: k,
                sacked: false,
                lost: false,
                retx_in_flight: false,
                retransmitted: false,
                tx: TxState::default(),
            });
        }
        b
    }

    #[test]
    fn sack_marks_hole_lost_after_three_segments_above() {
        let mut b = board(6);
        let mut out = Vec::new();
        assert_eq!(b.pipe(), 600);
        // Segment 0 lost; 1 and 2 SACKed: not yet enough.
        b.sack(101, 301, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(b.mark_lost_by_sack().count, 0);
        b.sack(301, 401, &mut out);
        let l = b.mark_lost_by_sack();
        assert_eq!(l.count, 1);
        assert_eq!(b.pipe(), 200, "segments 4 and 5 remain in flight");
        assert_eq!(b.next_lost(), Some((1, 100, false)));
        b.retransmitted(1, Duration::from_millis(50), 6, TxState::default());
        assert_eq!(b.pipe(), 300);
        assert_eq!(b.next_lost(), None);
        out.clear();
        b.cum_ack(401, &mut out);
        assert_eq!(
            out.len(),
            1,
            "only the retransmitted hole is newly delivered"
        );
        assert!(out[0].retransmitted);
        assert_eq!(b.pipe(), 200);
    }

    #[test]
    fn reneging_timeout_forgets_sacks_and_their_stale_send_times() {
        let mut b = board(4);
        let mut out = Vec::new();
        b.sack(101, 401, &mut out);
        out.clear();
        b.cum_ack(101, &mut out);
        assert!(b.head_sacked(), "the cumulative ACK stopped at SACKed data");
        b.timeout_mark_lost(None, Duration::ZERO, true);
        assert!(!b.head_sacked());
        assert_eq!(
            b.next_lost(),
            Some((101, 100, false)),
            "the dropped data is resent"
        );
        // A SACK of a copy that arrived before the reneging gives no RTT sample.
        out.clear();
        b.sack(201, 301, &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].retransmitted);
    }

    #[test]
    fn rto_marks_everything_lost_and_pipe_empties() {
        let mut b = board(4);
        b.timeout_mark_lost(None, Duration::ZERO, false);
        assert_eq!(b.pipe(), 0);
        assert_eq!(b.next_lost(), Some((1, 100, false)));
        b.retransmitted(1, Duration::from_millis(9), 9, TxState::default());
        assert_eq!(b.next_lost(), Some((101, 100, false)));
        assert_eq!(b.pipe(), 100);
        let l = b.mark_first_lost();
        assert_eq!(
            l.count, 1,
            "a retransmission in flight can be declared lost again"
        );
        assert_eq!(b.pipe(), 0);
    }
}
