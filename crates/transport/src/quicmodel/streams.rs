//! Streams of one endpoint: send halves (what the application wrote, what was sent, what is
//! acknowledged, ranges to repeat, the peer's credit) and receive halves (received ranges, the
//! read offset, FIN, the window granted), plus the connection-level send credit, the stream
//! scheduler, the send buffer (`send_window`: unacknowledged plus unsent bytes) and the
//! send-queue limit with its low-water mark.
//!
//! No stream carries payload bytes: offsets and lengths are the whole state.

use std::collections::VecDeque;
use std::time::Duration;

use super::flowctl::{FcPolicy, RecvWindow};
use super::knobs::StreamScheduler;
use super::ranges::RangeSet;

/// Most receive streams an endpoint keeps (the model does not send MAX_STREAMS; this bounds
/// memory against a misbehaving peer).
pub(crate) const MAX_RECV_STREAMS: usize = 4096;

/// Bytes an unbounded writer (bulk sender) has: effectively infinite.
pub(crate) const UNBOUNDED: u64 = u64::MAX;

/// The send half of a stream.
#[derive(Debug)]
pub(crate) struct SendStream {
    /// Stream id.
    pub id: u64,
    /// End of what the application wrote.
    pub written: u64,
    /// Bytes the application still wants to write (UNBOUNDED: until stopped).
    pub to_write: u64,
    /// Next new offset to send.
    pub sent: u64,
    /// FIN sent (and not lost since).
    pub fin_sent: bool,
    acked: RangeSet,
    /// Contiguously acknowledged bytes from 0.
    pub acked_prefix: u64,
    fin_acked: bool,
    /// Ranges to send again `[start, end)`, oldest loss first.
    retx: VecDeque<(u64, u64)>,
    /// FIN must be sent again.
    fin_retx: bool,
    /// The peer's MAX_STREAM_DATA.
    pub max_data: u64,
    /// Limit at which STREAM_DATA_BLOCKED was last sent.
    pub blocked_reported: Option<u64>,
}

impl SendStream {
    fn new(id: u64, to_write: u64, max_data: u64) -> SendStream {
        SendStream {
            id,
            written: 0,
            to_write,
            sent: 0,
            fin_sent: false,
            acked: RangeSet::new(),
            acked_prefix: 0,
            fin_acked: false,
            retx: VecDeque::new(),
            fin_retx: false,
            max_data,
            blocked_reported: None,
        }
    }

    /// The application wrote everything it will.
    pub(crate) fn fin(&self) -> bool {
        self.to_write == 0
    }

    fn has_retx(&self) -> bool {
        !self.retx.is_empty() || self.fin_retx
    }

    /// New bytes waiting (written, not sent).
    pub(crate) fn unsent(&self) -> u64 {
        self.written - self.sent
    }

    fn wants_fin(&self) -> bool {
        self.fin() && !self.fin_sent && self.sent == self.written
    }
}

/// The receive half of a stream.
#[derive(Debug)]
pub(crate) struct RecvStream {
    /// Stream id.
    pub id: u64,
    received: RangeSet,
    /// Bytes the application read.
    pub read: u64,
    /// Final size, once FIN arrived.
    pub fin_at: Option<u64>,
    /// Highest offset received.
    pub highest: u64,
    /// Credit granted.
    pub window: RecvWindow,
    /// The application read FIN.
    pub finished: bool,
}

/// What a STREAM frame chosen by the scheduler carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Send-stream index.
    pub stream: u32,
    /// Stream id.
    pub id: u64,
    /// Offset.
    pub offset: u64,
    /// Bytes.
    pub len: u16,
    /// FIN.
    pub fin: bool,
    /// The frame has a length field.
    pub length_field: bool,
    /// New data (counts against connection credit) rather than a retransmission.
    pub new: bool,
}

