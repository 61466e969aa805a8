//! [`TcpFlow`]: both ends of every connection of one TCP flow, the workload on top, and the
//! flow's report.

use std::time::Duration;

use super::app::{response_layout, Script};
use super::endpoint::Endpoint;
use super::segment::{Segment, ACK, SYN};
use super::{Params, TcpFlowConfig, TcpFlowError, TcpWorkload};
use crate::agent::{ConnectionReport, FlowAgent, FlowReport, SenderSample, Side, Transmit};

/// One connection: its two endpoints and their scripts.
#[derive(Debug)]
struct Conn {
    client: Endpoint,
    /// Created by the first SYN that reaches the server.
    server: Option<Endpoint>,
    client_app: Script,
    server_app: Script,
    /// Response-stream offsets at which each multiplexed response is complete.
    stream_ends: Vec<u64>,
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
#[derive(Debug)]
pub struct TcpFlow {
    cfg: TcpFlowConfig,
    p: Params,
    conns: Vec<Conn>,
    reports: Vec<ConnectionReport>,
    delivered: u64,
    last_byte: Option<Duration>,
    stopped: bool,
    finished: bool,
    error: Option<String>,
    /// Segments that failed to decode (dropped).
    malformed: u64,
    /// Segments for no known connection state (ignored).
    stray: u64,
    needs_drive: [bool; 2],
}

impl TcpFlow {
    /// Validates the configuration; nothing is sent before `cfg.start`.
    pub fn new(cfg: TcpFlowConfig) -> Result<TcpFlow, TcpFlowError> {
        let p = Params::from_config(&cfg)?;
        Ok(TcpFlow {
            cfg,
            p,
            conns: Vec::new(),
            reports: Vec::new(),
            delivered: 0,
            last_byte: None,
            stopped: false,
            finished: false,
            error: None,
            malformed: 0,
            stray: 0,
            needs_drive: [false; 2],
        })
    }

    /// Segments dropped because they did not decode.
    pub fn malformed_segments(&self) -> u64 {
        self.malformed
    }

    /// Segments ignored because no connection state matched them.
    pub fn stray_segments(&self) -> u64 {
        self.stray
    }

    /// The MSS both ends use.
    pub fn mss(&self) -> u32 {
        self.p.mss
    }

    /// Receive window the data receiver of the newest connection offers now.
    pub fn receive_window(&self) -> u64 {
        let side = other(self.data_sender());
        self.conns.last().and_then(|c| c.endpoint_ref(side)).map_or(0, |e| e.receive_window())
    }

    fn data_sender(&self) -> Side {
        match self.cfg.workload {
            TcpWorkload::BulkUpload => Side::Client,
            _ => Side::Server,
        }
    }

    fn connections_wanted(&self) -> usize {
        match self.cfg.workload {
            TcpWorkload::Download { connections, .. } => connections.max(1) as usize,
            _ => 1,
        }
    }

    fn connect(&mut self, now: Duration) {
        let id = self.conns.len() as u32;
        let (tls, w) = (self.cfg.tls, self.cfg.workload);
        let stream_ends = match w {
            TcpWorkload::Download { size, streams, .. } => response_layout(size, streams),
            _ => Vec::new(),
        };
        self.conns.push(Conn {
            client: Endpoint::connect(id, self.p, now),
            server: None,
            client_app: Script::client(tls, w),
            server_app: Script::server(tls, w),
            stream_ends,
            payload_read: 0,
            complete: false,
            server_closed: false,
        });
        self.reports.push(ConnectionReport { started_s: now.as_secs_f64(), ..Default::default() });
    }

    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
        self.finished = true;
    }

    /// Runs the applications of `side` on every connection after input.
    fn drive(&mut self, side: Side, now: Duration) {
        let receiver = other(self.data_sender());
        let download = matches!(self.cfg.workload, TcpWorkload::Download { .. });
        let mut failure = None;
        for (i, c) in self.conns.iter_mut().enumerate() {
            let complete = c.complete;
            let Some(ep) = c.endpoint(side) else { continue };
            if !complete && !self.stopped {
                if let Some(why) = ep.failure() {
                    failure.get_or_insert(format!("{side:?} connection {i}: {why}"));
                } else if ep.reset_by_peer() {
                    failure.get_or_insert(format!("{side:?} connection {i}: reset by peer"));
                }
            }
            if !ep.is_established() {
                continue;
            }
            let (app, ep) = match side {
                Side::Client => (&mut c.client_app, &mut c.client),
                Side::Server => match c.server.as_mut() {
                    Some(s) => (&mut c.server_app, s),
                    None => continue,
                },
                Side::Middle => continue,
            };
            let prog = app.run(ep);
            let r = &mut self.reports[i];
            if side == Side::Client && prog.ready && r.handshake_s.is_none() {
                r.handshake_s = Some(now.as_secs_f64() - r.started_s);
            }
            if side == receiver && prog.payload > 0 {
                self.delivered += prog.payload;
                self.last_byte = Some(now);
                c.payload_read += prog.payload;
                if side == Side::Client && r.time_to_first_byte_s.is_none() {
                    r.time_to_first_byte_s = Some(now.as_secs_f64() - r.started_s);
                }
            }
            let streams_done = c.stream_ends.iter().filter(|&&e| e <= c.payload_read).count();
            if side == Side::Client && download && prog.done && !c.complete && streams_done == c.stream_ends.len() {
                c.complete = true;
                r.completion_s = Some(now.as_secs_f64() - r.started_s);
                ep.close();
            }
            if side == Side::Server && prog.done && ep.fin_received() && !c.server_closed {
                // The client closed after its download: close our half too.
                c.server_closed = true;
                ep.close();
            }
        }
        if let Some(f) = failure {
            self.fail(f);
        }
        self.maybe_next_connection(now);
    }

