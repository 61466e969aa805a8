//! [`TcpFlow`]: both ends of every connection of one TCP flow, the workload on top, an
//! optional split-connection PEP in the middle, and the flow's report.
//!
//! With a PEP the engine routes everything the client and the server send to `Side::Middle`;
//! the PEP's legs answer each of them (see [`pep`](super::pep)). Reports stay end to end:
//! bytes reach the real receiving application, and handshake, first byte and completion are
//! timed at the client. `packets_lost`, `congestion_events` and `first_congestion_s` add the
//! PEP leg that carries the data towards the receiver to the data sender's own (each
//! retransmission repairs a loss somewhere on the path); `packets_sent` and the sender
//! samples stay the data sender's.
//!
//! A download runs in rounds (`connections` of them, one after the other). An HTTP/2-style
//! round is one connection; an HTTP/1.1 round opens up to `k` connections at once and hands
//! each free connection the next unassigned request (lowest connection first, since the
//! connections are driven in index order). A round's [`ConnectionReport`](crate::agent::ConnectionReport) takes the first
//! connection's handshake, the round's first response byte and the end of its last response.

use std::time::Duration;

use super::app::{response_layout, response_sizes, Script};
use super::endpoint::Endpoint;
use super::pep::{PepHeld, PepParams, Split};
use super::segment::{Segment, ACK, SYN};
use super::{Params, TcpFlowConfig, TcpFlowError};
use crate::agent::{EcnReport, FlowReport, SenderSample, Side, Transmit};
use crate::driver::{Connections, FlowDriver, Lifecycle};
use crate::workload::Workload;

/// One connection: its two endpoints and their scripts.
#[derive(Debug)]
struct Conn {
    client: Endpoint,
    /// Created by the first SYN that reaches the server.
    server: Option<Endpoint>,
    client_app: Script,
    server_app: Script,
    /// The PEP's legs, created by the first SYN that reaches the PEP.
    pep: Option<Split>,
    /// Response-stream offsets at which each multiplexed response is complete (empty for
    /// HTTP/1.1, whose responses end with their exchange).
    stream_ends: Vec<u64>,
    /// The download round (index into the flow's reports) this connection belongs to.
    round: usize,
    /// The round's first connection: its handshake is the round's.
    first_in_round: bool,
    /// HTTP/1.1: the response this connection is reading now.
    current: Option<usize>,
    payload_read: u64,
    complete: bool,
    server_closed: bool,
}

impl Conn {
    fn endpoint(&mut self, side: Side) -> Option<&mut Endpoint> {
        match side {
            Side::Client => Some(&mut self.client),
            Side::Server => self.server.as_mut(),
            Side::Middle => None,
        }
    }

    fn endpoint_ref(&self, side: Side) -> Option<&Endpoint> {
        match side {
            Side::Client => Some(&self.client),
            Side::Server => self.server.as_ref(),
            Side::Middle => None,
        }
    }
}

/// A TCP flow: a client and a server running the model, with the configured workload.
pub type TcpFlow = FlowDriver<TcpConnections>;

/// Every connection of one TCP flow, its PEP and its applications (the lifecycle is the
/// [`FlowDriver`]'s).
#[derive(Debug)]
pub struct TcpConnections {
    p: Params,
    pep: Option<PepParams>,
    conns: Vec<Conn>,
    /// Segments that failed to decode (dropped).
    malformed: u64,
    /// Segments for no known connection state (ignored).
    stray: u64,
    /// Per side: the application does not read (a slow reader, for flow-control studies).
    reading_paused: [bool; 3],
    /// HTTP/1.1 downloads: parallel connections per round (`None`: HTTP/2-style).
    http1: Option<u32>,
    /// Sizes of one round's responses (empty for bulk workloads).
    response_sizes: Vec<u64>,
    /// HTTP/1.1: the next request of the current round not yet handed to a connection.
    next_request: usize,
    /// Per round, per response: when the client had read all of it.
    response_done: Vec<Vec<Option<Duration>>>,
}

impl FlowDriver<TcpConnections> {
    /// Validates the configuration; nothing is sent before `cfg.start`.
    pub fn new(cfg: TcpFlowConfig) -> Result<TcpFlow, TcpFlowError> {
        let mut p = Params::new(&cfg.knobs, cfg.plan.cc)?;
        p.seed = cfg.seed;
        let pep = PepParams::from_config(&cfg)?;
        let (http1, response_sizes) = match cfg.plan.workload {
            Workload::Download { size, streams, .. } => {
                (cfg.knobs.http1_parallel(), response_sizes(size, streams))
            }
            Workload::Bulk { .. } => (None, Vec::new()),
        };
        let conns = TcpConnections {
            p,
            pep,
            conns: Vec::new(),
            malformed: 0,
            stray: 0,
            reading_paused: [false; 3],
            http1,
            response_sizes,
            next_request: 0,
            response_done: Vec::new(),
        };
        Ok(FlowDriver::from_parts(cfg.plan, conns))
    }

