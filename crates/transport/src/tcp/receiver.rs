//! The receiving half of a TCP endpoint: reassembly, SACK blocks (RFC 2018), Linux's ACK
//! policy (quick-ACK mode, delayed ACK, immediate ACK for out-of-order data), flow control
//! (the window is the receive buffer minus what the application has not read yet, with
//! receiver-side silly-window avoidance and a prompt window update when a read reopens it)
//! and receive-window autotuning with window scaling.

use std::collections::BTreeMap;
use std::time::Duration;

use super::segment::max_sack_blocks;
use super::Params;

/// Linux's TCP_MAX_QUICKACKS: segments acknowledged at once at the start of a connection.
const QUICKACKS: u32 = 16;

/// What a segment's data did, for the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataOutcome {
    /// Nothing accepted (duplicate or outside the window).
    Ignored,
    /// Accepted (in order or buffered out of order).
    Accepted,
}

/// Receiver state.
#[derive(Debug)]
pub(crate) struct Receiver {
    /// Next sequence number expected.
    nxt: u64,
    /// Buffered out-of-order ranges `start → end` (`[start, end)`) above `nxt`, disjoint and
    /// not touching. Like Linux's out-of-order queue, every segment inside the receive window
    /// is kept (the window bounds the memory); a map keeps insertion O(log n) with hundreds of
    /// holes, as a slow start overshooting a deep queue leaves them.
    ooo: BTreeMap<u64, u64>,
    /// Bytes in `ooo`: they occupy the receive buffer as unread data does.
    ooo_bytes: u64,
    /// Starts of the most recently received out-of-order segments, newest first (the first
    /// SACK block must report the newest arrival).
    recent: [u64; 4],
    n_recent: usize,
    fin_seq: Option<u64>,
    fin_received: bool,
    /// In-order application bytes not yet taken by the application; they occupy the buffer.
    readable: u64,
    /// Sequence number of the next byte the application reads (Linux's copied_seq).
    copied: u64,
    /// The last window advertised was reduced by unread data, so a read may have to announce
    /// the space it frees (tcp_cleanup_rbuf).
    window_held_back: bool,
    /// The ACK that arriving data calls for was sized on arrival: Linux sends it from the
    /// softirq before the application runs, so its window does not include what the read
    /// that follows frees (after a repaired hole, the whole released backlog).
    sized_on_arrival: bool,
    /// Acknowledgement number last sent.
    last_ack_sent: u64,
    ack_now: bool,
    delack_deadline: Option<Duration>,
    quickacks: u32,
    /// Interactive ("ping-pong") mode: this end sent data within a delayed-ACK timeout of
    /// receiving some, so Linux stops quick-ACKing (tcp_in_quickack_mode) and delays ACKs
    /// that a reply could carry. A client sending its TLS Finished and request right after
    /// the server's flight enters it, so a download's first flights are acknowledged every
    /// second segment, not one by one.
    pingpong: bool,
    delayed_ack: bool,
    delack_timeout: Duration,
    mss: u64,
    max_sack: usize,
    /// Receive buffer; the part not holding unread or out-of-order data is window.
    wnd: u64,
    /// Most the window may offer now (Linux's rcv_ssthresh): it starts at the initial window
    /// and opens by two segments per data segment received, so a buffer that autotuning
    /// enlarges at once still opens to the sender gradually.
    rcv_ssthresh: u64,
    wnd_max: u64,
    wscale: u8,
    right_edge: u64,
    /// TSval to echo (RFC 7323 TS.Recent).
    ts_recent: u64,
    /// Receiver's RTT estimate for autotuning (handshake, refined by timestamps).
    rtt: Option<Duration>,
    /// The last timestamp echo sampled (Linux's rcv_rtt_last_tsecr).
    last_tsecr: Option<u64>,
    space_seq: u64,
    space_time: Duration,
    /// Bytes the application read in the last measured RTT (Linux's rcvq_space.space).
    space: u64,
    /// When data last arrived (Linux's lrcvtime).
    last_data: Option<Duration>,
    /// The sender's RTO floor, for the receiver's estimate of the sender's RTO.
    min_rto: Duration,
}