/// Every stream of one endpoint.
#[derive(Debug)]
pub(crate) struct Streams {
    /// Send halves, by opening order.
    pub send: Vec<SendStream>,
    /// Receive halves, by id.
    pub recv: Vec<RecvStream>,
    /// The peer's MAX_DATA.
    pub conn_max: u64,
    /// New stream bytes sent in total (against `conn_max`).
    pub conn_sent: u64,
    /// Limit at which DATA_BLOCKED was last sent.
    pub conn_blocked_reported: Option<u64>,
    /// The connection's receive credit.
    pub conn_recv: RecvWindow,
    /// Highest offsets received summed over streams (the peer's use of our MAX_DATA).
    pub conn_received: u64,
    /// Initial window of new receive streams.
    stream_window: u64,
    /// The peer's initial MAX_STREAM_DATA.
    peer_stream_window: u64,
    /// Round-robin position.
    rr: usize,
    scheduler: StreamScheduler,
    /// Send buffer: written but unacknowledged bytes allowed.
    send_window: u64,
    /// Send-queue limit (written but unacknowledged bytes), and its low-water mark.
    queue_limit: Option<(u64, u64)>,
    /// Writing paused by the send-queue limit until the queue drains to low water.
    queue_paused: bool,
    /// Written but unacknowledged bytes over all streams.
    pub buffered: u64,
    /// Written but unsent bytes over all streams.
    pub unsent: u64,
}

/// Flow-control and buffer settings of the streams.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamConfig {
    /// Our stream receive window.
    pub stream_window: u64,
    /// Our connection receive window.
    pub conn_window: u64,
    /// The peer's stream window (its initial MAX_STREAM_DATA).
    pub peer_stream_window: u64,
    /// The peer's connection window (its initial MAX_DATA).
    pub peer_conn_window: u64,
    /// Send buffer.
    pub send_window: u64,
    /// Send-queue limit and low water, bytes.
    pub queue_limit: Option<(u64, u64)>,
    /// Scheduler.
    pub scheduler: StreamScheduler,
}

impl Streams {
    /// No streams yet.
    pub(crate) fn new(c: &StreamConfig, now: Duration) -> Streams {
        Streams {
            send: Vec::new(),
            recv: Vec::new(),
            conn_max: c.peer_conn_window,
            conn_sent: 0,
            conn_blocked_reported: None,
            conn_recv: RecvWindow::new(c.conn_window, now),
            conn_received: 0,
            stream_window: c.stream_window,
            peer_stream_window: c.peer_stream_window,
            rr: 0,
            scheduler: c.scheduler,
            send_window: c.send_window,
            queue_limit: c.queue_limit,
            queue_paused: false,
            buffered: 0,
            unsent: 0,
        }
    }

    /// Opens a send half on `id` for `to_write` bytes (UNBOUNDED: until stopped); returns its
    /// index.
    pub(crate) fn open_send(&mut self, id: u64, to_write: u64) -> u32 {
        self.send
            .push(SendStream::new(id, to_write, self.peer_stream_window));
        (self.send.len() - 1) as u32
    }

    /// Index of the send half of `id`.
    pub(crate) fn send_index(&self, id: u64) -> Option<usize> {
        self.send.iter().position(|s| s.id == id)
    }

    /// Index of the receive half of `id`, creating it if `create`.
    pub(crate) fn recv_index(&mut self, id: u64, create: bool, now: Duration) -> Option<usize> {
        match self.recv.binary_search_by_key(&id, |r| r.id) {
            Ok(i) => Some(i),
            Err(i) if create => {
                self.recv.insert(
                    i,
                    RecvStream {
                        id,
                        received: RangeSet::new(),
                        read: 0,
                        fin_at: None,
                        highest: 0,
                        window: RecvWindow::new(self.stream_window, now),
                        finished: false,
                    },
                );
                Some(i)
            }
            Err(_) => None,
        }
    }