    /// Per download round, per response (in request order): the virtual time at which the
    /// client had read the whole response, `None` while it has not.
    pub fn response_completions(&self) -> &[Vec<Option<Duration>>] {
        &self.connections().response_done
    }

    /// The application at `side` stops reading: received data stays in the receive buffer
    /// and closes the window.
    pub fn pause_reading(&mut self, side: Side) {
        self.parts_mut().0.reading_paused[side.index()] = true;
    }

    /// The application at `side` reads again, starting at `now`.
    pub fn resume_reading(&mut self, side: Side, now: Duration) {
        let (conns, flow) = self.parts_mut();
        conns.reading_paused[side.index()] = false;
        flow.wake_at(side, now);
    }

    /// Most bytes the PEP held at once per direction (zero without a PEP).
    pub fn pep_max_held(&self) -> PepHeld {
        self.connections()
            .conns
            .iter()
            .filter_map(|c| c.pep.as_ref())
            .map(Split::max_held)
            .fold(PepHeld::default(), |m, h| PepHeld {
                upstream: m.upstream.max(h.upstream),
                downstream: m.downstream.max(h.downstream),
            })
    }

    /// Whether a PEP splits the flow's connections.
    pub fn has_pep(&self) -> bool {
        self.connections().pep.is_some()
    }

    /// Segments dropped because they did not decode.
    pub fn malformed_segments(&self) -> u64 {
        self.connections().malformed
    }

    /// Segments ignored because no connection state matched them.
    pub fn stray_segments(&self) -> u64 {
        self.connections().stray
    }

    /// The MSS both ends use.
    pub fn mss(&self) -> u32 {
        self.connections().p.mss
    }

    /// Receive window the data receiver of the newest connection offers now.
    pub fn receive_window(&self) -> u64 {
        let side = self.lifecycle().workload().data_receiver();
        self.connections()
            .conns
            .last()
            .and_then(|c| c.endpoint_ref(side))
            .map_or(0, |e| e.receive_window())
    }
}

impl TcpConnections {
    /// Where `side`'s segments go: the PEP intercepts both ends.
    fn peer_of(&self, side: Side) -> Side {
        if self.pep.is_some() {
            Side::Middle
        } else {
            side.opposite()
        }
    }

    /// Records the current round's completion once all its connections are complete.
    fn maybe_round_complete(&mut self, flow: &mut Lifecycle, now: Duration) {
        let Some(round) = flow.reports().len().checked_sub(1) else {
            return;
        };
        let mut conns = self.conns.iter().filter(|c| c.round == round).peekable();
        if conns.peek().is_none() || !conns.all(|c| c.complete) {
            return;
        }
        flow.completed(round, now);
    }

    fn sum_sender<T: std::iter::Sum<T>>(&self, sender: Side, f: impl Fn(&Endpoint) -> T) -> T {
        self.conns
            .iter()
            .filter_map(|c| c.endpoint_ref(sender))
            .map(f)
            .sum()
    }

    /// The data sender's endpoints plus the PEP legs that carry the data onwards.
    fn data_senders(&self, sender: Side) -> impl Iterator<Item = &Endpoint> {
        let receiver = sender.opposite();
        let own = self
            .conns
            .iter()
            .filter_map(move |c| c.endpoint_ref(sender));
        own.chain(
            self.conns
                .iter()
                .filter_map(move |c| c.pep.as_ref().map(|s| s.leg_towards(receiver))),
        )
    }
}

impl Connections for TcpConnections {
    const RUN_ON_TIMEOUT: bool = false;
    const RUN_CLIENT_ON_OPEN: bool = false;

    fn has_side(&self, _side: Side) -> bool {
        // The PEP is `Side::Middle`; without one, nothing ever arrives there.
        true
    }