impl Receiver {
    /// A receiver for a peer whose SYN used sequence number `peer_iss`.
    pub(crate) fn new(p: &Params, peer_iss: u64, now: Duration) -> Self {
        let nxt = peer_iss + 1;
        Receiver {
            nxt,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            recent: [0; 4],
            n_recent: 0,
            fin_seq: None,
            fin_received: false,
            readable: 0,
            copied: nxt,
            window_held_back: false,
            sized_on_arrival: false,
            last_ack_sent: nxt,
            ack_now: false,
            delack_deadline: None,
            quickacks: QUICKACKS,
            pingpong: false,
            delayed_ack: p.knobs.delayed_ack,
            delack_timeout: p.knobs.delayed_ack_timeout,
            mss: u64::from(p.mss),
            max_sack: if p.knobs.sack {
                max_sack_blocks(p.knobs.timestamps)
            } else {
                0
            },
            wnd: p.knobs.initial_receive_window,
            rcv_ssthresh: p.knobs.initial_receive_window,
            wnd_max: p.knobs.receive_window_max,
            wscale: p.wscale,
            right_edge: nxt,
            ts_recent: 0,
            rtt: None,
            last_tsecr: None,
            space_seq: nxt,
            space_time: now,
            // tcp_init_buffer_space: min(window, TCP_INIT_CWND · MSS).
            space: p.knobs.initial_receive_window.min(10 * u64::from(p.mss)),
            last_data: None,
            min_rto: p.knobs.min_rto,
        }
    }

    /// Next expected sequence number (the cumulative ACK).
    pub(crate) fn ack(&self) -> u64 {
        self.nxt
    }

    /// Current receive buffer size (window before scaling).
    pub(crate) fn window_size(&self) -> u64 {
        self.wnd
    }