    /// The application writes as much as the send buffer and the send-queue limit allow.
    ///
    /// The send queue holds a byte from its write until its acknowledgement (INET's stream send
    /// queue), so the limit counts `buffered`, not `unsent`: writing stops once the queue
    /// reaches the limit and resumes only when acknowledgements drain it below the low-water
    /// mark, which gives the application's refills their hysteresis. An empty queue always
    /// resumes, so a mark of 0 waits for the last acknowledgement.
    pub(crate) fn app_write(&mut self) {
        if let Some((_, low)) = self.queue_limit {
            if self.queue_paused && (self.buffered < low || self.buffered == 0) {
                self.queue_paused = false;
            }
            if self.queue_paused {
                return;
            }
        }
        let n = self.send.len();
        for i in 0..n {
            let space = self.send_window.saturating_sub(self.buffered);
            let queue_room = match self.queue_limit {
                Some((limit, _)) => limit.saturating_sub(self.buffered),
                None => u64::MAX,
            };
            let s = &mut self.send[i];
            let k = s.to_write.min(space).min(queue_room);
            if k == 0 {
                continue;
            }
            s.written += k;
            if s.to_write != UNBOUNDED {
                s.to_write -= k;
            }
            self.buffered += k;
            self.unsent += k;
        }
        if let Some((limit, _)) = self.queue_limit {
            if self.buffered >= limit {
                self.queue_paused = true;
            }
        }
    }

    /// A bulk writer stops: its unbounded streams end where they are.
    pub(crate) fn stop_writing(&mut self) {
        for s in &mut self.send {
            if s.to_write == UNBOUNDED {
                s.to_write = 0;
            }
        }
    }

    /// Connection credit left for new data.
    pub(crate) fn conn_credit(&self) -> u64 {
        self.conn_max.saturating_sub(self.conn_sent)
    }

    fn new_sendable(&self, s: &SendStream) -> bool {
        (s.unsent() > 0 && s.sent < s.max_data && self.conn_credit() > 0) || s.wants_fin()
    }

    /// Anything to send: repeats, or new bytes / FIN with credit.
    pub(crate) fn has_sendable(&self) -> bool {
        self.send
            .iter()
            .any(|s| s.has_retx() || self.new_sendable(s))
    }

    /// New bytes are written but flow control holds all of them.
    pub(crate) fn flow_blocked(&self) -> bool {
        self.unsent > 0
            && !self
                .send
                .iter()
                .any(|s| s.has_retx() || self.new_sendable(s))
    }

    /// Blocked limits not yet reported: (connection limit, [(stream index, limit)]) through
    /// the callbacks.
    pub(crate) fn newly_blocked(
        &mut self,
        mut conn: impl FnMut(u64),
        mut stream: impl FnMut(u32, u64),
    ) {
        if self.unsent > 0
            && self.conn_credit() == 0
            && self.conn_blocked_reported != Some(self.conn_max)
        {
            self.conn_blocked_reported = Some(self.conn_max);
            conn(self.conn_max);
        }
        for (i, s) in self.send.iter_mut().enumerate() {
            if s.unsent() > 0 && s.sent >= s.max_data && s.blocked_reported != Some(s.max_data) {
                s.blocked_reported = Some(s.max_data);
                stream(i as u32, s.max_data);
            }
        }
    }