    /// Starts a round: its connection(s) send their SYNs now.
    fn open(&mut self, flow: &mut Lifecycle, now: Duration) {
        let (tls, w, http1) = (self.p.knobs.tls, flow.workload(), self.http1.is_some());
        let (stream_ends, parallel) = match (w, self.http1) {
            // No more connections than requests: a spare one would only shake hands.
            (Workload::Download { streams, .. }, Some(k)) => {
                (Vec::new(), k.clamp(1, streams.max(1)))
            }
            (Workload::Download { size, streams, .. }, None) => (response_layout(size, streams), 1),
            _ => (Vec::new(), 1),
        };
        let round = flow.reports().len();
        for n in 0..parallel {
            let Ok(id) = u32::try_from(self.conns.len()) else {
                flow.fail("too many connections".into());
                return;
            };
            self.conns.push(Conn {
                client: Endpoint::connect(id, self.p, now),
                server: None,
                client_app: Script::client(tls, w, http1),
                server_app: Script::server(tls, w, http1),
                pep: None,
                stream_ends: stream_ends.clone(),
                round,
                first_in_round: n == 0,
                current: None,
                payload_read: 0,
                complete: false,
                server_closed: false,
            });
        }
        self.next_request = 0;
        self.response_done
            .push(vec![None; self.response_sizes.len()]);
        flow.begin_connection(now);
    }

    fn on_datagram(
        &mut self,
        side: Side,
        from: Side,
        now: Duration,
        payload: Vec<u8>,
        ecn: netem::Ecn,
    ) -> bool {
        let seg = match Segment::decode(&payload) {
            Ok(s) => s,
            Err(_) => {
                self.malformed += 1;
                return false;
            }
        };
        let (p, pep) = (self.p, self.pep);
        let Some(c) = self.conns.get_mut(seg.conn as usize) else {
            self.stray += 1;
            return false;
        };
        let fresh_syn = seg.has(SYN) && !seg.has(ACK);
        match (side, c.server.as_mut()) {
            (Side::Client, _) => c.client.on_segment(&seg, ecn, now),
            (Side::Server, Some(ep)) => ep.on_segment(&seg, ecn, now),
            (Side::Server, None) if fresh_syn => {
                c.server = Some(Endpoint::accept(seg.conn, p, &seg, now));
            }
            (Side::Middle, _) => match (c.pep.as_mut(), pep) {
                (Some(split), _) => match split.leg(from) {
                    Some(ep) => ep.on_segment(&seg, ecn, now),
                    None => {
                        self.stray += 1;
                        return false;
                    }
                },
                // A transparent proxy: the client's SYN is answered at once.
                (None, Some(pp)) if from == Side::Client && fresh_syn => {
                    c.pep = Some(Split::new(pp, &seg, now));
                }
                (None, _) => {
                    self.stray += 1;
                    return false;
                }
            },
            (Side::Server, None) => {
                self.stray += 1;
                return false;
            }
        }
        true
    }

    fn stop(&mut self, side: Side, _now: Duration) {
        // The traffic generator stops: buffered data must not keep flowing, so the sender
        // aborts its connections (RST).
        for c in &mut self.conns {
            if let Some(ep) = c.endpoint(side) {
                ep.reset();
            }
        }
    }

