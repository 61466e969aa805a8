//! [`QuicModelFlow`]: both ends of every connection of one model flow, the workload on top,
//! and the flow's report.
//!
//! A download runs its `connections` one after the other: the next starts the moment the
//! client has read the whole previous response (and closes that connection), resuming with
//! 0-RTT when `zero_rtt` is on and the previous connection delivered session tickets. As for
//! quinn, a connection's handshake time is the client's (first packet → server's flight
//! processed), its time to first byte the first response byte read, and its completion the
//! last byte read. "Sender" counters are the data sender's, "receiver" the data receiver's.

use std::time::Duration;

use super::app::App;
use super::connection::Endpoint;
use super::metrics::DelayHist;
use super::wire::Reader;
use super::{Params, QuicModelFlowConfig, QuicModelFlowError};
use crate::agent::{
    ConnectionReport, FlowAgent, FlowReport, ModelMetrics, SenderSample, Side, Transmit,
};
use crate::flow::FlowPlan;

/// One connection: both endpoints and their applications.
struct Conn {
    client: Endpoint,
    server: Endpoint,
    client_app: App,
    server_app: App,
    /// Index into the flow's connection reports.
    round: usize,
    complete: bool,
}

impl Conn {
    fn endpoint(&mut self, side: Side) -> Option<&mut Endpoint> {
        match side {
            Side::Client => Some(&mut self.client),
            Side::Server => Some(&mut self.server),
            Side::Middle => None,
        }
    }

    fn endpoint_ref(&self, side: Side) -> Option<&Endpoint> {
        match side {
            Side::Client => Some(&self.client),
            Side::Server => Some(&self.server),
            Side::Middle => None,
        }
    }
}

/// A flow of the QUIC research model.
pub struct QuicModelFlow {
    plan: FlowPlan,
    p: Params,
    conns: Vec<Conn>,
    /// Connections before this index are closed on both sides (skipped when polling).
    first_live: usize,
    reports: Vec<ConnectionReport>,
    delivered: u64,
    last_byte: Option<Duration>,
    /// Latest time the flow saw (closes the limited-time accounting in reports).
    now: Duration,
    stopped: bool,
    finished: bool,
    error: Option<String>,
    malformed: u64,
    stray: u64,
    needs_drive: [bool; 2],
    owd: DelayHist,
}

impl std::fmt::Debug for QuicModelFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicModelFlow")
            .field("name", &self.plan.name)
            .field("connections", &self.conns.len())
            .field("delivered", &self.delivered)
            .finish()
    }
}

impl QuicModelFlow {
    /// Builds the flow (validating the knobs); nothing is sent before `plan.start`.
    pub fn new(config: QuicModelFlowConfig) -> Result<Self, QuicModelFlowError> {
        let p = Params::new(&config.knobs, config.plan.cc)?;
        Ok(QuicModelFlow {
            plan: config.plan,
            p,
            conns: Vec::new(),
            first_live: 0,
            reports: Vec::new(),
            delivered: 0,
            last_byte: None,
            now: Duration::ZERO,
            stopped: false,
            finished: false,
            error: None,
            malformed: 0,
            stray: 0,
            needs_drive: [false; 2],
            owd: DelayHist::default(),
        })
    }

    /// Datagrams dropped because they did not decode.
    pub fn malformed_datagrams(&self) -> u64 {
        self.malformed
    }

    /// Datagrams for no known connection (ignored).
    pub fn stray_datagrams(&self) -> u64 {
        self.stray
    }

    /// Largest UDP payload of the flow's packets.
    pub fn max_udp_payload(&self) -> u32 {
        self.p.max_udp
    }

    fn data_sender(&self) -> Side {
        self.plan.workload.data_sender()
    }