    /// The next STREAM frame for at most `room` frame bytes (`fits(id, offset, room)` gives
    /// the data bytes that fit): repeats first, then new data by the scheduler.
    pub(crate) fn next_chunk(
        &mut self,
        room: u32,
        chunk: impl Fn(u64, u64, u64, u32) -> Option<(u16, bool)>,
    ) -> Option<Chunk> {
        // Repeats first, lowest stream first (they were sent once already).
        for (i, s) in self.send.iter_mut().enumerate() {
            while let Some(&(start, end)) = s.retx.front() {
                // Skip what was acknowledged meanwhile.
                let Some((a, b)) = s.acked.first_gap(start, end) else {
                    s.retx.pop_front();
                    continue;
                };
                let (n, length_field) = chunk(s.id, a, b - a, room)?;
                let len = u64::from(n);
                if a + len >= end {
                    s.retx.pop_front();
                } else if let Some(front) = s.retx.front_mut() {
                    front.0 = a + len;
                }
                let fin = s.fin() && a + len == s.written && (s.fin_retx || !s.fin_sent);
                if fin {
                    s.fin_retx = false;
                    s.fin_sent = true;
                }
                return Some(Chunk {
                    stream: i as u32,
                    id: s.id,
                    offset: a,
                    len: n,
                    fin,
                    length_field,
                    new: false,
                });
            }
            if s.fin_retx {
                // Only the FIN is missing: an empty frame at the end.
                let (_, length_field) = chunk(s.id, s.written, 0, room)?;
                s.fin_retx = false;
                s.fin_sent = true;
                return Some(Chunk {
                    stream: i as u32,
                    id: s.id,
                    offset: s.written,
                    len: 0,
                    fin: true,
                    length_field,
                    new: false,
                });
            }
        }
        let n = self.send.len();
        if n == 0 {
            return None;
        }
        let start = match self.scheduler {
            StreamScheduler::RoundRobin => self.rr % n,
            StreamScheduler::Fifo => 0,
        };
        for k in 0..n {
            let i = (start + k) % n;
            if !self.new_sendable(&self.send[i]) {
                continue;
            }
            let credit = self.conn_credit();
            let s = &mut self.send[i];
            let avail = s
                .unsent()
                .min(s.max_data - s.sent.min(s.max_data))
                .min(credit);
            let (n, length_field) = chunk(s.id, s.sent, avail, room)?;
            let len = u64::from(n);
            let offset = s.sent;
            s.sent += len;
            let fin = s.fin() && s.sent == s.written && !s.fin_sent;
            if fin {
                s.fin_sent = true;
            }
            self.conn_sent += len;
            self.unsent -= len;
            if self.scheduler == StreamScheduler::RoundRobin {
                self.rr = i + 1;
            }
            return Some(Chunk {
                stream: i as u32,
                id: s.id,
                offset,
                len: n,
                fin,
                length_field,
                new: true,
            });
        }
        None
    }

    /// A STREAM frame was acknowledged.
    pub(crate) fn on_acked(&mut self, stream: u32, offset: u64, len: u16, fin: bool) {
        let Some(s) = self.send.get_mut(stream as usize) else {
            return;
        };
        s.acked.insert(offset, offset + u64::from(len));
        if fin {
            s.fin_acked = true;
        }
        let prefix = s.acked.contiguous_end(0);
        if prefix > s.acked_prefix {
            // The acknowledged prefix is the set's first range: it stays as small as the
            // number of gaps.
            self.buffered -= (prefix - s.acked_prefix).min(self.buffered);
            s.acked_prefix = prefix;
        }
    }

    /// A STREAM frame was lost: queue its bytes again.
    pub(crate) fn on_lost(&mut self, stream: u32, offset: u64, len: u16, fin: bool) {
        let Some(s) = self.send.get_mut(stream as usize) else {
            return;
        };
        if len > 0 {
            s.retx.push_back((offset, offset + u64::from(len)));
        }
        if fin && !s.fin_acked {
            s.fin_retx = true;
        }
    }

    /// The peer raised a stream's limit.
    pub(crate) fn on_max_stream_data(&mut self, id: u64, max: u64) {
        if let Some(i) = self.send_index(id) {
            let s = &mut self.send[i];
            s.max_data = s.max_data.max(max);
        }
    }

    /// A STREAM frame arrived; returns false on a protocol violation (dropped): beyond the
    /// credit granted, or a new stream beyond [`MAX_RECV_STREAMS`].
    pub(crate) fn on_stream(
        &mut self,
        id: u64,
        offset: u64,
        len: u16,
        fin: bool,
        now: Duration,
    ) -> bool {
        let Some(end) = offset.checked_add(u64::from(len)) else {
            return false;
        };
        let create = self.recv.len() < MAX_RECV_STREAMS;
        let Some(i) = self.recv_index(id, create, now) else {
            return false;
        };
        let r = &mut self.recv[i];
        if end > r.window.advertised {
            return false;
        }
        if end > r.highest {
            let more = end - r.highest;
            if self.conn_received + more > self.conn_recv.advertised {
                return false;
            }
            self.conn_received += more;
            r.highest = end;
        }
        r.received.insert(offset, end);
        if fin {
            r.fin_at = Some(end);
        }
        true
    }

