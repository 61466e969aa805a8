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

use std::path::PathBuf;

use super::app::App;
use super::connection::Endpoint;
use super::qlog::ModelQlog;
use super::wire::Reader;
use super::{Params, QuicModelFlowConfig, QuicModelFlowError};
use crate::agent::{EcnReport, FlowReport, ModelMetrics, SenderSample, Side, Transmit};
use crate::driver::{Connections, FlowDriver, Lifecycle};
use crate::qlog::{QlogErrors, QlogFlusher};

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
pub type QuicModelFlow = FlowDriver<QuicModelConnections>;

/// Every connection of one model flow and its applications (the lifecycle is the
/// [`FlowDriver`]'s).
pub struct QuicModelConnections {
    p: Params,
    conns: Vec<Conn>,
    /// Connections before this index are closed on both sides (skipped when polling).
    first_live: usize,
    /// Latest time the flow saw (closes the limited-time accounting in reports).
    now: Duration,
    malformed: u64,
    stray: u64,
    /// Where each connection's qlogs go (none: no qlog).
    qlog_dir: Option<PathBuf>,
    /// The flow's name (qlog file names).
    name: String,
    /// qlog files that could not be created or fully written.
    qlog_errors: QlogErrors,
    /// The qlog files opened, flushed before the flow reports.
    qlog_files: Vec<QlogFlusher>,
}

impl std::fmt::Debug for QuicModelConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicModelConnections")
            .field("connections", &self.conns.len())
            .field("first_live", &self.first_live)
            .finish()
    }
}

impl FlowDriver<QuicModelConnections> {
    /// Builds the flow (validating the knobs); nothing is sent before `plan.start`.
    pub fn new(config: QuicModelFlowConfig) -> Result<Self, QuicModelFlowError> {
        let p = Params {
            seed: config.seed,
            ..Params::new(&config.knobs, config.plan.cc)?
        };
        let conns = QuicModelConnections {
            p,
            conns: Vec::new(),
            first_live: 0,
            now: Duration::ZERO,
            malformed: 0,
            stray: 0,
            qlog_dir: config.qlog_dir,
            name: config.plan.name.clone(),
            qlog_errors: QlogErrors::default(),
            qlog_files: Vec::new(),
        };
        Ok(FlowDriver::from_parts(config.plan, conns))
    }

    /// Datagrams dropped because they did not decode.
    pub fn malformed_datagrams(&self) -> u64 {
        self.connections().malformed
    }

    /// Datagrams for no known connection (ignored).
    pub fn stray_datagrams(&self) -> u64 {
        self.connections().stray
    }

    /// Largest UDP payload of the flow's packets.
    pub fn max_udp_payload(&self) -> u32 {
        self.connections().p.max_udp
    }
}

impl QuicModelConnections {
    fn sum(&self, side: Side, f: impl Fn(&Endpoint) -> u64) -> u64 {
        self.conns
            .iter()
            .filter_map(|c| c.endpoint_ref(side))
            .map(f)
            .sum()
    }
}

impl Connections for QuicModelConnections {
    const RUN_ON_TIMEOUT: bool = false;
    const RUN_CLIENT_ON_OPEN: bool = true;

    fn advance(&mut self, now: Duration) {
        self.now = self.now.max(now);
    }

    fn open(&mut self, flow: &mut Lifecycle, now: Duration) {
        let Ok(id) = u32::try_from(self.conns.len()) else {
            flow.fail("too many connections".into());
            return;
        };
        // Resume when the previous connection left a ticket.
        let resumed =
            self.p.knobs.common.zero_rtt && self.conns.last().is_some_and(|c| c.client.got_ticket);
        // The previous connection's NEW_TOKEN frames travel with its session tickets.
        let token = self.p.knobs.common.address_token
            && self.conns.last().is_some_and(|c| c.client.got_ticket);
        let w = flow.workload();
        let sender = w.data_sender();
        let mut server = Endpoint::server(id, self.p, now, resumed, sender == Side::Server);
        if token {
            server.address_validated_by_token();
        }
        let mut client = Endpoint::client(id, self.p, now, resumed, sender == Side::Client);
        if let Some(dir) = &self.qlog_dir {
            // Closed files flushed themselves when their endpoint was dropped.
            self.qlog_files.retain(QlogFlusher::is_open);
            for ep in [&mut client, &mut server] {
                if let Some((q, f)) =
                    ModelQlog::create(dir, &self.name, id, ep.side, &self.qlog_errors)
                {
                    ep.attach_qlog(q);
                    self.qlog_files.push(f);
                }
            }
        }
        self.conns.push(Conn {
            client,
            server,
            client_app: App::new(Side::Client, w),
            server_app: App::new(Side::Server, w),
            round: flow.reports().len(),
            complete: false,
        });
        flow.begin_connection(now);
        flow.wake(Side::Client);
    }

    fn on_datagram(
        &mut self,
        side: Side,
        _from: Side,
        now: Duration,
        payload: Vec<u8>,
        ecn: netem::Ecn,
    ) -> bool {
        if side == Side::Middle {
            self.stray += 1;
            return false;
        }
        let conn = match Reader::new(&payload) {
            Ok((_, h)) => h.conn,
            Err(_) => {
                self.malformed += 1;
                return false;
            }
        };
        let Some(ep) = self
            .conns
            .get_mut(conn as usize)
            .and_then(|c| c.endpoint(side))
        else {
            self.stray += 1;
            return false;
        };
        if ep.on_datagram(&payload, ecn, now).is_err() {
            self.malformed += 1;
        }
        true
    }