    fn on_timeout(&mut self, side: Side, now: Duration) {
        for c in &mut self.conns {
            if let Some(ep) = c.endpoint(side) {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.on_timeout(now);
                }
            }
            if let (Side::Middle, Some(s)) = (side, c.pep.as_mut()) {
                s.on_timeout(now);
            }
        }
    }

    /// Runs the applications of `side` on every connection after input (the PEP's relay for
    /// `Side::Middle`).
    fn drive(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) {
        if side == Side::Middle {
            for s in self.conns.iter_mut().filter_map(|c| c.pep.as_mut()) {
                s.relay(now);
            }
            return;
        }
        let read_max = if self.reading_paused[side.index()] {
            0
        } else {
            u64::MAX
        };
        let receiver = flow.workload().data_receiver();
        let download = flow.workload().is_download();
        let stopped = flow.stopped();
        let mut failure = None;
        for (i, c) in self.conns.iter_mut().enumerate() {
            let complete = c.complete;
            let Some(ep) = c.endpoint(side) else { continue };
            if !complete && !stopped {
                if let Some(why) = ep.failure() {
                    failure.get_or_insert(format!("{side:?} connection {i}: {why}"));
                } else if ep.reset_by_peer() {
                    failure.get_or_insert(format!("{side:?} connection {i}: reset by peer"));
                }
            }
            if !ep.is_established() {
                continue;
            }
            // HTTP/1.1 runs the client's script again after appending the next exchange.
            loop {
                let (app, ep) = match side {
                    Side::Client => (&mut c.client_app, &mut c.client),
                    Side::Server => match c.server.as_mut() {
                        Some(s) => (&mut c.server_app, s),
                        None => break,
                    },
                    Side::Middle => break,
                };
                let prog = app.run(ep, read_max, now);
                if side == Side::Client && prog.ready && c.first_in_round {
                    flow.handshake_done(c.round, now, false);
                }
                flow.read(c.round, side, prog.payload, now);
                if side == receiver {
                    c.payload_read += prog.payload;
                }
                if side == Side::Client && download && !c.complete {
                    let done = &mut self.response_done[c.round];
                    // Multiplexed responses end at known offsets of the one byte stream.
                    for (k, &end) in c.stream_ends.iter().enumerate() {
                        if end <= c.payload_read {
                            if let Some(d) = done.get_mut(k).filter(|d| d.is_none()) {
                                *d = Some(now);
                            }
                        }
                    }
                    let streams_done = c
                        .stream_ends
                        .iter()
                        .filter(|&&e| e <= c.payload_read)
                        .count();
                    if prog.done && self.http1.is_some() {
                        // The script is done only between exchanges: the current response
                        // is complete and the connection is free for the next request.
                        if let Some(d) = c.current.take().and_then(|k| done.get_mut(k)) {
                            *d = Some(now);
                        }
                        if let Some(&size) = self.response_sizes.get(self.next_request) {
                            c.current = Some(self.next_request);
                            self.next_request += 1;
                            c.client_app.push_client_exchange(size);
                            c.server_app.push_server_exchange(size);
                            continue;
                        }
                    }
                    if prog.done && streams_done == c.stream_ends.len() {
                        // Every request of the round is served (HTTP/1.1: handed out and
                        // this connection's last one read): the connection is closed.
                        c.complete = true;
                        c.client.close();
                    }
                }
                if side == Side::Server && prog.done && !c.server_closed {
                    if let Some(ep) = c.server.as_mut().filter(|e| e.fin_received()) {
                        // The client closed after its download: close our half too.
                        c.server_closed = true;
                        ep.close();
                    }
                }
                break;
            }
        }
        if let Some(f) = failure {
            flow.fail(f);
        }
        self.maybe_round_complete(flow, now);
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
        if side == Side::Middle {
            // Each leg addresses its own peer.
            return self
                .conns
                .iter_mut()
                .filter_map(|c| c.pep.as_mut())
                .find_map(|s| s.poll_transmit(now));
        }
        let to = self.peer_of(side);
        let mut t = self
            .conns
            .iter_mut()
            .filter_map(|c| c.endpoint(side))
            .find_map(|ep| ep.poll_transmit(now))?;
        t.to = to;
        Some(t)
    }

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        let eps = self
            .conns
            .iter()
            .filter_map(|c| c.endpoint_ref(side))
            .filter_map(|e| e.poll_timeout());
        let peps = self
            .conns
            .iter()
            .filter_map(|c| c.pep.as_ref())
            .filter_map(|s| s.poll_timeout());
        let peps = peps.filter(|_| side == Side::Middle);
        eps.chain(peps).min()
    }

    fn sample(&self, sender: Side) -> SenderSample {
        match self.conns.last().and_then(|c| c.endpoint_ref(sender)) {
            Some(e) => {
                let (cwnd, srtt, in_flight) = e.sender_state();
                SenderSample {
                    cwnd,
                    srtt,
                    in_flight,
                }
            }
            None => SenderSample::default(),
        }
    }

    fn report(&self, flow: &Lifecycle, r: &mut FlowReport) {
        let sender = flow.data_sender();
        let receiver = sender.opposite();
        let first_congestion = self
            .data_senders(sender)
            .filter_map(|e| e.sender_stats().first_congestion)
            .min();
        r.first_congestion_s = first_congestion.map(|t| t.as_secs_f64());
        r.packets_sent = self.sum_sender(sender, |e| e.sender_stats().data_segments);
        r.packets_lost = self
            .data_senders(sender)
            .map(|e| e.sender_stats().retransmissions)
            .sum();
        r.congestion_events = self
            .data_senders(sender)
            .map(|e| e.sender_stats().congestion_events)
            .sum();
        r.ack_frames_sent = self
            .conns
            .iter()
            .filter_map(|c| c.endpoint_ref(receiver))
            .map(|e| e.pure_acks())
            .sum();
        r.final_mtu = u16::try_from(self.p.mss).unwrap_or(u16::MAX);
        if self.p.knobs.ecn {
            r.ecn = Some(EcnReport {
                capable: self
                    .conns
                    .iter()
                    .filter_map(|c| c.endpoint_ref(sender))
                    .all(|e| e.ecn_ok()),
                ce_received: self.sum_sender(receiver, |e| e.ce_received()),
                ce_congestion_events: self
                    .data_senders(sender)
                    .map(|e| e.sender_stats().ecn_reductions)
                    .sum(),
            });
        }
        // The TCP model writes no qlog and counts no MAX_DATA frames: the defaults stand.
    }

    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        // The TCP checksum covers the payload: the receiving host drops the segment.
        false
    }
}
