//! The sending half of a TCP endpoint: what to send next (RFC 6675 NextSeg, then new data
//! within min(cwnd, peer window, send buffer)), ACK processing (RTT samples, controller
//! callbacks), loss detection (SACK scoreboard per RFC 6675, or three duplicate ACKs with
//! NewReno partial-ACK recovery per RFC 6582), the retransmission timer (RFC 6298) and the
//! persist timer (RFC 9293 §3.8.6.1): while the peer's window is zero and nothing is in flight,
//! zero-window probes go out with the RTO's backoff. Probes are Linux's (tcp_xmit_probe_skb):
//! a bare ACK one byte below `una`, which the peer must answer with its window; they are not
//! data, so they are neither losses nor a congestion signal.
//!
//! SACK reneging (a receiver dropping data it SACKed; the model's receiver does so beyond its
//! out-of-order range limit) is handled like Linux: a cumulative ACK that stops at a SACKed
//! segment arms a short timeout, and that timeout forgets every SACK mark, since SACKed
//! segments are otherwise never resent.
//!
//! The congestion controller is the shared `cc` crate. It has no RTO callback, so a timeout is
//! reported as `on_congestion_event(persistent_congestion = true)`: the window collapses to the
//! controller's minimum window (2 MSS by default, 1 MSS with `minimum_window_packets = 1`,
//! Linux's loss window) and slow start restarts.

use std::time::Duration;

use cc::CongestionController;

use super::rtt::RttEstimator;
use super::scoreboard::{Delivered, Losses, Scoreboard, SentSeg, DUP_THRESH};
use super::segment::SEQ_LIMIT;
use super::Params;

/// Shortest wait before a timeout repairs SACK reneging (Linux: 10 ms).
const RENEGING_DELAY: Duration = Duration::from_millis(10);

/// The next segment the sender wants on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outgoing {
    /// First sequence number.
    pub seq: u64,
    /// Data bytes.
    pub len: u32,
    /// Carries the FIN.
    pub fin: bool,
    /// A retransmission.
    pub retransmission: bool,
}

/// The parts of an incoming segment the sender uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AckInfo<'a> {
    /// Cumulative ACK.
    pub ack: u64,
    /// Window in bytes from `ack`.
    pub window: u64,
    /// SACK blocks.
    pub sacks: &'a [(u64, u64)],
    /// TSecr, if timestamps are on.
    pub ts_ecr: Option<u64>,
    /// Counts as a duplicate ACK if it does not advance (no data, no SYN/FIN).
    pub pure: bool,
}

/// Counters of one sender.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SenderStats {
    /// Segments with data sent, retransmissions included.
    pub data_segments: u64,
    /// Retransmitted segments.
    pub retransmissions: u64,
    /// Fast-recovery episodes plus retransmission timeouts (the first for each `una`).
    pub congestion_events: u64,
    /// Time of the first congestion event.
    pub first_congestion: Option<Duration>,
    /// Zero-window probes sent.
    pub probes: u64,
}

/// Sender state.
#[derive(Debug)]
pub(crate) struct Sender {
    mss: u32,
    sack: bool,
    send_buffer: u64,
    max_backoffs: u32,
    una: u64,
    nxt: u64,
    /// Sequence number after the last byte the application wrote.
    stream_end: u64,
    fin_queued: bool,
    /// Right edge of the peer's receive window.
    peer_edge: u64,
    board: Scoreboard,
    cc: Box<dyn CongestionController>,
    rtt: RttEstimator,
    pn: u64,
    /// In fast recovery until `una` reaches this (RFC 6675 RecoveryPoint).
    recovery: Option<u64>,
    /// RFC 6582 `recover`: no new fast retransmit until `una` passes it.
    recover: u64,
    /// After a timeout, retransmissions go back to `una` until it reaches this (Linux's
    /// Loss state); no fast recovery meanwhile.
    loss_until: u64,
    /// Duplicate ACKs (without SACK; each one stands for a segment that left the network).
    dupacks: u64,
    rto_deadline: Option<Duration>,
    backoff: u32,
    /// Persist timer: runs only while data waits for a zero window with nothing in flight.
    persist_deadline: Option<Duration>,
    persist_backoff: u32,
    /// Probes sent since the peer last answered anything.
    probes_unanswered: u32,
    probe_pending: bool,
    /// The last send attempt stopped because of the congestion window.
    cwnd_limited: bool,
    /// Reused buffer of newly delivered segments.
    delivered: Vec<Delivered>,
    stats: SenderStats,
}