    fn connect(&mut self, now: Duration) {
        let Ok(id) = u32::try_from(self.conns.len()) else {
            self.fail("too many connections".into());
            return;
        };
        // Resume when the previous connection left a ticket.
        let resumed =
            self.p.knobs.zero_rtt && self.conns.last().is_some_and(|c| c.client.got_ticket);
        // The previous connection's NEW_TOKEN frames travel with its session tickets.
        let token =
            self.p.knobs.address_token && self.conns.last().is_some_and(|c| c.client.got_ticket);
        let w = self.plan.workload;
        let sender = w.data_sender();
        let mut server = Endpoint::server(id, self.p, now, resumed, sender == Side::Server);
        if token {
            server.address_validated_by_token();
        }
        self.conns.push(Conn {
            client: Endpoint::client(id, self.p, now, resumed, sender == Side::Client),
            server,
            client_app: App::new(Side::Client, w),
            server_app: App::new(Side::Server, w),
            round: self.reports.len(),
            complete: false,
        });
        self.reports.push(ConnectionReport {
            started_s: now.as_secs_f64(),
            ..Default::default()
        });
        self.needs_drive[0] = true;
    }

    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
        self.finished = true;
    }

    /// Runs the applications of `side` after input.
    fn drive(&mut self, side: Side, now: Duration) {
        let receiver = self.plan.workload.data_receiver();
        let stop = self.stopped && side == self.data_sender();
        let mut completed = false;
        let mut failure: Option<String> = None;
        for c in self.conns[self.first_live..].iter_mut() {
            let (app, ep) = match side {
                Side::Client => (&mut c.client_app, &mut c.client),
                Side::Server => (&mut c.server_app, &mut c.server),
                Side::Middle => continue,
            };
            if ep.is_closed() {
                if ep.timed_out && !c.complete && !self.stopped && failure.is_none() {
                    failure = Some(format!("{side:?} connection lost: timed out"));
                }
                continue;
            }
            let prog = app.run(ep, now, stop);
            let r = &mut self.reports[c.round];
            if side == Side::Client && r.handshake_s.is_none() {
                if let Some(t) = c.client.handshake_complete_at {
                    r.handshake_s = Some(t.as_secs_f64() - r.started_s);
                    r.zero_rtt_accepted = c.client.resumed;
                }
            }
            if side == receiver && prog.delivered > 0 {
                self.delivered += prog.delivered;
                *r.bytes_delivered.get_or_insert(0) += prog.delivered;
                self.last_byte = Some(now);
                if side == Side::Client && r.time_to_first_byte_s.is_none() {
                    r.time_to_first_byte_s = Some(now.as_secs_f64() - r.started_s);
                }
            }
            if prog.completed && !c.complete {
                c.complete = true;
                r.completion_s = Some(now.as_secs_f64() - r.started_s);
                c.client.close();
                c.server.stop_accounting(now);
                c.client.stop_accounting(now);
                completed = true;
            }
        }
        // Skip connections that are over on both sides.
        while self
            .conns
            .get(self.first_live)
            .is_some_and(|c| c.client.is_closed() && c.server.is_closed())
        {
            self.first_live += 1;
        }
        if let Some(f) = failure {
            self.fail(f);
        }
        if completed {
            self.maybe_next_connection(now);
        }
    }

    fn maybe_next_connection(&mut self, now: Duration) {
        if self.finished || !self.plan.workload.is_download() {
            return;
        }
        if self.conns.iter().all(|c| c.complete) {
            if self.reports.len() < self.plan.workload.connections() as usize {
                self.connect(now);
                self.drive(Side::Client, now);
            } else {
                self.finished = true;
            }
        }
    }

    fn app_timer(&self, side: Side) -> Option<Duration> {
        let mut t = None;
        if side == Side::Client && self.conns.is_empty() && !self.finished {
            t = Some(self.plan.start);
        }
        if let Some(stop) = self.plan.stop {
            if !self.stopped && side == self.data_sender() {
                t = Some(t.map_or(stop, |x: Duration| x.min(stop)));
            }
        }
        t
    }

    fn sum(&self, side: Side, f: impl Fn(&Endpoint) -> u64) -> u64 {
        self.conns
            .iter()
            .filter_map(|c| c.endpoint_ref(side))
            .map(f)
            .sum()
    }
}

impl FlowAgent for QuicModelFlow {
    fn handle_datagram(&mut self, side: Side, _from: Side, now: Duration, payload: Vec<u8>) {
        self.now = self.now.max(now);
        if side == Side::Middle {
            self.stray += 1;
            return;
        }
        let conn = match Reader::new(&payload) {
            Ok((_, h)) => h.conn,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        };
        let owd = &mut self.owd;
        let Some(ep) = self
            .conns
            .get_mut(conn as usize)
            .and_then(|c| c.endpoint(side))
        else {
            self.stray += 1;
            return;
        };
        let mut record = |d: Duration| owd.record(d);
        if ep.on_datagram(&payload, now, &mut record).is_err() {
            self.malformed += 1;
        }
        self.needs_drive[side.index()] = true;
    }

