//! One end of one TCP connection: the three-way handshake (with SYN / SYN-ACK retransmission),
//! RST, zero-window probes and their answers, and the glue that turns the sender's and
//! receiver's decisions into encoded segments.

use std::time::Duration;

use super::ecn::{self, EcnState};
use super::receiver::Receiver;
use super::segment::{Segment, TsClock, ACK, CWR, ECE, FIN, MAX_SACK_BLOCKS, RST, SACK_OK, SYN};
use super::sender::{AckInfo, Sender, SenderStats};
use super::Params;
use crate::agent::{Side, Transmit};

/// Label of the seed stream that places an endpoint's timestamp ticks.
const TS_PHASE_STREAM: u64 = 0x7473;

/// Connection state (closing states need no names: FIN is data-like and both halves keep
/// answering until the flow ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    SynSent,
    SynRcvd,
    Established,
    /// Reset by either end, or given up.
    Closed,
}

/// One endpoint of one connection.
#[derive(Debug)]
pub(crate) struct Endpoint {
    p: Params,
    conn: u32,
    state: State,
    snd: Sender,
    /// Known once the peer's SYN has been seen.
    rcv: Option<Receiver>,
    syn_pending: bool,
    hs_first_sent: Option<Duration>,
    hs_retries: u32,
    hs_deadline: Option<Duration>,
    rst_pending: bool,
    reset_by_peer: bool,
    failed: Option<&'static str>,
    pure_acks: u64,
    ecn: EcnState,
    /// DCTCP's CE echo: an ACK held back when the CE state changed, sent before the next
    /// segment (acknowledgement number, ECE).
    prior_ack: Option<(u64, bool)>,
    /// This end's timestamps clock.
    ts_clock: TsClock,
}

impl Endpoint {
    /// A client that sends its SYN at the next poll.
    pub(crate) fn connect(conn: u32, p: Params, now: Duration) -> Self {
        Self::new(conn, p, now, State::SynSent, None)
    }

    /// A server answering the SYN `syn`.
    pub(crate) fn accept(conn: u32, p: Params, syn: &Segment, now: Duration) -> Self {
        let mut rcv = Receiver::new(&p, syn.seq, now);
        if let Some((val, _)) = syn.ts {
            rcv.set_ts_recent(val);
        }
        let mut e = Self::new(conn, p, now, State::SynRcvd, Some(rcv));
        e.snd.set_peer_window(syn.window);
        e.ecn = EcnState::for_syn(syn).with_controller(&p.controller);
        if e.ecn.ok() {
            e.snd.enable_ecn();
        }
        e
    }

    fn new(conn: u32, p: Params, now: Duration, state: State, rcv: Option<Receiver>) -> Self {
        // One seed per connection and side (a client's and a server's differ).
        let seed =
            crate::seeded::sub_seed(p.seed, (u64::from(conn) << 1) | u64::from(rcv.is_some()));
        // Where the host's millisecond ticks fall is arbitrary: drawn per run, like a real
        // host's, so the timestamp granularity varies between repetitions as it does there.
        let ts_phase = crate::seeded::sub_seed(seed, TS_PHASE_STREAM) % 1_000_000;
        Endpoint {
            p,
            conn,
            state,
            snd: Sender::new(&p, now, seed),
            rcv,
            syn_pending: true,
            hs_first_sent: None,
            hs_retries: 0,
            hs_deadline: None,
            rst_pending: false,
            reset_by_peer: false,
            failed: None,
            pure_acks: 0,
            ecn: EcnState::default().with_controller(&p.controller),
            prior_ack: None,
            ts_clock: TsClock::new(Duration::from_nanos(ts_phase)),
        }
    }