    /// A handshake RTT sample seeds autotuning's notion of a round trip.
    pub(crate) fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = Some(rtt);
    }

    /// Whether the peer's FIN has been received in order.
    pub(crate) fn fin_received(&self) -> bool {
        self.fin_received
    }

    /// The TSval to echo.
    pub(crate) fn ts_recent(&self) -> u64 {
        self.ts_recent
    }

    /// Sets the TSval to echo from the peer's SYN.
    pub(crate) fn set_ts_recent(&mut self, val: u64) {
        self.ts_recent = val;
    }

    /// RFC 7323 §4.3: remembers the TSval of a segment (data or pure ACK) that starts at or
    /// before the last ACK we sent, so a delayed ACK echoes the oldest unacknowledged segment.
    pub(crate) fn note_ts(&mut self, seq: u64, val: u64) {
        if seq <= self.last_ack_sent {
            self.ts_recent = val;
        }
    }

    /// In-order bytes the application has not read yet.
    pub(crate) fn unread(&self) -> u64 {
        self.readable
    }

    /// Acknowledgement number last sent (Linux's rcv_wup): a segment that ends below it is
    /// old, and a zero-length one there is a window probe that wants an ACK.
    pub(crate) fn last_ack_sent(&self) -> u64 {
        self.last_ack_sent
    }

    /// The application reads at most `max` in-order bytes; returns how many it got. Freeing
    /// buffer space may call for a window update (RFC 9293 §3.8.6.2.2, Linux's
    /// tcp_cleanup_rbuf): when the window the peer knows had shrunk below one MSS or to half
    /// the buffer and the read at least doubles it, an ACK goes out at once instead of
    /// waiting for the next data.
    pub(crate) fn take_readable_max(&mut self, max: u64, now: Duration) -> u64 {
        let n = self.readable.min(max);
        if n == 0 {
            return 0;
        }
        // Linux sizes the buffer from what the application consumed: tcp_recvmsg runs
        // tcp_rcv_space_adjust after each skb it copies, so a read that drains a backlog (the
        // data a repaired hole released) is measured after its first segment, with the rest
        // still queued and not counted. A reader that stops does not grow the window.
        let first = n.min(self.mss);
        self.readable -= first;
        self.copied += first;
        self.autotune(now);
        self.readable -= n - first;
        self.copied += n - first;
        if std::mem::take(&mut self.window_held_back) {
            let known = self.right_edge.saturating_sub(self.nxt);
            let offered = self.window_candidate();
            let shrunk = known < self.mss || known.saturating_mul(2) <= self.wnd;
            if shrunk && offered > known && offered >= known.saturating_mul(2) {
                // The window update announces the space the read freed.
                self.ack_now = true;
                self.sized_on_arrival = false;
            }
        }
        n
    }

    /// Buffer space not holding unread or out-of-order data (Linux's tcp_space).
    fn free_space(&self) -> u64 {
        self.wnd
            .saturating_sub(self.readable)
            .saturating_sub(self.ooo_bytes)
    }

    /// Free buffer space up to `rcv_ssthresh` (Linux's __tcp_select_window), held back to
    /// zero while it is below min(buffer / 2, MSS) (receiver silly-window avoidance,
    /// RFC 9293 §3.8.6.2.2), and rounded down to the window-scale granularity like on the
    /// wire. Out-of-order data takes space, so during a loss recovery the right edge stops
    /// advancing and a sender with enough in flight becomes window-limited, as with Linux.
    fn window_candidate(&self) -> u64 {
        let free = self.free_space();
        if free < (self.wnd / 2).min(self.mss) {
            return 0;
        }
        (free.min(self.rcv_ssthresh) >> self.wscale) << self.wscale
    }

    /// Linux's tcp_grow_window for a data segment of `len` bytes (in order, or out of order
    /// with SACK; Linux skips segments under 128 bytes): the offered window may open by
    /// two segments, up to the free space.
    fn grow_window(&mut self, len: u64) {
        if len < 128 {
            return;
        }
        let room = self.free_space().saturating_sub(self.rcv_ssthresh);
        self.rcv_ssthresh += room.min((2 * self.mss).max(2 * len));
    }

    /// Asks for an ACK at the next opportunity (duplicate SYN, window probe, …).
    pub(crate) fn force_ack(&mut self) {
        self.ack_now = true;
    }

    /// Acknowledges at least the next `n` data segments at once (tcp_enter_quickack_mode).
    pub(crate) fn enter_quickack(&mut self, n: u32) {
        self.quickacks = self.quickacks.max(n);
        self.pingpong = false;
    }

    /// This end sends a data segment at `now` (Linux's tcp_event_data_sent): a reply within
    /// a delayed-ACK timeout of the last data received enters interactive mode (Linux's
    /// tcp_pingpong_thresh is 1).
    pub(crate) fn on_data_sent(&mut self, now: Duration) {
        if self
            .last_data
            .is_some_and(|t| now.saturating_sub(t) < self.delack_timeout)
        {
            self.pingpong = true;
        }
    }

    /// An ACK must go out now.
    pub(crate) fn ack_due(&self) -> bool {
        self.ack_now
    }

    /// The delayed-ACK timer.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.delack_deadline
    }

    /// The delayed-ACK timer fired.
    pub(crate) fn on_timeout(&mut self, now: Duration) {
        if self.delack_deadline.is_some_and(|t| t <= now) {
            self.delack_deadline = None;
            self.ack_now = true;
            // A delayed ACK that no reply carried: the exchange is not interactive.
            self.pingpong = false;
        }
    }

    /// Window field for an outgoing segment: the right edge never moves left, and the window
    /// is a multiple of the scale factor like on the wire.
    pub(crate) fn advertise(&mut self, syn: bool) -> u64 {
        if syn {
            return self.wnd.min(65_535);
        }
        if !std::mem::take(&mut self.sized_on_arrival) {
            self.window_held_back = self.readable > 0;
            self.right_edge = self.right_edge.max(self.nxt + self.window_candidate());
        }
        self.right_edge - self.nxt
    }

    /// Data arrived and an ACK is due at once: its window is what the buffer offers before
    /// the application reads (see `sized_on_arrival`).
    pub(crate) fn size_window_on_arrival(&mut self) {
        if self.ack_now {
            self.window_held_back = self.readable > 0;
            self.right_edge = self.right_edge.max(self.nxt + self.window_candidate());
            self.sized_on_arrival = true;
        }
    }

    /// Any segment carrying our ACK went out.
    pub(crate) fn on_ack_sent(&mut self) {
        // Linux counts quick ACKs down per ACK of new data sent (tcp_dec_quickack_mode),
        // in interactive mode too; outside it `schedule_ack` has counted them already.
        if self.pingpong && (self.ack_now || self.delack_deadline.is_some()) {
            self.quickacks = self.quickacks.saturating_sub(1);
        }
        self.last_ack_sent = self.nxt;
        self.ack_now = false;
        self.delack_deadline = None;
    }

    /// Fills `out` with SACK blocks (newest arrival first); returns how many.
    pub(crate) fn sack_blocks(&self, out: &mut [(u64, u64)]) -> usize {
        let max = self.max_sack.min(out.len());
        let mut n = 0;
        let push = |b: (u64, u64), out: &mut [(u64, u64)], n: &mut usize| {
            if *n < max && !out[..*n].contains(&b) {
                out[*n] = b;
                *n += 1;
            }
        };
        for &seq in &self.recent[..self.n_recent] {
            if let Some(b) = self.range_containing(seq) {
                push(b, out, &mut n);
            }
        }
        for (&l, &r) in self.ooo.iter().rev() {
            if n >= max {
                break;
            }
            push((l, r), out, &mut n);
        }
        n
    }

    fn range_containing(&self, seq: u64) -> Option<(u64, u64)> {
        self.ooo
            .range(..=seq)
            .next_back()
            .map(|(&l, &r)| (l, r))
            .filter(|&(_, r)| seq < r)
    }

    /// Processes the data (and FIN) of a segment starting at `seq`.
    pub(crate) fn on_data(&mut self, seq: u64, len: u32, fin: bool, now: Duration) -> DataOutcome {
        let end = seq + u64::from(len);
        if fin {
            // A FIN claims the end of the stream; a conflicting second claim is ignored.
            self.fin_seq.get_or_insert(end);
        }
        let limit = self
            .right_edge
            .max(self.nxt + self.wnd.saturating_sub(self.readable));
        if len > 0 && (end <= self.nxt || seq >= limit) {
            // Duplicate or outside the window: Linux answers with an immediate ACK.
            self.ack_now = true;
            return DataOutcome::Ignored;
        }
        let end = end.min(limit);
        let had_holes = !self.ooo.is_empty();
        if len > 0 {
            self.note_arrival(now);
        }
        if len > 0 {
            if seq > self.nxt {
                self.insert_ooo(seq, end);
                if self.max_sack > 0 {
                    self.grow_window(end - seq);
                }
                self.rcvbuf_grow(self.space);
                self.ack_now = true;
                return DataOutcome::Accepted;
            }
            let before = self.nxt;
            self.nxt = end;
            self.absorb_ooo();
            self.readable += self.nxt - before;
            self.grow_window(end - seq);
        }
        if let Some(f) = self.fin_seq {
            if !self.fin_received && self.nxt == f {
                self.fin_received = true;
                self.nxt += 1;
                self.ack_now = true;
            }
        }
        if fin {
            // Linux acknowledges a FIN at once, also a retransmitted one whose ACK was lost.
            self.ack_now = true;
        }
        if len > 0 {
            self.schedule_ack(had_holes, now);
        }
        DataOutcome::Accepted
    }

    /// Linux's tcp_event_data_recv: data after a gap longer than an RTO means the sender
    /// waited for a timeout and restarts from a small window, so the receiver acknowledges
    /// the next segments at once (quick-ACK mode again) instead of delaying them. The
    /// receiver's RTO is estimated from its RTT as RFC 6298's first one (SRTT + 4 · SRTT/2,
    /// at least SRTT + the minimum RTO).
    fn note_arrival(&mut self, now: Duration) {
        if let (Some(last), Some(rtt)) = (self.last_data, self.rtt) {
            let rto = rtt + (2 * rtt).max(self.min_rto);
            if now.saturating_sub(last) > rto {
                self.quickacks = self.quickacks.max(QUICKACKS);
            }
        }
        self.last_data = Some(now);
    }

    /// Linux's decision between acknowledging now and arming the delayed-ACK timer.
    fn schedule_ack(&mut self, filled_hole: bool, now: Duration) {
        if filled_hole || !self.delayed_ack {
            self.ack_now = true;
        } else if self.quickacks > 0 && !self.pingpong {
            self.quickacks -= 1;
            self.ack_now = true;
        } else if self.nxt - self.last_ack_sent > self.mss {
            // More than one full-sized segment unacknowledged: ACK every second segment.
            self.ack_now = true;
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.delack_timeout);
        }
    }

    fn insert_ooo(&mut self, seq: u64, end: u64) {
        let (mut l, mut r) = (seq, end);
        // A range starting at or before `seq` that reaches it merges from the left.
        if let Some((&a, &b)) = self.ooo.range(..=seq).next_back() {
            if b >= seq {
                l = a;
                r = r.max(b);
                self.ooo.remove(&a);
                self.ooo_bytes -= b - a;
            }
        }
        // Ranges starting inside [l, r] merge from the right.
        while let Some((&a, &b)) = self.ooo.range(l..=r).next() {
            r = r.max(b);
            self.ooo.remove(&a);
            self.ooo_bytes -= b - a;
        }
        self.ooo.insert(l, r);
        self.ooo_bytes += r - l;
        let keep = self.n_recent.min(self.recent.len() - 1);
        self.recent.copy_within(0..keep, 1);
        self.recent[0] = seq;
        self.n_recent = keep + 1;
    }

    /// Moves `nxt` over buffered ranges it now reaches.
    fn absorb_ooo(&mut self) {
        while let Some(entry) = self.ooo.first_entry() {
            if *entry.key() > self.nxt {
                break;
            }
            let start = *entry.key();
            let end = entry.remove();
            self.ooo_bytes -= end - start;
            self.nxt = self.nxt.max(end);
        }
        if self.ooo.is_empty() {
            self.n_recent = 0;
        }
    }

    /// Linux's dynamic right-sizing (tcp_rcv_space_adjust, as of Linux 6.18): once per
    /// receiver RTT, the bytes the application read in it, less what it left unread, become
    /// the new measure of the connection's rate when they exceed the last one, and the buffer
    /// grows from it (`rcvbuf_grow`). Counting only what was consumed keeps a reader that
    /// stops, or lags, from growing the window.
    fn autotune(&mut self, now: Duration) {
        let Some(rtt) = self.rtt else { return };
        if now < self.space_time + rtt {
            return;
        }
        let copied = (self.copied - self.space_seq).saturating_sub(self.readable);
        if copied > self.space {
            self.rcvbuf_grow(copied);
        }
        self.space_seq = self.copied;
        self.space_time = now;
    }

    /// Linux's tcp_rcvbuf_grow (6.18): the window becomes twice the newly measured rate
    /// (DRS is one RTT late), plus twice that again scaled by the rate's growth (a sender in
    /// slow start doubles per RTT), plus the span of out-of-order data above the hole (data
    /// that a recovery will release at once), never below its current size and never above
    /// the maximum. Linux sizes the buffer from this through the skbs' payload-to-truesize
    /// ratio and clamps the window at the same ratio, so the window it offers is this figure.
    /// Queuing out-of-order data calls it with an unchanged rate, so a loss recovery grows the
    /// window by the span it holds.
    fn rcvbuf_grow(&mut self, newval: u64) {
        let old = std::mem::replace(&mut self.space, newval).max(1);
        let mut rcvwin = newval.saturating_mul(2);
        let grow = u128::from(rcvwin) * u128::from(newval.saturating_sub(old)) / u128::from(old);
        rcvwin = rcvwin.saturating_add(u64::try_from(grow).unwrap_or(u64::MAX).saturating_mul(2));
        if let Some((_, &end)) = self.ooo.last_key_value() {
            rcvwin = rcvwin.saturating_add(end - self.nxt);
        }
        self.wnd = self.wnd.max(rcvwin.min(self.wnd_max));
    }

    /// A timestamp echo on a data segment of `len` bytes gives the receiver an RTT sample
    /// (Linux 6.18's tcp_rcv_rtt_measure_ts and tcp_rcv_rtt_update): one sample per new echo
    /// value, from segments of at least a full MSS, zero samples skipped. A smaller sample is
    /// latched at once; a larger one is averaged in (7/8 old) only while nothing waits unread,
    /// so a reader that lags does not inflate the estimate and with it the buffer.
    pub(crate) fn on_ts_echo(&mut self, echoed: u64, sample: Duration, len: u32) {
        if self.last_tsecr == Some(echoed) {
            return;
        }
        self.last_tsecr = Some(echoed);
        if u64::from(len) < self.mss || sample.is_zero() {
            return;
        }
        self.rtt = Some(match self.rtt {
            Some(r) if sample >= r => {
                if self.readable > 0 {
                    return;
                }
                r - r / 8 + sample / 8
            }
            _ => sample,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::tests_support::params;

    const MS: Duration = Duration::from_millis(1);

    /// A receiver whose window is `segments` full segments and never grows, unscaled.
    fn fixed_window_receiver(segments: u64) -> (Receiver, Params) {
        let mut p = params();
        p.knobs.initial_receive_window = segments * u64::from(p.mss);
        p.knobs.receive_window_max = p.knobs.initial_receive_window;
        p.wscale = 0;
        (Receiver::new(&p, 0, Duration::ZERO), p)
    }

    #[test]
    fn out_of_order_gives_sack_blocks_newest_first() {
        let p = params();
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        let m = u64::from(p.mss);
        assert_eq!(r.on_data(1 + m, p.mss, false, MS), DataOutcome::Accepted);
        assert_eq!(
            r.on_data(1 + 3 * m, p.mss, false, MS),
            DataOutcome::Accepted
        );
        assert!(r.ack_due());
        let mut b = [(0, 0); 4];
        let n = r.sack_blocks(&mut b);
        assert_eq!(&b[..n], &[(1 + 3 * m, 1 + 4 * m), (1 + m, 1 + 2 * m)]);
        assert_eq!(r.ack(), 1);
        // Filling the first hole joins the first range.
        r.on_data(1, p.mss, false, MS);
        assert_eq!(r.ack(), 1 + 2 * m);
        assert_eq!(r.take_readable_max(u64::MAX, MS), 2 * m);
        let n = r.sack_blocks(&mut b);
        assert_eq!(&b[..n], &[(1 + 3 * m, 1 + 4 * m)]);
        // A duplicate is ignored and acknowledged at once.
        r.on_ack_sent();
        assert_eq!(r.on_data(1, p.mss, false, MS), DataOutcome::Ignored);
        assert!(r.ack_due());
    }

    #[test]
    fn hundreds_of_holes_are_all_kept_within_the_window() {
        let mut p = params();
        p.knobs.initial_receive_window = 4 << 20;
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        let m = u64::from(p.mss);
        // Every other segment of 1000 arrives: 500 holes (the old cap kept 64 ranges).
        for k in (1..1000).step_by(2) {
            assert_eq!(
                r.on_data(1 + k * m, p.mss, false, MS),
                DataOutcome::Accepted
            );
        }
        assert_eq!(r.ooo.len(), 500);
        let mut b = [(0, 0); 4];
        let n = r.sack_blocks(&mut b);
        assert_eq!(b[0], (1 + 999 * m, 1 + 1000 * m), "newest first");
        assert_eq!(n, 3, "timestamps leave room for three blocks");
        // Filling the holes in order delivers everything, nothing was discarded.
        for k in (0..1000).step_by(2) {
            r.on_data(1 + k * m, p.mss, false, MS);
        }
        assert_eq!(r.ack(), 1 + 1000 * m);
        assert!(r.ooo.is_empty());
        // Out of order fills merge from both sides.
        r.on_data(1 + 1002 * m, p.mss, false, MS);
        r.on_data(1 + 1004 * m, p.mss, false, MS);
        r.on_data(1 + 1003 * m, p.mss, false, MS);
        assert_eq!(
            r.ooo.iter().next(),
            Some((&(1 + 1002 * m), &(1 + 1005 * m)))
        );
    }

    /// A receiver with a 64 KiB initial window that autotuning may grow to 6 MiB, its RTT
    /// 10 ms, and the sequence number after `segments` full segments it received at 1 ms.
    fn autotuning_receiver(segments: u64) -> (Receiver, Params, u64) {
        let mut p = params();
        p.knobs.initial_receive_window = 64 * 1024;
        p.knobs.receive_window_max = 6 << 20;
        let m = u64::from(p.mss);
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        r.set_rtt(10 * MS);
        let mut seq = 1;
        for _ in 0..segments {
            r.on_data(seq, p.mss, false, MS);
            seq += m;
        }
        (r, p, seq)
    }

    /// Delivers `n` full segments from `seq`, evenly spread over (`from`, `to`], each read
    /// on arrival; returns the next sequence number.
    fn receive_and_read(
        r: &mut Receiver,
        mut seq: u64,
        n: u64,
        from: Duration,
        to: Duration,
    ) -> u64 {
        let m = r.mss;
        for k in 1..=n {
            let now = from + (to - from) * u32::try_from(k).unwrap() / u32::try_from(n).unwrap();
            r.on_data(seq, u32::try_from(m).unwrap(), false, now);
            r.take_readable_max(u64::MAX, now);
            seq += m;
        }
        seq
    }

    #[test]
    fn autotuning_grows_with_the_reads_growth_like_linux() {
        let (mut r, p, _) = autotuning_receiver(0);
        let m = u64::from(p.mss);
        assert_eq!(r.space, 10 * m);
        // 20 segments read as they arrive within the first RTT: copied = 20 MSS > space =
        // 10 MSS, so rcvwin = 2·20 = 40 MSS, grow = 40 · (20 − 10) / 10 = 40, window
        // 40 + 80 = 120 MSS.
        let seq = receive_and_read(&mut r, 1, 20, Duration::ZERO, 10 * MS);
        assert_eq!(r.window_size(), 120 * m);
        // The same amount again: no growth, the window stays.
        receive_and_read(&mut r, seq, 20, 10 * MS, 20 * MS);
        assert_eq!(r.window_size(), 120 * m);
    }

    #[test]
    fn a_drained_backlog_is_measured_after_its_first_segment() {
        // 20 segments wait unread, then one read takes them all. Linux measures after the
        // first skb it copies: 1 MSS read, 19 still queued, which is not more than the
        // 10 MSS measured at the start, so nothing grows (read on arrival, the same bytes
        // grow the window to 120 MSS).
        let (mut r, p, _) = autotuning_receiver(20);
        let m = u64::from(p.mss);
        assert_eq!(r.take_readable_max(u64::MAX, 10 * MS), 20 * m);
        assert_eq!(r.window_size(), 64 * 1024);
        assert_eq!(r.space, 10 * m);
    }

    #[test]
    fn bytes_left_unread_do_not_count_as_consumed() {
        let (mut r, p, _) = autotuning_receiver(20);
        let m = u64::from(p.mss);
        // The application takes 15 segments; 5 stay queued: 15 − 5 = 10 MSS is not more
        // than the 10 MSS measured at the start, so nothing grows.
        r.take_readable_max(15 * m, 10 * MS);
        assert_eq!(r.window_size(), 64 * 1024);
        assert_eq!(r.space, 10 * m);
    }

    #[test]
    fn out_of_order_data_grows_the_window_by_its_span() {
        let mut p = params();
        p.knobs.initial_receive_window = 64 * 1024;
        p.knobs.receive_window_max = 6 << 20;
        let m = u64::from(p.mss);
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        // Segment 0 is lost; 60 segments above it arrive. The window becomes twice the
        // measured rate (10 MSS) plus the span from the hole to the highest byte held.
        for k in 1..=60 {
            r.on_data(1 + k * m, p.mss, false, MS);
        }
        assert_eq!(r.window_size(), 2 * 10 * m + 61 * m);
    }

    #[test]
    fn the_receivers_rtt_latches_smaller_samples_and_averages_larger_ones_only_when_drained() {
        let p = params();
        let m = u64::from(p.mss);
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        r.on_ts_echo(1, 40 * MS, p.mss);
        assert_eq!(r.rtt, Some(40 * MS));
        // The same echo value again is not a new sample; a short segment gives none.
        r.on_ts_echo(1, 10 * MS, p.mss);
        r.on_ts_echo(2, 10 * MS, 100);
        assert_eq!(r.rtt, Some(40 * MS));
        r.on_ts_echo(3, 20 * MS, p.mss);
        assert_eq!(r.rtt, Some(20 * MS), "a smaller sample is latched");
        r.on_ts_echo(4, 100 * MS, p.mss);
        assert_eq!(r.rtt, Some(20 * MS - 20 * MS / 8 + 100 * MS / 8));
        // With data waiting unread, a larger sample is ignored.
        r.on_data(1, p.mss, false, MS);
        let before = r.rtt;
        r.on_ts_echo(5, 500 * MS, p.mss);
        assert_eq!(r.rtt, before);
        assert_eq!(r.unread(), m);
    }

    #[test]
    fn the_offered_window_opens_two_segments_per_segment_received() {
        let mut p = params();
        p.knobs.initial_receive_window = 64 * 1024;
        p.knobs.receive_window_max = 6 << 20;
        p.wscale = 0;
        let m = u64::from(p.mss);
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        r.set_rtt(10 * MS);
        // Autotuning enlarges the buffer at once ...
        let mut seq = receive_and_read(&mut r, 1, 20, Duration::ZERO, 10 * MS);
        assert_eq!(r.window_size(), 120 * m);
        // ... but the window offered is still the initial one ...
        assert_eq!(r.advertise(false), 64 * 1024);
        // ... and opens by two segments per segment received (and read) from now on.
        for _ in 0..10 {
            r.on_data(seq, p.mss, false, 11 * MS);
            r.take_readable_max(u64::MAX, 11 * MS);
            seq += m;
        }
        assert_eq!(r.advertise(false), 64 * 1024 + 20 * m);
        // Tiny segments (under 128 bytes) do not open it.
        r.on_data(seq, 100, false, 12 * MS);
        r.take_readable_max(u64::MAX, 12 * MS);
        assert_eq!(r.advertise(false), 64 * 1024 + 20 * m);
    }

    #[test]
    fn out_of_order_data_occupies_the_window_so_its_edge_stops() {
        let (mut r, p) = fixed_window_receiver(20);
        let m = u64::from(p.mss);
        assert_eq!(r.advertise(false), 20 * m);
        // Segment 0 is lost; 1..10 arrive and wait in the out-of-order queue.
        for k in 1..=10 {
            r.on_data(1 + k * m, p.mss, false, MS);
        }
        assert_eq!(r.ooo_bytes, 10 * m);
        // The right edge stays where it was (20 segments above the hole), not 20 above it
        // plus what arrived.
        assert_eq!(1 + r.advertise(false), 1 + 20 * m);
        // The hole fills: everything is in order, read, and the window is whole again.
        r.on_data(1, p.mss, false, MS);
        assert_eq!(r.ooo_bytes, 0);
        assert_eq!(r.take_readable_max(u64::MAX, MS), 11 * m);
        assert_eq!(r.advertise(false), 20 * m);
    }

    #[test]
    fn a_quick_reply_enters_interactive_mode_and_a_delayed_ack_leaves_it() {
        let p = params();
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        let m = u64::from(p.mss);
        r.on_data(1, 300, false, MS);
        assert!(r.ack_due(), "quick-ACK mode at the start");
        // This end replies within the delayed-ACK timeout: interactive mode.
        r.on_data_sent(2 * MS);
        r.on_ack_sent();
        let mut seq = 301;
        r.on_data(seq, p.mss, false, 3 * MS);
        seq += m;
        assert!(!r.ack_due(), "no quick ACK in interactive mode");
        r.on_data(seq, p.mss, false, 3 * MS);
        seq += m;
        assert!(
            r.ack_due(),
            "every second full segment is still acknowledged"
        );
        r.on_ack_sent();
        r.on_data(seq, p.mss, false, 4 * MS);
        seq += m;
        let t = r.timeout().expect("delayed ACK armed");
        r.on_timeout(t);
        assert!(r.ack_due());
        r.on_ack_sent();
        // The delayed ACK fired: quick ACKs again.
        r.on_data(seq, p.mss, false, t + MS);
        assert!(r.ack_due());
        // A reply later than the timeout does not make the exchange interactive.
        r.on_ack_sent();
        r.on_data_sent(t + MS + p.knobs.delayed_ack_timeout);
        r.on_data(
            seq + m,
            p.mss,
            false,
            t + 2 * MS + p.knobs.delayed_ack_timeout,
        );
        assert!(r.ack_due());
    }

    #[test]
    fn delayed_ack_every_second_segment_after_quickacks() {
        let p = params();
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        let m = u64::from(p.mss);
        let mut seq = 1;
        for _ in 0..QUICKACKS {
            r.on_data(seq, p.mss, false, MS);
            seq += m;
            assert!(r.ack_due());
            r.on_ack_sent();
        }
        r.on_data(seq, p.mss, false, MS);
        seq += m;
        assert!(!r.ack_due());
        assert_eq!(r.timeout(), Some(MS + p.knobs.delayed_ack_timeout));
        r.on_data(seq, p.mss, false, MS);
        assert!(r.ack_due());
    }

    #[test]
    fn window_grows_but_not_beyond_max() {
        let mut p = params();
        p.knobs.initial_receive_window = 64 * 1024;
        p.knobs.receive_window_max = 200 * 1024;
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        r.set_rtt(10 * MS);
        let mut seq = 1;
        for k in 1..200u32 {
            let now = MS * k;
            for _ in 0..40 {
                if r.on_data(seq, p.mss, false, now) == DataOutcome::Accepted {
                    seq += u64::from(p.mss);
                }
            }
            r.take_readable_max(u64::MAX, now);
            assert!(r.window_size() <= p.knobs.receive_window_max);
            assert!(r.advertise(false) <= p.knobs.receive_window_max);
        }
        assert_eq!(r.window_size(), p.knobs.receive_window_max);
    }

    /// Linux sends the ACK for a segment that fills a hole from the softirq, before the
    /// application reads what it released: that ACK's window leaves the released data out,
    /// and the next one offers the space the read freed.
    #[test]
    fn the_ack_for_arriving_data_is_sized_before_the_application_reads() {
        let (mut r, p) = fixed_window_receiver(40);
        let m = u64::from(p.mss);
        assert_eq!(r.advertise(false), 40 * m);
        // Segment 0 is lost; 1..5 wait out of order (the right edge stays 40 above the hole).
        for k in 1..=5 {
            r.on_data(1 + k * m, p.mss, false, MS);
            r.on_ack_sent();
        }
        // The hole fills: six segments are in order and an ACK is due at once ...
        r.on_data(1, p.mss, false, 2 * MS);
        assert!(r.ack_due());
        r.size_window_on_arrival();
        // ... the application reads them before the ACK leaves ...
        assert_eq!(r.take_readable_max(u64::MAX, 2 * MS), 6 * m);
        // ... but the ACK offers the window as it was on arrival: 40 above the old hole.
        assert_eq!(r.advertise(false), 34 * m);
        r.on_ack_sent();
        // The next ACK offers the freed space.
        assert_eq!(r.advertise(false), 40 * m);
    }

    #[test]
    fn unread_data_closes_the_window_and_a_read_reopens_it_with_an_ack() {
        let (mut r, p) = fixed_window_receiver(10);
        let m = u64::from(p.mss);
        assert_eq!(r.advertise(false), 10 * m);
        for k in 0..10 {
            r.on_data(1 + k * m, p.mss, false, MS);
            r.on_ack_sent();
            // The right edge stays put while the unread data fills the buffer.
            assert_eq!(r.advertise(false), (9 - k) * m);
        }
        // Beyond the buffer: dropped and answered at once.
        assert_eq!(
            r.on_data(1 + 10 * m, p.mss, false, MS),
            DataOutcome::Ignored
        );
        assert!(r.ack_due());
        r.on_ack_sent();
        // Reading less than min(buffer / 2, MSS) keeps the window shut (receiver SWS).
        assert_eq!(r.take_readable_max(m / 2, MS), m / 2);
        assert!(!r.ack_due());
        assert_eq!(r.advertise(false), 0);
        // Reading the rest reopens it, and says so at once.
        assert_eq!(r.take_readable_max(u64::MAX, MS), 10 * m - m / 2);
        assert!(r.ack_due(), "window update");
        assert_eq!(r.advertise(false), 10 * m);
        assert_eq!(r.take_readable_max(u64::MAX, MS), 0);
    }

    #[test]
    fn a_reader_that_keeps_up_sends_no_extra_window_updates() {
        let p = params();
        let mut r = Receiver::new(&p, 0, Duration::ZERO);
        r.quickacks = 0;
        r.advertise(false);
        r.on_data(1, p.mss, false, MS);
        assert!(!r.ack_due(), "delayed");
        r.take_readable_max(u64::MAX, MS);
        assert!(
            !r.ack_due(),
            "the read changes nothing the peer needs to know"
        );
        assert_eq!(r.advertise(false), p.knobs.initial_receive_window);
    }
}