impl Sender {
    /// A sender whose first data byte has sequence number 1 (the SYN took 0).
    pub(crate) fn new(p: &Params, now: Duration) -> Self {
        Sender {
            mss: p.mss,
            sack: p.knobs.sack,
            send_buffer: p.knobs.send_buffer,
            max_backoffs: p.max_backoffs,
            una: 1,
            nxt: 1,
            stream_end: 1,
            fin_queued: false,
            peer_edge: 1,
            board: Scoreboard::default(),
            cc: cc::build(&p.controller, u64::from(p.mss), now),
            rtt: RttEstimator::new(p.knobs.initial_rto, p.knobs.min_rto),
            pn: 0,
            recovery: None,
            recover: 0,
            loss_until: 0,
            dupacks: 0,
            rto_deadline: None,
            backoff: 0,
            persist_deadline: None,
            persist_backoff: 0,
            probes_unanswered: 0,
            probe_pending: false,
            cwnd_limited: false,
            delivered: Vec::new(),
            stats: SenderStats::default(),
        }
    }

    /// Counters so far.
    pub(crate) fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Congestion window in bytes.
    pub(crate) fn cwnd(&self) -> u64 {
        self.cc.window()
    }

    /// RFC 6675 pipe.
    pub(crate) fn in_flight(&self) -> u64 {
        self.board.pipe()
    }

    /// Smoothed RTT.
    pub(crate) fn srtt(&self) -> Duration {
        self.rtt.smoothed()
    }

    /// Handshake RTT sample (SYN → SYN-ACK, or SYN-ACK → ACK).
    pub(crate) fn on_handshake_rtt(&mut self, sample: Duration) {
        self.rtt.on_sample(sample);
    }

    /// The peer's window from its SYN (unscaled, relative to our first data byte).
    pub(crate) fn set_peer_window(&mut self, window: u64) {
        self.peer_edge = self.una + window;
    }

    /// The application appends `n` bytes (saturating: a bulk sender writes "infinitely").
    pub(crate) fn write(&mut self, n: u64) {
        if !self.fin_queued {
            self.stream_end = self.stream_end.saturating_add(n).min(SEQ_LIMIT / 2);
        }
    }

    /// The application closes: a FIN follows the last byte.
    pub(crate) fn close(&mut self) {
        self.fin_queued = true;
    }

    /// Next sequence number of new data.
    pub(crate) fn snd_nxt(&self) -> u64 {
        self.nxt
    }

    /// Oldest unacknowledged sequence number.
    pub(crate) fn snd_una(&self) -> u64 {
        self.una
    }

    /// Data bytes the peer has acknowledged (the SYN and a FIN are not data).
    pub(crate) fn acked_bytes(&self) -> u64 {
        self.una.min(self.stream_end).saturating_sub(1)
    }