    fn maybe_next_connection(&mut self, now: Duration) {
        if self.finished || self.conns.is_empty() || !matches!(self.cfg.workload, TcpWorkload::Download { .. }) {
            return;
        }
        if self.conns.iter().all(|c| c.complete) {
            if self.conns.len() < self.connections_wanted() {
                // No TCP Fast Open: every connection pays its handshakes again.
                self.connect(now);
            } else {
                self.finished = true;
            }
        }
    }

    fn app_timer(&self, side: Side) -> Option<Duration> {
        let mut t = None;
        if side == Side::Client && self.conns.is_empty() && !self.finished {
            t = Some(self.cfg.start);
        }
        if let Some(stop) = self.cfg.stop {
            if !self.stopped && side == self.data_sender() {
                t = Some(t.map_or(stop, |x: Duration| x.min(stop)));
            }
        }
        t
    }

    fn sum_sender<T: std::iter::Sum<T>>(&self, f: impl Fn(&Endpoint) -> T) -> T {
        let side = self.data_sender();
        self.conns.iter().filter_map(|c| c.endpoint_ref(side)).map(f).sum()
    }
}

fn other(side: Side) -> Side {
    side.opposite()
}

impl FlowAgent for TcpFlow {
    fn handle_datagram(&mut self, side: Side, _from: Side, now: Duration, payload: Vec<u8>) {
        let seg = match Segment::decode(&payload) {
            Ok(s) => s,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        };
        let p = self.p;
        let Some(c) = self.conns.get_mut(seg.conn as usize) else {
            self.stray += 1;
            return;
        };
        match (side, c.server.as_mut()) {
            (Side::Client, _) => c.client.on_segment(&seg, now),
            (Side::Server, Some(ep)) => ep.on_segment(&seg, now),
            (Side::Server, None) if seg.has(SYN) && !seg.has(ACK) => {
                c.server = Some(Endpoint::accept(seg.conn, p, &seg, now));
            }
            (Side::Server, None) | (Side::Middle, _) => {
                self.stray += 1;
                return;
            }
        }
        self.needs_drive[side.index()] = true;
    }

    fn handle_timeout(&mut self, side: Side, now: Duration) {
        if side == Side::Client && self.conns.is_empty() && !self.finished && now >= self.cfg.start {
            self.connect(now);
        }
        if let Some(stop) = self.cfg.stop {
            if !self.stopped && now >= stop && side == self.data_sender() {
                // The traffic generator stops: buffered data must not keep flowing, so the
                // sender aborts its connections (RST).
                self.stopped = true;
                for c in &mut self.conns {
                    if let Some(ep) = c.endpoint(side) {
                        ep.reset();
                    }
                }
                if !matches!(self.cfg.workload, TcpWorkload::Download { .. }) {
                    self.finished = true;
                }
            }
        }
        for c in &mut self.conns {
            if let Some(ep) = c.endpoint(side) {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.on_timeout(now);
                }
            }
        }
        self.needs_drive[side.index()] = true;
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
        if std::mem::take(&mut self.needs_drive[side.index()]) {
            self.drive(side, now);
        }
        let mut t = self.conns.iter_mut().filter_map(|c| c.endpoint(side)).find_map(|ep| ep.poll_transmit(now))?;
        t.to = side.opposite();
        Some(t)
    }

    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        // The TCP checksum covers the payload: the receiving host drops the segment.
        false
    }

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        let eps = self.conns.iter().filter_map(|c| c.endpoint_ref(side)).filter_map(|e| e.poll_timeout());
        eps.chain(self.app_timer(side)).min()
    }

    fn delivered_bytes(&self) -> u64 {
        self.delivered
    }

    fn sample(&self) -> SenderSample {
        let side = self.data_sender();
        match self.conns.last().and_then(|c| c.endpoint_ref(side)) {
            Some(e) => {
                let (cwnd, srtt, in_flight) = e.sender_state();
                SenderSample { cwnd, srtt, in_flight }
            }
            None => SenderSample::default(),
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn report(&self) -> FlowReport {
        let receiver = other(self.data_sender());
        let sender = self.data_sender();
        let first_congestion = self
            .conns
            .iter()
            .filter_map(|c| c.endpoint_ref(sender))
            .filter_map(|e| e.sender_stats().first_congestion)
            .min();
        FlowReport {
            bytes_delivered: self.delivered,
            first_packet_s: self.reports.first().map(|r| r.started_s),
            last_byte_s: self.last_byte.map(|t| t.as_secs_f64()),
            first_congestion_s: first_congestion.map(|t| t.as_secs_f64()),
            packets_sent: self.sum_sender(|e| e.sender_stats().data_segments),
            packets_lost: self.sum_sender(|e| e.sender_stats().retransmissions),
            congestion_events: self.sum_sender(|e| e.sender_stats().congestion_events),
            ack_frames_sent: self.conns.iter().filter_map(|c| c.endpoint_ref(receiver)).map(|e| e.pure_acks()).sum(),
            max_data_frames_sent: 0,
            max_stream_data_frames_sent: 0,
            final_mtu: u16::try_from(self.p.mss).unwrap_or(u16::MAX),
            connections: self.reports.clone(),
            error: self.error.clone(),
        }
    }
}