    /// The application reads everything readable on every stream; `per(index, bytes, fin)` is
    /// called for each stream that advanced. Credit follows the reads.
    pub(crate) fn read_all(
        &mut self,
        now: Duration,
        srtt: Duration,
        p: &FcPolicy,
        mut per: impl FnMut(u64, u64, bool),
    ) {
        let mut total = 0;
        for r in &mut self.recv {
            if r.finished {
                continue;
            }
            let end = r.received.contiguous_end(r.read);
            let n = end - r.read;
            r.read = end;
            // What was read is the set's first range [0, end): the set stays as small as the
            // number of gaps.
            if n > 0 {
                r.window.on_consumed(n, now, srtt, p);
            }
            let fin = r.fin_at == Some(r.read);
            if fin {
                r.finished = true;
            }
            if n > 0 || fin {
                per(r.id, n, fin);
            }
            total += n;
        }
        self.conn_recv.on_consumed(total, now, srtt, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quicmodel::wire::stream_chunk;

    fn cfg(scheduler: StreamScheduler) -> StreamConfig {
        StreamConfig {
            stream_window: 10_000,
            conn_window: 15_000,
            peer_stream_window: 10_000,
            peer_conn_window: 15_000,
            send_window: 1 << 20,
            queue_limit: None,
            scheduler,
        }
    }

    #[test]
    fn round_robin_alternates_and_credit_limits() {
        let mut s = Streams::new(&cfg(StreamScheduler::RoundRobin), Duration::ZERO);
        s.open_send(0, 20_000);
        s.open_send(4, 20_000);
        s.app_write();
        let mut order = Vec::new();
        while let Some(c) = s.next_chunk(1200, stream_chunk) {
            order.push((c.id, c.len));
        }
        assert_eq!(order[0].0, 0);
        assert_eq!(order[1].0, 4);
        assert_eq!(order[2].0, 0);
        let total: u64 = order.iter().map(|&(_, l)| u64::from(l)).sum();
        assert_eq!(total, 15_000, "connection credit");
        assert!(s.flow_blocked());
        let mut blocked = (None, Vec::new());
        s.newly_blocked(|c| blocked.0 = Some(c), |i, l| blocked.1.push((i, l)));
        assert_eq!(blocked.0, Some(15_000));
        // Reported once per limit.
        s.newly_blocked(|_| panic!("again"), |_, _| panic!("again"));
    }

    #[test]
    fn fifo_drains_the_first_stream_and_losses_are_repeated() {
        let mut s = Streams::new(&cfg(StreamScheduler::Fifo), Duration::ZERO);
        s.open_send(0, 3000);
        s.open_send(4, 3000);
        s.app_write();
        let a = s.next_chunk(1200, stream_chunk).unwrap();
        let b = s.next_chunk(1200, stream_chunk).unwrap();
        assert_eq!((a.id, b.id), (0, 0));
        s.on_lost(a.stream, a.offset, a.len, a.fin);
        s.on_acked(b.stream, b.offset, b.len, b.fin);
        let r = s.next_chunk(1200, stream_chunk).unwrap();
        assert_eq!((r.id, r.offset, r.len, r.new), (0, 0, a.len, false));
    }

    #[test]
    fn send_queue_limit_holds_bytes_until_acknowledged_and_resumes_below_low_water() {
        let mut c = cfg(StreamScheduler::Fifo);
        c.queue_limit = Some((5000, 2000));
        let mut s = Streams::new(&c, Duration::ZERO);
        s.open_send(2, UNBOUNDED);
        s.app_write();
        assert_eq!(s.buffered, 5000);
        let mut sent = Vec::new();
        while let Some(ch) = s.next_chunk(1200, stream_chunk) {
            sent.push(ch);
        }
        assert_eq!(s.unsent, 0);
        s.app_write();
        assert_eq!(
            s.buffered, 5000,
            "sent but unacknowledged bytes still fill the queue"
        );
        let mut acked = sent.into_iter();
        while s.buffered >= 2000 {
            let ch = acked.next().unwrap();
            s.on_acked(ch.stream, ch.offset, ch.len, ch.fin);
            if s.buffered >= 2000 {
                s.app_write();
                assert!(s.buffered < 5000, "paused until below low water");
            }
        }
        s.app_write();
        assert_eq!(s.buffered, 5000);
    }
}