    /// Retransmission or persist timer deadline (never both: one needs data in flight, the
    /// other none).
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.rto_deadline.or(self.persist_deadline)
    }

    /// A zero-window probe is due; taking it clears the request.
    pub(crate) fn take_probe(&mut self) -> bool {
        let due = std::mem::take(&mut self.probe_pending);
        if due {
            self.stats.probes += 1;
        }
        due
    }

    /// Arms the persist timer when new data waits for a zero window with nothing in flight
    /// (no ACK will come to reopen it otherwise), and stops it when the window opens.
    fn update_persist(&mut self, now: Duration) {
        let limit = self
            .stream_end
            .min(self.una.saturating_add(self.send_buffer));
        let closed = self.peer_edge <= self.nxt;
        if !closed {
            self.persist_deadline = None;
            self.persist_backoff = 0;
            self.probe_pending = false;
        } else if self.nxt < limit && self.board.is_empty() {
            if self.persist_deadline.is_none() {
                self.persist_deadline = Some(now + self.rtt.backed_off(self.persist_backoff));
            }
        } else {
            self.persist_deadline = None;
        }
    }

    fn pipe(&self) -> u64 {
        if self.sack {
            self.board.pipe()
        } else {
            // Linux without SACK counts each duplicate ACK as one segment that left.
            self.board
                .pipe()
                .saturating_sub(self.dupacks * u64::from(self.mss))
        }
    }

    fn next_pn(&mut self) -> u64 {
        let pn = self.pn;
        self.pn += 1;
        pn
    }

    fn arm_rto(&mut self, now: Duration) {
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
        }
    }

    /// The next segment to send now, if the windows allow one.
    pub(crate) fn next(&mut self, now: Duration) -> Option<Outgoing> {
        let out = self.next_segment(now);
        if out.is_none() {
            self.update_persist(now);
        }
        out
    }

    fn next_segment(&mut self, now: Duration) -> Option<Outgoing> {
        let cwnd = self.cc.window();
        let pipe = self.pipe();
        if let Some((seq, len, fin)) = self.board.next_lost() {
            let bytes = u64::from(len).max(1);
            // `pipe > 0`: an empty network always takes one segment, whatever the window.
            if pipe > 0 && pipe.saturating_add(bytes) > cwnd {
                self.cwnd_limited = true;
                return None;
            }
            let pn = self.next_pn();
            self.board.retransmitted(seq, now, pn);
            self.cc.on_sent(now, bytes, pn);
            self.stats.retransmissions += 1;
            if len > 0 {
                self.stats.data_segments += 1;
            }
            self.arm_rto(now);
            return Some(Outgoing {
                seq,
                len,
                fin,
                retransmission: true,
            });
        }
        let edge = self
            .stream_end
            .min(self.una.saturating_add(self.send_buffer))
            .min(self.peer_edge);
        if self.nxt < edge {
            let len = (edge - self.nxt).min(u64::from(self.mss));
            if len < u64::from(self.mss) && edge < self.stream_end && pipe > 0 {
                // Silly-window avoidance: a runt limited by a window waits for the window.
                self.cwnd_limited = false;
                return None;
            }
            if pipe > 0 && pipe + len > cwnd {
                self.cwnd_limited = true;
                return None;
            }
            let fin = self.fin_queued && self.nxt + len == self.stream_end;
            return Some(self.send_new(now, len as u32, fin));
        }
        self.cwnd_limited = false;
        if self.fin_queued && self.nxt == self.stream_end {
            return Some(self.send_new(now, 0, true));
        }
        None
    }

    fn send_new(&mut self, now: Duration, len: u32, fin: bool) -> Outgoing {
        let pn = self.next_pn();
        let seg = SentSeg {
            start: self.nxt,
            len,
            fin,
            first_sent: now,
            sent: now,
            pn,
            sacked: false,
            lost: false,
            retx_in_flight: false,
            retransmitted: false,
        };
        self.nxt = seg.end();
        self.board.push(seg);
        self.cc.on_sent(now, u64::from(len).max(1), pn);
        if len > 0 {
            self.stats.data_segments += 1;
        }
        self.arm_rto(now);
        Outgoing {
            seq: seg.start,
            len,
            fin,
            retransmission: false,
        }
    }

    /// Processes the acknowledgement fields of an incoming segment.
    pub(crate) fn on_ack(&mut self, a: AckInfo<'_>, now: Duration) {
        if a.ack > self.nxt || a.ack < self.una {
            // Acknowledges data never sent, or an old ACK overtaken by newer ones.
            return;
        }
        // The peer is alive: probes it answers never add up to a give-up.
        self.probes_unanswered = 0;
        self.peer_edge = self.peer_edge.max(a.ack.saturating_add(a.window));
        let mut delivered = std::mem::take(&mut self.delivered);
        delivered.clear();
        if self.sack {
            for &(l, r) in a.sacks {
                let (l, r) = (l.max(a.ack), r.min(self.nxt));
                if l < r {
                    self.board.sack(l, r, &mut delivered);
                }
            }
        }
        let sacked = delivered.len();
        let advanced = a.ack > self.una;
        if advanced {
            self.board.cum_ack(a.ack, &mut delivered);
            self.una = a.ack;
        }
        let cum_acked = (delivered.len() - sacked) as u64;
        self.rtt_sample(&delivered, advanced, a.ts_ecr, now);
        self.feed_controller(&delivered, now);
        self.delivered = delivered;

        if advanced {
            self.backoff = 0;
            self.rto_deadline = None;
            if self.sack && self.board.head_sacked() {
                // SACK reneging: the receiver dropped data it had SACKed, and since no SACKed
                // segment is ever resent, only a timeout that forgets the SACKs can repair it.
                // Like Linux (tcp_check_sack_reneging), give the receiver max(srtt / 2, 10 ms)
                // rather than a full RTO.
                let delay = (self.rtt.smoothed() / 2).max(RENEGING_DELAY);
                self.rto_deadline = Some(now + delay);
            } else if !self.board.is_empty() {
                self.arm_rto(now);
            }
        }
        match self.recovery {
            Some(point) if advanced && self.una >= point => {
                self.recovery = None;
                self.dupacks = 0;
            }
            Some(_) if advanced && !self.sack => {
                // NewReno partial ACK: the next hole is lost too; retransmit it at once.
                self.dupacks = self.dupacks.saturating_sub(cum_acked.saturating_sub(1));
                self.board.mark_first_lost();
            }
            None if advanced && !self.sack => self.dupacks = 0,
            _ => {}
        }
        if self.sack {
            let losses = self.board.mark_lost_by_sack();
            if losses.count > 0 {
                self.on_losses(losses, now);
            }
        } else if !advanced && a.pure && !self.board.is_empty() {
            self.dupacks += 1;
            let fresh = self.una > self.recover && self.una >= self.loss_until;
            if self.recovery.is_none() && self.dupacks == DUP_THRESH as u64 && fresh {
                let losses = self.board.mark_first_lost();
                self.on_losses(losses, now);
            }
        }
        self.update_persist(now);
    }

    /// RFC 6298 sampling: the newest newly delivered segment never retransmitted (Karn);
    /// with timestamps, TSecr also times ACKs of retransmissions.
    fn rtt_sample(
        &mut self,
        delivered: &[Delivered],
        advanced: bool,
        ts_ecr: Option<u64>,
        now: Duration,
    ) {
        let newest = delivered
            .iter()
            .filter(|d| !d.retransmitted)
            .map(|d| d.sent)
            .max();
        let sample = match (newest, ts_ecr) {
            (Some(sent), _) => Some(now.saturating_sub(sent)),
            (None, Some(ecr)) if advanced && ecr > 0 => {
                let ecr = Duration::from_micros(ecr);
                (ecr <= now).then(|| now - ecr)
            }
            _ => None,
        };
        if let Some(s) = sample {
            self.rtt.on_sample(s);
        }
    }

    fn feed_controller(&mut self, delivered: &[Delivered], now: Duration) {
        if delivered.is_empty() {
            return;
        }
        let app_limited = !self.cwnd_limited;
        let rtt = self.rtt.sample();
        let mut largest = 0;
        for d in delivered {
            // The first transmission time keeps the controller in recovery until data sent
            // after the loss is acknowledged, like TCP's RecoveryPoint.
            self.cc
                .on_ack(now, d.first_sent, d.bytes, app_limited, &rtt);
            largest = largest.max(d.pn);
        }
        self.cc
            .on_end_acks(now, self.board.pipe(), app_limited, Some(largest));
    }

    /// Newly detected losses: one congestion event per recovery episode.
    fn on_losses(&mut self, losses: Losses, now: Duration) {
        if losses.count == 0 || self.recovery.is_some() || self.una < self.loss_until {
            return;
        }
        self.recovery = Some(self.nxt);
        self.recover = self.nxt.saturating_sub(1);
        self.cc
            .on_congestion_event(now, losses.newest_sent, false, losses.bytes);
        self.count_event(now);
    }

    fn count_event(&mut self, now: Duration) {
        self.stats.congestion_events += 1;
        self.stats.first_congestion.get_or_insert(now);
    }

    /// The retransmission or persist timer fired. Returns false once the retry limit is
    /// exceeded (RTO backoffs, or probes the peer never answered).
    pub(crate) fn on_timeout(&mut self, now: Duration) -> bool {
        if self.persist_deadline.is_some_and(|t| t <= now) {
            self.persist_deadline = None;
            self.probes_unanswered += 1;
            if self.probes_unanswered > self.max_backoffs {
                return false;
            }
            self.probe_pending = true;
            self.persist_backoff = self.persist_backoff.saturating_add(1);
            self.persist_deadline = Some(now + self.rtt.backed_off(self.persist_backoff));
            return true;
        }
        if self.rto_deadline.is_none_or(|t| t > now) {
            return true;
        }
        self.rto_deadline = None;
        if self.board.is_empty() {
            return true;
        }
        self.backoff += 1;
        if self.backoff > self.max_backoffs {
            return false;
        }
        if self.backoff == 1 {
            // The first timeout since the cumulative ACK last advanced: a new congestion
            // signal even inside the Loss state of an earlier timeout (a retransmission of it
            // was lost), so the window collapses to the loss window again (RFC 5681 §3.1,
            // Linux's tcp_enter_loss with icsk_retransmits reset by the advance). Repeated
            // backoffs for the same `una` keep the ssthresh the first one set (RFC 5681 §3.1);
            // the controller has no collapse without a reduction, so they leave the window
            // where the SACKs since the first timeout grew it (usually still near LW).
            self.cc
                .on_congestion_event(now, self.board.newest_sent(), true, self.board.pipe());
            self.count_event(now);
        }
        // The head is SACKed only if the receiver reneged (see `on_ack`).
        let reneged = self.sack && self.board.head_sacked();
        self.board.mark_all_lost(reneged);
        self.recovery = None;
        self.dupacks = 0;
        self.loss_until = self.nxt;
        self.recover = self.nxt.saturating_sub(1);
        self.arm_rto(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::tests_support::params;

    const MS: Duration = Duration::from_millis(1);

    /// An established sender with a 1 ms RTT, a huge peer window and `n` segments written.
    fn sender(n: u64) -> (Sender, u64) {
        let p = params();
        let mut s = Sender::new(&p, Duration::ZERO);
        s.on_handshake_rtt(MS);
        s.set_peer_window(1 << 30);
        s.write(n * u64::from(p.mss));
        (s, u64::from(p.mss))
    }

    fn ack(s: &mut Sender, ack: u64, sacks: &[(u64, u64)], now: Duration) {
        s.on_ack(
            AckInfo {
                ack,
                window: 1 << 30,
                sacks,
                ts_ecr: None,
                pure: true,
            },
            now,
        );
    }

    /// Sends what the windows allow; returns the start sequence numbers.
    fn send_all(s: &mut Sender, now: Duration) -> Vec<u64> {
        std::iter::from_fn(|| s.next(now).map(|o| o.seq)).collect()
    }

    #[test]
    fn sack_reneging_is_repaired_by_a_short_timeout_that_forgets_the_sacks() {
        let (mut s, m) = sender(100);
        assert_eq!(send_all(&mut s, MS).len(), 10, "initial window");
        // Segment 0 is lost, 1..10 arrive and are SACKed: fast retransmit of 0.
        ack(&mut s, 1, &[(1 + m, 1 + 10 * m)], 2 * MS);
        let sent = send_all(&mut s, 2 * MS);
        assert_eq!(sent.first(), Some(&1), "the hole is retransmitted first");
        assert_eq!(s.stats().congestion_events, 1);
        // The retransmission arrives, but the receiver has dropped everything it SACKed: the
        // cumulative ACK stops at segment 1, which the sender holds as SACKed.
        ack(&mut s, 1 + m, &[], 3 * MS);
        let deadline = s.timeout().expect("a timer runs");
        assert_eq!(
            deadline,
            3 * MS + RENEGING_DELAY,
            "max(srtt / 2, 10 ms), not a full RTO"
        );
        assert!(s.on_timeout(deadline));
        // Everything the receiver dropped is resent, from the cumulative ACK on.
        let resent = send_all(&mut s, deadline);
        assert_eq!(resent.first(), Some(&(1 + m)), "{resent:?}");
        assert!(s.in_flight() > 0);
    }

    #[test]
    fn a_timeout_after_progress_is_a_new_congestion_event_but_a_backoff_is_not() {
        let (mut s, m) = sender(100);
        send_all(&mut s, MS);
        let t1 = s.timeout().expect("RTO armed");
        assert!(s.on_timeout(t1));
        assert_eq!(s.stats().congestion_events, 1);
        assert_eq!(s.cwnd(), 2 * m, "loss window");
        assert_eq!(
            send_all(&mut s, t1),
            vec![1, 1 + m],
            "go-back-N within the loss window"
        );
        // The first retransmission arrives, the second is lost again: the slow-start growth
        // the ACK allows must not survive the next timeout.
        ack(&mut s, 1 + m, &[], t1 + MS);
        assert!(s.cwnd() > 2 * m);
        send_all(&mut s, t1 + MS);
        let t2 = s.timeout().expect("RTO re-armed");
        assert!(s.on_timeout(t2));
        assert_eq!(s.stats().congestion_events, 2, "a new loss after progress");
        assert_eq!(s.cwnd(), 2 * m);
        // No progress since: a backoff, not a new signal.
        let t3 = s.timeout().expect("RTO backed off");
        assert!(t3 - t2 > t2 - (t1 + MS), "exponential backoff");
        assert!(s.on_timeout(t3));
        assert_eq!(s.stats().congestion_events, 2);
    }
}