    fn handle_timeout(&mut self, side: Side, now: Duration) {
        self.now = self.now.max(now);
        if side == Side::Middle {
            return;
        }
        if side == Side::Client && self.conns.is_empty() && !self.finished && now >= self.plan.start
        {
            self.connect(now);
        }
        if let Some(stop) = self.plan.stop {
            if !self.stopped && now >= stop && side == self.data_sender() {
                // The traffic generator stops: the sender closes its connections (as the
                // quinn flow does), discarding what it still holds.
                self.stopped = true;
                for c in &mut self.conns {
                    if let Some(ep) = c.endpoint(side) {
                        ep.stop_accounting(now);
                        ep.close();
                    }
                }
                if !self.plan.workload.is_download() {
                    self.finished = true;
                }
            }
        }
        for c in self.conns[self.first_live..].iter_mut() {
            if let Some(ep) = c.endpoint(side) {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.on_timeout(now);
                }
            }
        }
        self.needs_drive[side.index()] = true;
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
        self.now = self.now.max(now);
        if side == Side::Middle {
            return None;
        }
        if std::mem::take(&mut self.needs_drive[side.index()]) {
            self.drive(side, now);
        }
        let to = side.opposite();
        for c in self.conns[self.first_live..].iter_mut() {
            if let Some(ep) = c.endpoint(side) {
                if let Some(t) = ep.poll_transmit(now, to) {
                    return Some(t);
                }
            }
        }
        None
    }

    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        // quinn's AEAD discards a packet with a bit error; the model has no AEAD and its
        // encoding is shorter than the real payload, so the engine drops such a packet
        // before it arrives (the same outcome: it is lost).
        false
    }

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        if side == Side::Middle {
            return None;
        }
        let eps = self.conns[self.first_live..]
            .iter()
            .filter_map(|c| c.endpoint_ref(side))
            .filter_map(|e| e.poll_timeout());
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
                SenderSample {
                    cwnd,
                    srtt,
                    in_flight,
                }
            }
            None => SenderSample::default(),
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn report(&self) -> FlowReport {
        let (s, r) = (self.data_sender(), self.plan.workload.data_receiver());
        let first_congestion = self
            .conns
            .iter()
            .filter_map(|c| c.endpoint_ref(s))
            .filter_map(|e| e.stats.first_congestion)
            .min();
        let mut limited = [0.0f64; 3];
        for e in self.conns.iter().filter_map(|c| c.endpoint_ref(s)) {
            let l = e.limited_until(self.now);
            for (a, b) in limited.iter_mut().zip(l) {
                *a += b;
            }
        }
        let model = ModelMetrics {
            ack_frames_received: self.sum(s, |e| e.stats.ack_frames_received),
            ack_eliciting_received: self.sum(r, |e| e.stats.ack_eliciting_received),
            data_blocked_frames_sent: self.sum(s, |e| e.stats.data_blocked_sent),
            stream_data_blocked_frames_sent: self.sum(s, |e| e.stats.stream_data_blocked_sent),
            ibit_packets_sent: self.sum(s, |e| e.stats.ibit_sent),
            ack_frequency_frames_sent: self.sum(s, |e| e.stats.ack_frequency_sent),
            cwnd_limited_s: limited[0],
            flow_control_limited_s: limited[1],
            app_limited_s: limited[2],
            one_way_delay: self.owd.stats(),
        };
        FlowReport {
            bytes_delivered: self.delivered,
            first_packet_s: self.reports.first().map(|r| r.started_s),
            last_byte_s: self.last_byte.map(|t| t.as_secs_f64()),
            first_congestion_s: first_congestion.map(|t| t.as_secs_f64()),
            packets_sent: self.sum(s, |e| e.stats.packets_sent),
            packets_lost: self.sum(s, |e| e.stats.packets_lost),
            congestion_events: self.sum(s, |e| e.stats.congestion_events),
            ack_frames_sent: self.sum(r, |e| e.stats.ack_frames_sent),
            max_data_frames_sent: self.sum(r, |e| e.stats.max_data_sent),
            max_stream_data_frames_sent: self.sum(r, |e| e.stats.max_stream_data_sent),
            final_mtu: u16::try_from(self.p.max_udp).unwrap_or(u16::MAX),
            connections: self.reports.clone(),
            error: self.error.clone(),
            warnings: Vec::new(),
            model: Some(model),
        }
    }
}