    /// The handshake is complete and the connection not reset.
    pub(crate) fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// Why the connection was given up, if it was.
    pub(crate) fn failure(&self) -> Option<&'static str> {
        self.failed
    }

    /// The peer reset the connection.
    pub(crate) fn reset_by_peer(&self) -> bool {
        self.reset_by_peer
    }

    /// Sender counters.
    pub(crate) fn sender_stats(&self) -> SenderStats {
        self.snd.stats()
    }

    /// Pure ACKs sent.
    pub(crate) fn pure_acks(&self) -> u64 {
        self.pure_acks
    }

    /// ECN was negotiated on this connection.
    pub(crate) fn ecn_ok(&self) -> bool {
        self.ecn.ok()
    }

    /// CE-marked data segments this end received.
    pub(crate) fn ce_received(&self) -> u64 {
        self.ecn.ce_received()
    }

    /// (cwnd, srtt, pipe) of the sending half.
    pub(crate) fn sender_state(&self) -> (u64, Duration, u64) {
        (self.snd.cwnd(), self.snd.srtt(), self.snd.in_flight())
    }

    /// Receive window currently offered (0 before the handshake).
    pub(crate) fn receive_window(&self) -> u64 {
        self.rcv.as_ref().map_or(0, |r| r.window_size())
    }

    /// The application writes `n` more bytes.
    pub(crate) fn write(&mut self, n: u64) {
        self.snd.write(n);
    }

    /// The application closes its sending direction.
    pub(crate) fn close(&mut self) {
        self.snd.close();
    }

    /// The application aborts: a RST goes out and the connection is dead.
    pub(crate) fn reset(&mut self) {
        if self.state != State::Closed {
            self.rst_pending = true;
        }
    }

    /// The application reads at most `max` in-order bytes (the rest stays in the receive
    /// buffer and shrinks the window); returns how many it got.
    pub(crate) fn take_readable_max(&mut self, max: u64, now: Duration) -> u64 {
        self.rcv
            .as_mut()
            .map_or(0, |r| r.take_readable_max(max, now))
    }

    /// In-order bytes received and not read yet.
    pub(crate) fn unread(&self) -> u64 {
        self.rcv.as_ref().map_or(0, |r| r.unread())
    }

    /// Data bytes written by the application and acknowledged by the peer.
    pub(crate) fn acked_bytes(&self) -> u64 {
        self.snd.acked_bytes()
    }

    /// The connection is over: reset (either way) or given up.
    pub(crate) fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// The peer's FIN arrived in order.
    pub(crate) fn fin_received(&self) -> bool {
        self.rcv.as_ref().is_some_and(|r| r.fin_received())
    }

    /// Processes one incoming segment, which arrived with the IP codepoint `ecn`.
    pub(crate) fn on_segment(&mut self, seg: &Segment, ecn: netem::Ecn, now: Duration) {
        if self.state == State::Closed {
            return;
        }
        if seg.has(RST) {
            // Only a RST that matches the connection counts (RFC 5961 in spirit).
            let plausible = self.state != State::SynSent || (seg.has(ACK) && seg.ack == 1);
            if plausible {
                self.state = State::Closed;
                self.reset_by_peer = true;
            }
            return;
        }
        match self.state {
            State::SynSent => {
                if seg.has(SYN | ACK) && seg.ack == 1 {
                    self.on_syn_ack(seg, now);
                }
                return;
            }
            State::SynRcvd => {
                if seg.has(SYN) {
                    // The client did not get our SYN-ACK: answer its retransmitted SYN, echoing
                    // that SYN's timestamp so the client's RTT sample is right.
                    if let (Some((val, _)), Some(r)) = (seg.ts, self.rcv.as_mut()) {
                        r.set_ts_recent(val);
                    }
                    self.syn_pending = true;
                    return;
                }
                if !seg.has(ACK) || seg.ack != 1 {
                    return;
                }
                self.state = State::Established;
                self.hs_deadline = None;
                if let Some(rtt) = self.handshake_rtt(seg, now) {
                    self.snd.on_handshake_rtt(rtt);
                    if let Some(r) = self.rcv.as_mut() {
                        r.set_rtt(rtt);
                    }
                }
            }
            State::Established | State::Closed => {}
        }
        let Some(rcv) = self.rcv.as_mut() else { return };
        if seg.has(SYN) {
            // A retransmitted SYN or SYN-ACK: our ACK of it was lost.
            rcv.force_ack();
            return;
        }
        if let Some((val, _)) = seg.ts {
            rcv.note_ts(seg.seq, val);
        }
        let probe =
            seg.len == 0 && !seg.has(FIN) && seg.seq.saturating_add(1) == rcv.last_ack_sent();
        // A peer that has sent its FIN has no data left to probe for.
        if probe && !rcv.fin_received() {
            // A zero-window probe: RFC 9293 §3.10.7.4 answers an unacceptable segment with an
            // ACK, which carries the current window. A prober has nothing in flight, so its
            // `una` is our last ACK and the probe sits exactly one below it. Linux answers
            // any older segment; matching only the probe spares stale, reordered pure ACKs
            // an extra duplicate ACK (Linux undoes what those cause; the model does not).
            rcv.force_ack();
        }
        if seg.has(ACK) {
            let info = AckInfo {
                ack: seg.ack,
                window: seg.window,
                sacks: seg.sack_blocks(),
                ts_age: seg.ts.and_then(|(_, ecr)| self.ts_clock.elapsed(ecr, now)),
                pure: seg.len == 0 && !seg.has(FIN),
                ece: self.ecn.echoed(seg),
            };
            self.snd.on_ack(info, now);
        }
        // Only data the receiver takes (not a whole duplicate) is checked, as Linux does on
        // in-order and out-of-order arrival.
        let owed = if seg.len > 0 && seg.seq + u64::from(seg.len) > rcv.ack() {
            self.ecn.on_data(seg, ecn)
        } else {
            ecn::EcnAck::default()
        };
        if owed.quickack {
            rcv.enter_quickack(2);
        }
        if let Some(ece) = owed.prior_ece {
            // dctcp_ece_ack_update: an ACK the receiver was holding back reports the earlier
            // segments with their own CE state before this one changes it.
            if rcv.timeout().is_some() || rcv.ack_due() {
                self.prior_ack = Some((rcv.ack(), ece));
            }
        }
        if seg.len > 0 || seg.has(FIN) {
            if let Some((_, ecr)) = seg.ts {
                if let Some(sample) = self.ts_clock.elapsed(ecr, now).filter(|_| seg.len > 0) {
                    rcv.on_ts_echo(ecr, sample, seg.len);
                }
            }
            rcv.on_data(seg.seq, seg.len, seg.has(FIN), now);
        }
        if owed.now {
            rcv.force_ack();
        }
        if seg.len > 0 {
            rcv.size_window_on_arrival();
        }
    }

    fn on_syn_ack(&mut self, seg: &Segment, now: Duration) {
        let mut rcv = Receiver::new(&self.p, seg.seq, now);
        if let Some((val, _)) = seg.ts {
            rcv.set_ts_recent(val);
        }
        if let Some(rtt) = self.handshake_rtt(seg, now) {
            self.snd.on_handshake_rtt(rtt);
            rcv.set_rtt(rtt);
        }
        self.snd.set_peer_window(seg.window);
        self.ecn = EcnState::for_syn_ack(self.p.knobs.ecn, seg).with_controller(&self.p.controller);
        if self.ecn.ok() {
            self.snd.enable_ecn();
        }
        rcv.force_ack();
        self.rcv = Some(rcv);
        self.state = State::Established;
        self.hs_deadline = None;
    }

    /// RTT of the handshake exchange: from our SYN / SYN-ACK's send time if it was sent once
    /// (Karn), else from the timestamp echo in whole milliseconds, at least one (Linux's
    /// tcp_ack_update_rtt and tcp_synack_rtt_meas).
    fn handshake_rtt(&self, seg: &Segment, now: Duration) -> Option<Duration> {
        if self.hs_retries == 0 {
            if let Some(t) = self.hs_first_sent {
                return Some(now.saturating_sub(t));
            }
        }
        let (_, ecr) = seg.ts?;
        self.ts_clock
            .elapsed(ecr, now)
            .map(|d| d.max(Duration::from_millis(1)))
    }

    /// Timers due at `now`.
    pub(crate) fn on_timeout(&mut self, now: Duration) {
        match self.state {
            State::SynSent | State::SynRcvd => {
                if self.hs_deadline.is_some_and(|t| t <= now) {
                    self.hs_deadline = None;
                    self.hs_retries += 1;
                    if self.hs_retries > self.p.syn_retries {
                        self.give_up("handshake timed out");
                    } else {
                        self.syn_pending = true;
                    }
                }
            }
            State::Established => {
                if !self.snd.on_timeout(now) {
                    self.give_up("retransmission limit reached");
                }
                if let Some(r) = self.rcv.as_mut() {
                    r.on_timeout(now);
                }
            }
            State::Closed => {}
        }
    }

    fn give_up(&mut self, why: &'static str) {
        self.failed = Some(why);
        self.state = State::Closed;
    }

    /// Earliest timer.
    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        match self.state {
            State::SynSent | State::SynRcvd => self.hs_deadline,
            State::Established => {
                let r = self.rcv.as_ref().and_then(|r| r.timeout());
                match (self.snd.timeout(), r) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            State::Closed => None,
        }
    }

    fn ts(&self, now: Duration) -> Option<(u64, u64)> {
        let val = self.ts_clock.val(now);
        let ecr = self.rcv.as_ref().map_or(0, |r| r.ts_recent());
        self.p.knobs.timestamps.then_some((val, ecr))
    }

    /// The next segment to send, if any.
    pub(crate) fn poll_transmit(&mut self, now: Duration) -> Option<Transmit> {
        if std::mem::take(&mut self.rst_pending) {
            self.state = State::Closed;
            let ack = self.rcv.as_ref().map_or(0, |r| r.ack());
            let seg = Segment {
                conn: self.conn,
                flags: RST | ACK,
                seq: self.snd.snd_nxt(),
                ack,
                ..Default::default()
            };
            return Some(transmit(&seg));
        }
        match self.state {
            State::Closed => None,
            State::SynSent | State::SynRcvd => {
                if !std::mem::take(&mut self.syn_pending) {
                    return None;
                }
                self.hs_first_sent.get_or_insert(now);
                let backoff = 1u32 << self.hs_retries.min(16);
                self.hs_deadline = Some(now + self.p.knobs.initial_rto.saturating_mul(backoff));
                let mut seg = Segment {
                    conn: self.conn,
                    flags: SYN
                        | if self.p.knobs.sack { SACK_OK } else { 0 }
                        | self.ecn.outgoing_flags(true),
                    seq: 0,
                    window: self.p.knobs.initial_receive_window.min(65_535),
                    ts: self.ts(now),
                    ..Default::default()
                };
                if let Some(r) = self.rcv.as_mut() {
                    seg.flags |= ACK;
                    seg.ack = r.ack();
                    seg.window = r.advertise(true);
                } else {
                    seg.flags |= ecn::syn_flags(self.p.knobs.ecn, self.hs_retries > 0);
                }
                let mut t = transmit(&seg);
                t.ecn = self.ecn.codepoint(false, true);
                Some(t)
            }
            State::Established => {
                let ts = self.ts(now);
                let rcv = self.rcv.as_mut()?;
                if let Some((ack, ece)) = self.prior_ack.take() {
                    let seg = Segment {
                        conn: self.conn,
                        flags: ACK | if ece { ECE } else { 0 },
                        seq: self.snd.snd_nxt(),
                        ack,
                        window: rcv.advertise(false),
                        ts,
                        ..Default::default()
                    };
                    self.pure_acks += 1;
                    let mut t = transmit(&seg);
                    t.ecn = self.ecn.codepoint(false, false);
                    return Some(t);
                }
                let mut seg = Segment {
                    conn: self.conn,
                    flags: ACK | self.ecn.outgoing_flags(false),
                    ts,
                    ..Default::default()
                };
                // tcp_ecn_send: new data leaves ECN-capable, the first after a reduction with
                // CWR; retransmissions and pure ACKs leave Not-ECT unless the controller
                // needs ECN.
                let mut new_data = false;
                if let Some(o) = self.snd.next(now) {
                    seg.seq = o.seq;
                    seg.len = o.len;
                    if o.len > 0 {
                        rcv.on_data_sent(now);
                    }
                    if o.fin {
                        seg.flags |= FIN;
                    }
                    if self.ecn.ok() && o.len > 0 && !o.retransmission {
                        new_data = true;
                        if self.snd.take_cwr() {
                            seg.flags |= CWR;
                        }
                    }
                } else if self.snd.take_probe() {
                    // One byte below `una`: already acknowledged, so the peer only answers.
                    seg.seq = self.snd.snd_una().saturating_sub(1);
                } else if rcv.ack_due() {
                    seg.seq = self.snd.snd_nxt();
                    self.pure_acks += 1;
                } else {
                    return None;
                }
                seg.ack = rcv.ack();
                seg.window = rcv.advertise(false);
                let mut blocks = [(0, 0); MAX_SACK_BLOCKS];
                let n = rcv.sack_blocks(&mut blocks);
                seg.sack = blocks;
                seg.nsack = n as u8;
                rcv.on_ack_sent();
                let mut t = transmit(&seg);
                t.ecn = self.ecn.codepoint(new_data, false);
                Some(t)
            }
        }
    }
}

/// Encodes `seg` with its real-wire sizes.
fn transmit(seg: &Segment) -> Transmit {
    let mut bytes = Vec::with_capacity(seg.encoded_len());
    seg.encode(&mut bytes);
    let header = seg.header_wire_len();
    // The flow knows where the segment goes and fills in `to`.
    Transmit {
        bytes,
        wire_len: header + seg.len,
        payload_len: seg.len,
        header_len: header,
        to: Side::Server,
        ecn: netem::Ecn::NotEct,
    }
}