    fn stop(&mut self, side: Side, now: Duration) {
        // The traffic generator stops: the sender closes its connections (as the quinn flow
        // does), discarding what it still holds.
        for c in &mut self.conns {
            if let Some(ep) = c.endpoint(side) {
                ep.stop_accounting(now);
                ep.close();
            }
        }
    }

    fn on_timeout(&mut self, side: Side, now: Duration) {
        for c in self.conns[self.first_live..].iter_mut() {
            if let Some(ep) = c.endpoint(side) {
                if ep.poll_timeout().is_some_and(|t| t <= now) {
                    ep.on_timeout(now);
                }
            }
        }
    }

    /// Runs the applications of `side` after input.
    fn drive(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) {
        let stopped = flow.stopped();
        let stop = stopped && side == flow.data_sender();
        let mut failure: Option<String> = None;
        for c in self.conns[self.first_live..].iter_mut() {
            let (app, ep) = match side {
                Side::Client => (&mut c.client_app, &mut c.client),
                Side::Server => (&mut c.server_app, &mut c.server),
                Side::Middle => continue,
            };
            if ep.is_closed() {
                if ep.timed_out && !c.complete && !stopped && failure.is_none() {
                    failure = Some(format!("{side:?} connection lost: timed out"));
                }
                continue;
            }
            let prog = app.run(ep, now, stop);
            if side == Side::Client {
                if let Some(t) = c.client.handshake_complete_at {
                    flow.handshake_done(c.round, t, c.client.resumed);
                }
            }
            flow.read(c.round, side, prog.delivered, now);
            if prog.completed && !c.complete {
                c.complete = true;
                flow.completed(c.round, now);
                c.client.close();
                c.server.stop_accounting(now);
                c.client.stop_accounting(now);
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
            flow.fail(f);
        }
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
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

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        self.conns[self.first_live..]
            .iter()
            .filter_map(|c| c.endpoint_ref(side))
            .filter_map(|e| e.poll_timeout())
            .min()
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

    fn report(&self, flow: &Lifecycle, report: &mut FlowReport) {
        // A write failing in a file still open would otherwise surface only after this.
        for f in &self.qlog_files {
            f.flush();
        }
        report.warnings = self.qlog_errors.to_vec();
        let (s, r) = (flow.data_sender(), flow.workload().data_receiver());
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
        let (mut streams_done, mut stream_sum) = (0u32, Duration::ZERO);
        let mut first_stream: Option<Duration> = None;
        for c in &self.conns {
            let (n, first, sum) = c.client_app.stream_completions();
            streams_done += n;
            stream_sum += sum;
            first_stream = match (first_stream, first) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        report.model = Some(ModelMetrics {
            ack_frames_received: self.sum(s, |e| e.stats.ack_frames_received),
            ack_eliciting_received: self.sum(r, |e| e.stats.ack_eliciting_received),
            data_blocked_frames_sent: self.sum(s, |e| e.stats.data_blocked_sent),
            stream_data_blocked_frames_sent: self.sum(s, |e| e.stats.stream_data_blocked_sent),
            ibit_packets_sent: self.sum(s, |e| e.stats.ibit_sent),
            ack_frequency_frames_sent: self.sum(s, |e| e.stats.ack_frequency_sent),
            cwnd_limited_s: limited[0],
            flow_control_limited_s: limited[1],
            app_limited_s: limited[2],
            first_stream_completion_s: first_stream.map(|d| d.as_secs_f64()),
            mean_stream_completion_s: (streams_done > 0)
                .then(|| stream_sum.as_secs_f64() / f64::from(streams_done)),
        });
        report.first_congestion_s = first_congestion.map(|t| t.as_secs_f64());
        report.packets_sent = self.sum(s, |e| e.stats.packets_sent);
        report.packets_lost = self.sum(s, |e| e.stats.packets_lost);
        report.congestion_events = self.sum(s, |e| e.stats.congestion_events);
        report.ack_frames_sent = self.sum(r, |e| e.stats.ack_frames_sent);
        report.max_data_frames_sent = self.sum(r, |e| e.stats.max_data_sent);
        report.max_stream_data_frames_sent = self.sum(r, |e| e.stats.max_stream_data_sent);
        report.final_mtu = u16::try_from(self.p.max_udp).unwrap_or(u16::MAX);
        if self.p.knobs.common.ecn {
            report.ecn = Some(EcnReport {
                capable: self
                    .conns
                    .iter()
                    .filter_map(|c| c.endpoint_ref(s))
                    .all(|e| e.ecn.sending()),
                ce_received: self.sum(r, |e| e.ecn.ce_received()),
                ce_congestion_events: self.sum(s, |e| e.stats.ce_congestion_events),
            });
        }
    }

    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        // quinn's AEAD discards a packet with a bit error; the model has no AEAD and its
        // encoding is shorter than the real payload, so the engine drops such a packet
        // before it arrives (the same outcome: it is lost).
        false
    }
}
