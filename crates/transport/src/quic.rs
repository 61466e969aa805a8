//! QUIC flows: two real quinn-proto endpoints driven in virtual time, with the workloads of the
//! scenario format (bulk upload/download with a discard receiver, sized downloads over several
//! streams, sequential connections with 0-RTT resumption).
//!
//! The application protocol is deliberately minimal so it measures the transport, not a parser:
//! a download request is `GET <bytes>\n` on a bidirectional stream, answered with that many
//! bytes and FIN (`u64::MAX` = until told to stop); a bulk upload is one unidirectional stream.

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    AckFrequencyConfig, ClientConfig, ConnectionError, ConnectionHandle, ConnectionStats,
    DatagramEvent, Dir, Endpoint, EndpointConfig, Event, MtuDiscoveryConfig, ReadError,
    ServerConfig, StreamId, TransportConfig, VarInt, WriteError,
};

use crate::agent::{ConnectionReport, FlowAgent, FlowReport, SenderSample, Side, Transmit};
use crate::cc_adapter::{CcProbe, ControllerChoice, Factory};
use crate::clock::{from_instant, to_instant, VirtualClock};
use crate::seeded::{sub_seed, SeededCidGenerator, SharedRng};
use crate::tls::{self, KeyLogBuffer, TlsError, SERVER_NAME};

/// What the application on a QUIC flow does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QuicWorkload {
    /// Client sends as fast as allowed on one unidirectional stream; server discards.
    BulkUpload,
    /// Server sends as fast as allowed on one stream; client discards.
    BulkDownload,
    /// Client requests `size` bytes split over `streams` streams, `connections` times in a row.
    Download {
        size: u64,
        streams: u32,
        connections: u32,
    },
}

/// Everything needed to build one QUIC flow.
#[derive(Debug, Clone)]
pub struct QuicFlowConfig {
    /// Flow name, used for qlog file names.
    pub name: String,
    /// Seed from which every random source of both endpoints derives.
    pub seed: u64,
    pub workload: QuicWorkload,
    /// When the client starts.
    pub start: Duration,
    /// When a bulk sender stops writing (then finishes its stream and closes).
    pub stop: Option<Duration>,
    pub controller: ControllerChoice,
    /// Max UDP payload (IP MTU − 28).
    pub max_udp_payload: u16,
    pub mtu_discovery: bool,
    pub initial_rtt: Duration,
    pub stream_window: u64,
    pub conn_window: u64,
    pub send_window: u64,
    /// ACK ratio 1:n requested from the peer (ACK-frequency extension).
    pub ack_ratio: Option<u32>,
    pub max_ack_delay: Option<Duration>,
    pub zero_rtt: bool,
    pub client_addr: SocketAddr,
    pub server_addr: SocketAddr,
    /// Directory for one qlog file per connection and side.
    pub qlog_dir: Option<PathBuf>,
    /// Where TLS secrets are logged (for decrypting a pcap).
    pub keylog: Option<KeyLogBuffer>,
}

/// Errors building a flow (invalid knobs or TLS set-up).
#[derive(Debug, thiserror::Error)]
pub enum QuicFlowError {
    /// A knob outside what QUIC allows.
    #[error("{0}")]
    Invalid(String),
    /// TLS configuration failed.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// quinn rejected a configuration.
    #[error("quinn configuration: {0}")]
    Quinn(String),
}

/// Largest chunk handed to quinn at once; the bytes are shared, never copied per chunk.
const CHUNK: usize = 64 * 1024;
static ZEROS: [u8; CHUNK] = [0u8; CHUNK];
/// Request size meaning "send until the flow stops".
const UNBOUNDED: u64 = u64::MAX;
/// Connection-ID length of simulated endpoints.
const CID_LEN: usize = 8;

/// One QUIC flow: a client endpoint, a server endpoint, and the workload.
pub struct QuicFlow {
    cfg: QuicFlowConfig,
    clock: VirtualClock,
    client: Host,
    server: Host,
    client_tls: Arc<quinn_proto::crypto::rustls::QuicClientConfig>,
    client_probe: Arc<CcProbe>,
    server_probe: Arc<CcProbe>,
    cid_rng: SharedRng,
    /// Per-connection timings at the client.
    connections: Vec<ConnectionReport>,
    /// Connections opened so far by the client.
    opened: u32,
    delivered: u64,
    first_byte: Option<Duration>,
    last_byte: Option<Duration>,
    stopped: bool,
    finished: bool,
    error: Option<String>,
    /// Datagrams arrived at this side since its application last ran.
    needs_drive: [bool; 2],
}

/// Application state of one connection on one side.
#[derive(Default)]
struct App {
    /// Streams we send on: (id, bytes still to send; UNBOUNDED = until stop).
    sends: Vec<(StreamId, u64)>,
    /// Streams we read: (id, request bytes if this side parses a request, finished).
    recvs: Vec<RecvState>,
    /// Client: download streams not yet opened.
    pending_requests: u32,
    /// Client: bytes per download stream.
    per_stream: u64,
    /// Client: download streams fully received.
    done_streams: u32,
    /// Client: index into `QuicFlow::connections`.
    report_index: usize,
    /// Client download finished on this connection.
    complete: bool,
}

struct RecvState {
    id: StreamId,
    /// Server side of a request stream: the request bytes read so far.
    request: Option<Vec<u8>>,
    finished: bool,
}

struct Conn {
    handle: ConnectionHandle,
    conn: quinn_proto::Connection,
    app: App,
    closing: bool,
}

/// One endpoint with its connections.
struct Host {
    endpoint: Endpoint,
    conns: Vec<Conn>,
    /// Stats of connections that are gone, summed into reports.
    retired: Vec<ConnectionStats>,
    outbox: VecDeque<Vec<u8>>,
    server_config: Option<ServerConfig>,
    buf: Vec<u8>,
    qlog_count: u32,
}

impl QuicFlow {
    /// Builds both endpoints; nothing is sent before `cfg.start`.
    pub fn new(cfg: QuicFlowConfig, clock: VirtualClock) -> Result<Self, QuicFlowError> {
        if cfg.max_udp_payload < 1200 {
            return Err(QuicFlowError::Invalid(format!(
                "QUIC needs a UDP payload of at least 1200 bytes (IP MTU >= 1228); got {}",
                cfg.max_udp_payload
            )));
        }
        let root = SharedRng::new(cfg.seed);
        let client_probe = Arc::new(CcProbe::default());
        let server_probe = Arc::new(CcProbe::default());
        let client_tls = tls::client_config(
            SharedRng::new(sub_seed(cfg.seed, 1)),
            &clock,
            cfg.keylog.clone(),
            cfg.zero_rtt,
        )?;
        let server_tls = tls::server_config(
            SharedRng::new(sub_seed(cfg.seed, 2)),
            &clock,
            cfg.keylog.clone(),
        )?;
        // Pinned token key: the default would draw from the OS RNG.
        let token_key =
            ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&root.bytes32());
        let mut server_config = ServerConfig::new(server_tls, Arc::new(token_key));
        server_config.time_source(Arc::new(clock.clone()));
        let server_transport = transport_config(&cfg, server_probe.clone(), None)?;
        server_config.transport_config(server_transport);

        let client = Host::new(&cfg, &root, None);
        let server = Host::new(&cfg, &root, Some(server_config));
        Ok(QuicFlow {
            cid_rng: SharedRng::new(sub_seed(cfg.seed, 3)),
            cfg,
            clock,
            client,
            server,
            client_tls,
            client_probe,
            server_probe,
            connections: Vec::new(),
            opened: 0,
            delivered: 0,
            first_byte: None,
            last_byte: None,
            stopped: false,
            finished: false,
            error: None,
            needs_drive: [false, false],
        })
    }

    fn data_sender(&self) -> Side {
        match self.cfg.workload {
            QuicWorkload::BulkUpload => Side::Client,
            _ => Side::Server,
        }
    }

    fn connections_wanted(&self) -> u32 {
        match self.cfg.workload {
            QuicWorkload::Download { connections, .. } => connections.max(1),
            _ => 1,
        }
    }

    /// Opens the client's next connection.
    fn connect(&mut self, now: Duration) {
        let qlog = qlog_stream(&self.cfg, Side::Client, &mut self.client.qlog_count);
        let transport = match transport_config(&self.cfg, self.client_probe.clone(), qlog) {
            Ok(t) => t,
            Err(e) => return self.fail(e.to_string()),
        };
        let mut cc = ClientConfig::new(self.client_tls.clone());
        cc.transport_config(transport);
        let rng = self.cid_rng.clone();
        cc.initial_dst_cid_provider(Arc::new(move || {
            let mut b = [0u8; CID_LEN];
            rng.fill(&mut b);
            quinn_proto::ConnectionId::new(&b)
        }));
        let result =
            self.client
                .endpoint
                .connect(to_instant(now), cc, self.cfg.server_addr, SERVER_NAME);
        let (handle, conn) = match result {
            Ok(x) => x,
            Err(e) => return self.fail(format!("connect: {e}")),
        };
        self.opened += 1;
        self.connections.push(ConnectionReport {
            started_s: now.as_secs_f64(),
            ..Default::default()
        });
        let mut app = App {
            report_index: self.connections.len() - 1,
            ..Default::default()
        };
        match self.cfg.workload {
            QuicWorkload::BulkUpload => {}
            QuicWorkload::BulkDownload => {
                app.pending_requests = 1;
                app.per_stream = UNBOUNDED;
            }
            QuicWorkload::Download { size, streams, .. } => {
                let streams = streams.max(1);
                app.pending_requests = streams;
                app.per_stream = size.div_ceil(u64::from(streams));
            }
        }
        self.client.conns.push(Conn {
            handle,
            conn,
            app,
            closing: false,
        });
    }

    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
        self.finished = true;
    }

    /// Runs application logic and endpoint bookkeeping for `side` after any input.
    fn drive(&mut self, side: Side, now: Duration) {
        let stop_reached = self.stopped;
        let host = match side {
            Side::Client => &mut self.client,
            Side::Server | Side::Middle => &mut self.server,
        };
        let mut events: Vec<(usize, Event)> = Vec::new();
        let mut i = 0;
        while i < host.conns.len() {
            let c = &mut host.conns[i];
            while let Some(ev) = c.conn.poll_endpoint_events() {
                let drained = ev.is_drained();
                if let Some(cev) = host.endpoint.handle_event(c.handle, ev) {
                    c.conn.handle_event(cev);
                }
                if drained {
                    c.closing = true;
                }
            }
            while let Some(ev) = c.conn.poll() {
                events.push((i, ev));
            }
            i += 1;
        }
        for (idx, ev) in events {
            self.on_event(side, idx, ev, now);
        }
        self.pump_streams(side, now, stop_reached);
        // Retire drained connections, keeping their counters.
        let host = match side {
            Side::Client => &mut self.client,
            Side::Server | Side::Middle => &mut self.server,
        };
        let mut j = 0;
        while j < host.conns.len() {
            if host.conns[j].closing && host.conns[j].conn.is_drained() {
                let c = host.conns.remove(j);
                host.retired.push(c.conn.stats());
            } else {
                j += 1;
            }
        }
        self.maybe_next_connection(now);
    }

    fn on_event(&mut self, side: Side, idx: usize, ev: Event, now: Duration) {
        match ev {
            Event::Connected if side == Side::Client => {
                let c = &self.client.conns[idx];
                let r = &mut self.connections[c.app.report_index];
                r.handshake_s = Some(now.as_secs_f64() - r.started_s);
                r.zero_rtt_accepted = c.conn.accepted_0rtt();
            }
            Event::ConnectionLost { reason } => {
                let host = match side {
                    Side::Client => &mut self.client,
                    Side::Server | Side::Middle => &mut self.server,
                };
                host.conns[idx].closing = true;
                let expected = matches!(
                    reason,
                    ConnectionError::LocallyClosed | ConnectionError::ApplicationClosed(_)
                );
                if !expected && !self.finished {
                    self.fail(format!("{side:?} connection lost: {reason}"));
                }
            }
            _ => {}
        }
    }

    /// Opens requested streams, writes pending data, reads everything readable.
    fn pump_streams(&mut self, side: Side, now: Duration, stop: bool) {
        let workload = self.cfg.workload;
        let host = match side {
            Side::Client => &mut self.client,
            Side::Server | Side::Middle => &mut self.server,
        };
        let mut delivered = 0u64;
        let mut completed: Vec<usize> = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        for (ci, c) in host.conns.iter_mut().enumerate() {
            if c.closing {
                continue;
            }
            // Client opens its streams as soon as stream credit exists (0-RTT or after handshake).
            if side == Side::Client {
                if workload == QuicWorkload::BulkUpload && c.app.sends.is_empty() && !stop {
                    if let Some(id) = c.conn.streams().open(Dir::Uni) {
                        c.app.sends.push((id, UNBOUNDED));
                    }
                }
                while c.app.pending_requests > 0 {
                    let Some(id) = c.conn.streams().open(Dir::Bi) else {
                        break;
                    };
                    c.app.pending_requests -= 1;
                    let req = format!("GET {}\n", c.app.per_stream);
                    let mut s = c.conn.send_stream(id);
                    // The request is tiny and the stream fresh: the send buffer always takes it.
                    if s.write(req.as_bytes()).is_err() || s.finish().is_err() {
                        errors.push("could not send request".into());
                    }
                    c.app.recvs.push(RecvState {
                        id,
                        request: None,
                        finished: false,
                    });
                }
            } else {
                while let Some(id) = c.conn.streams().accept(Dir::Bi) {
                    c.app.recvs.push(RecvState {
                        id,
                        request: Some(Vec::new()),
                        finished: false,
                    });
                }
            }
            while let Some(id) = c.conn.streams().accept(Dir::Uni) {
                c.app.recvs.push(RecvState {
                    id,
                    request: None,
                    finished: false,
                });
            }
            // Read.
            let mut new_sends = Vec::new();
            for r in c.app.recvs.iter_mut().filter(|r| !r.finished) {
                let mut recv = c.conn.recv_stream(r.id);
                let mut chunks = match recv.read(true) {
                    Ok(ch) => ch,
                    Err(_) => {
                        r.finished = true;
                        continue;
                    }
                };
                loop {
                    match chunks.next(usize::MAX) {
                        Ok(Some(chunk)) => match &mut r.request {
                            Some(req) => req.extend_from_slice(&chunk.bytes),
                            None => delivered += chunk.bytes.len() as u64,
                        },
                        Ok(None) => {
                            r.finished = true;
                            break;
                        }
                        Err(ReadError::Blocked) => break,
                        Err(ReadError::Reset(code)) => {
                            r.finished = true;
                            errors.push(format!("stream reset by peer ({code})"));
                            break;
                        }
                    }
                }
                let _ = chunks.finalize();
                if r.finished {
                    if let Some(req) = &r.request {
                        match parse_request(req) {
                            Some(n) => new_sends.push((r.id, n)),
                            None => errors.push("malformed request".into()),
                        }
                    } else if side == Side::Client && !matches!(workload, QuicWorkload::BulkUpload)
                    {
                        c.app.done_streams += 1;
                    }
                }
            }
            c.app.sends.extend(new_sends);
            // Write.
            let mut k = 0;
            while k < c.app.sends.len() {
                let (id, ref mut remaining) = c.app.sends[k];
                if stop && *remaining == UNBOUNDED {
                    *remaining = 0;
                }
                let mut done = false;
                loop {
                    if *remaining == 0 {
                        let _ = c.conn.send_stream(id).finish();
                        done = true;
                        break;
                    }
                    let n = (*remaining).min(CHUNK as u64) as usize;
                    let mut data = [Bytes::from_static(&ZEROS[..n])];
                    match c.conn.send_stream(id).write_chunks(&mut data) {
                        Ok(w) => {
                            if *remaining != UNBOUNDED {
                                *remaining -= w.bytes as u64;
                            }
                            if w.bytes < n {
                                break;
                            }
                        }
                        Err(WriteError::Blocked) => break,
                        Err(_) => {
                            done = true;
                            break;
                        }
                    }
                }
                if done {
                    c.app.sends.swap_remove(k);
                } else {
                    k += 1;
                }
            }
            if side == Side::Client
                && !c.app.complete
                && matches!(workload, QuicWorkload::Download { .. })
                && c.app.pending_requests == 0
                && c.app.done_streams as usize == c.app.recvs.len()
                && !c.app.recvs.is_empty()
            {
                c.app.complete = true;
                completed.push(ci);
            }
        }
        for e in errors {
            self.fail(e);
        }
        let receiver = match workload {
            QuicWorkload::BulkUpload => Side::Server,
            _ => Side::Client,
        };
        if side == receiver && delivered > 0 {
            self.delivered += delivered;
            self.first_byte.get_or_insert(now);
            self.last_byte = Some(now);
            for c in &self.client.conns {
                let r = &mut self.connections[c.app.report_index];
                if r.time_to_first_byte_s.is_none() && side == Side::Client {
                    r.time_to_first_byte_s = Some(now.as_secs_f64() - r.started_s);
                }
            }
        }
        for ci in completed {
            let c = &mut self.client.conns[ci];
            let r = &mut self.connections[c.app.report_index];
            r.completion_s = Some(now.as_secs_f64() - r.started_s);
            c.conn.close(
                to_instant(now),
                VarInt::from_u32(0),
                Bytes::from_static(b"done"),
            );
        }
    }

    fn maybe_next_connection(&mut self, now: Duration) {
        if self.finished || self.opened == 0 {
            return;
        }
        let all_done = self.connections.iter().all(|r| r.completion_s.is_some());
        if all_done && matches!(self.cfg.workload, QuicWorkload::Download { .. }) {
            if self.opened < self.connections_wanted() {
                self.connect(now);
                self.drive(Side::Client, now);
            } else {
                self.finished = true;
            }
        }
    }

    fn host(&mut self, side: Side) -> &mut Host {
        match side {
            Side::Client => &mut self.client,
            Side::Server | Side::Middle => &mut self.server,
        }
    }

    fn app_timer(&self, side: Side) -> Option<Duration> {
        let mut t = None;
        if side == Side::Client && self.opened == 0 && !self.finished {
            t = Some(self.cfg.start);
        }
        if let Some(stop) = self.cfg.stop {
            if !self.stopped && side == self.data_sender() {
                t = Some(t.map_or(stop, |x: Duration| x.min(stop)));
            }
        }
        t
    }
}

fn parse_request(req: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(req).ok()?;
    s.strip_prefix("GET ")?.trim_end().parse().ok()
}

impl Host {
    fn new(cfg: &QuicFlowConfig, root: &SharedRng, server_config: Option<ServerConfig>) -> Host {
        let reset_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &root.bytes32());
        let mut ep = EndpointConfig::new(Arc::new(reset_key));
        // quinn's default caps UDP payloads at 1472 bytes; jumbo-frame scenarios need more.
        let _ = ep.max_udp_payload_size(cfg.max_udp_payload.max(1472));
        let rng = root.clone();
        ep.cid_generator(move || Box::new(SeededCidGenerator::new(rng.bytes32(), CID_LEN)));
        let seed = root.bytes32();
        let endpoint = Endpoint::new(
            Arc::new(ep),
            server_config.clone().map(Arc::new),
            cfg.mtu_discovery,
            Some(seed),
        );
        Host {
            endpoint,
            conns: Vec::new(),
            retired: Vec::new(),
            outbox: VecDeque::new(),
            server_config,
            buf: Vec::with_capacity(usize::from(cfg.max_udp_payload)),
            qlog_count: 0,
        }
    }

    fn stats(&self) -> Vec<ConnectionStats> {
        let mut v = self.retired.clone();
        v.extend(self.conns.iter().map(|c| c.conn.stats()));
        v
    }
}

/// A fresh transport config for one connection (qlog streams are per connection).
fn transport_config(
    cfg: &QuicFlowConfig,
    probe: Arc<CcProbe>,
    qlog: Option<quinn_proto::QlogStream>,
) -> Result<Arc<TransportConfig>, QuicFlowError> {
    let varint = |v: u64, what: &str| {
        VarInt::from_u64(v).map_err(|_| QuicFlowError::Invalid(format!("{what} too large: {v}")))
    };
    let mut t = TransportConfig::default();
    t.stream_receive_window(varint(cfg.stream_window, "stream window")?)
        .receive_window(varint(cfg.conn_window, "connection window")?)
        .send_window(cfg.send_window)
        .initial_rtt(cfg.initial_rtt)
        .initial_mtu(cfg.max_udp_payload)
        .congestion_controller_factory(Factory::new(cfg.controller, probe));
    if cfg.mtu_discovery {
        let mut m = MtuDiscoveryConfig::default();
        m.upper_bound(cfg.max_udp_payload.max(1452));
        t.mtu_discovery_config(Some(m)).min_mtu(1200);
    } else {
        // Pinned: with discovery off quinn would still fall back to 1200 on suspected black holes.
        t.mtu_discovery_config(None).min_mtu(cfg.max_udp_payload);
    }
    if cfg.ack_ratio.is_some() || cfg.max_ack_delay.is_some() {
        let mut a = AckFrequencyConfig::default();
        if let Some(n) = cfg.ack_ratio {
            // Threshold n − 1 means "acknowledge every n-th ack-eliciting packet".
            a.ack_eliciting_threshold(VarInt::from_u32(n.saturating_sub(1)));
        }
        if let Some(d) = cfg.max_ack_delay {
            a.max_ack_delay(Some(d));
        }
        t.ack_frequency_config(Some(a));
    }
    if let QuicWorkload::Download { streams, .. } = cfg.workload {
        t.max_concurrent_bidi_streams(VarInt::from_u32(streams.max(100)));
    }
    t.qlog_stream(qlog);
    Ok(Arc::new(t))
}

fn qlog_stream(
    cfg: &QuicFlowConfig,
    side: Side,
    count: &mut u32,
) -> Option<quinn_proto::QlogStream> {
    let dir = cfg.qlog_dir.as_ref()?;
    let n = *count;
    *count += 1;
    let role = match side {
        Side::Client => "client",
        Side::Server | Side::Middle => "server",
    };
    let path = dir.join(format!("{}-{}-{}.qlog", cfg.name, role, n));
    let file = File::create(&path).ok()?;
    let mut q = quinn_proto::QlogConfig::default();
    q.writer(Box::new(BufWriter::new(file)))
        .title(Some(format!("quiclab {} {}", cfg.name, role)))
        .start_time(to_instant(Duration::ZERO));
    q.into_stream()
}

impl FlowAgent for QuicFlow {
    fn handle_datagram(&mut self, side: Side, _from: Side, now: Duration, payload: Vec<u8>) {
        // QUIC cannot be split: no middlebox ever terminates it.
        if side == Side::Middle {
            return;
        }
        self.clock.set(now);
        let nowi = to_instant(now);
        let remote = match side {
            Side::Client => self.cfg.server_addr,
            Side::Server | Side::Middle => self.cfg.client_addr,
        };
        let cfg = self.cfg.clone();
        let server_probe = self.server_probe.clone();
        let host = self.host(side);
        let mut buf = std::mem::take(&mut host.buf);
        buf.clear();
        let event = host.endpoint.handle(
            nowi,
            remote,
            None,
            None,
            BytesMut::from(Bytes::from(payload)),
            &mut buf,
        );
        match event {
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(c) = host.conns.iter_mut().find(|c| c.handle == h) {
                    c.conn.handle_event(ev);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                let per_conn = host.server_config.as_ref().map(|sc| {
                    let mut sc = sc.clone();
                    let qlog = qlog_stream(&cfg, Side::Server, &mut host.qlog_count);
                    if let Ok(t) = transport_config(&cfg, server_probe.clone(), qlog) {
                        sc.transport_config(t);
                    }
                    Arc::new(sc)
                });
                match host.endpoint.accept(incoming, nowi, &mut buf, per_conn) {
                    Ok((handle, conn)) => host.conns.push(Conn {
                        handle,
                        conn,
                        app: App::default(),
                        closing: false,
                    }),
                    Err(e) => {
                        if let Some(t) = e.response {
                            host.outbox.push_back(buf[..t.size].to_vec());
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => host.outbox.push_back(buf[..t.size].to_vec()),
            None => {}
        }
        host.buf = buf;
        // The application runs once per batch of datagrams arriving at the same instant (like
        // a receiver draining its socket before reading streams); see `poll_transmit`.
        self.needs_drive[side.index()] = true;
    }

    fn handle_timeout(&mut self, side: Side, now: Duration) {
        if side == Side::Middle {
            return;
        }
        self.clock.set(now);
        if side == Side::Client && self.opened == 0 && !self.finished && now >= self.cfg.start {
            self.connect(now);
        }
        let nowi = to_instant(now);
        if let Some(stop) = self.cfg.stop {
            if !self.stopped && now >= stop && side == self.data_sender() {
                // The traffic generator stops: whatever quinn still buffers must not keep
                // flowing, so the connection closes now (CONNECTION_CLOSE discards it).
                self.stopped = true;
                for c in self.host(side).conns.iter_mut() {
                    c.conn
                        .close(nowi, VarInt::from_u32(0), Bytes::from_static(b"stopped"));
                }
                if !matches!(self.cfg.workload, QuicWorkload::Download { .. }) {
                    self.finished = true;
                }
            }
        }
        for c in self.host(side).conns.iter_mut() {
            if c.conn.poll_timeout().is_some_and(|t| t <= nowi) {
                c.conn.handle_timeout(nowi);
            }
        }
        self.drive(side, now);
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
        if side == Side::Middle {
            return None;
        }
        self.clock.set(now);
        if std::mem::take(&mut self.needs_drive[side.index()]) {
            self.drive(side, now);
        }
        let nowi = to_instant(now);
        let host = self.host(side);
        if let Some(d) = host.outbox.pop_front() {
            return Some(Transmit::udp(d, side.opposite()));
        }
        let mut out = None;
        for c in host.conns.iter_mut() {
            host.buf.clear();
            if let Some(t) = c.conn.poll_transmit(nowi, 1, &mut host.buf) {
                out = Some(Transmit::udp(host.buf[..t.size].to_vec(), side.opposite()));
                break;
            }
        }
        if out.is_none() {
            // Sending may have produced endpoint events (e.g. a close); let the app react.
            self.drive(side, now);
        }
        out
    }

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        if side == Side::Middle {
            return None;
        }
        let app = self.app_timer(side);
        let host = self.host(side);
        let conn = host
            .conns
            .iter_mut()
            .filter_map(|c| c.conn.poll_timeout())
            .min()
            .map(from_instant);
        match (app, conn) {
            (Some(a), Some(c)) => Some(a.min(c)),
            (a, c) => a.or(c),
        }
    }

    fn delivered_bytes(&self) -> u64 {
        self.delivered
    }

    fn sample(&self) -> SenderSample {
        let (host, probe) = match self.data_sender() {
            Side::Client => (&self.client, &self.client_probe),
            Side::Server | Side::Middle => (&self.server, &self.server_probe),
        };
        match host.conns.last() {
            Some(c) => {
                let s = c.conn.stats();
                SenderSample {
                    cwnd: s.path.cwnd,
                    srtt: c.conn.rtt(),
                    in_flight: probe.in_flight(),
                }
            }
            None => SenderSample::default(),
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn report(&self) -> FlowReport {
        let (sender, receiver, probe) = match self.data_sender() {
            Side::Client => (&self.client, &self.server, &self.client_probe),
            Side::Server | Side::Middle => (&self.server, &self.client, &self.server_probe),
        };
        let mut r = FlowReport {
            bytes_delivered: self.delivered,
            first_packet_s: self.connections.first().map(|c| c.started_s),
            last_byte_s: self.last_byte.map(|t| t.as_secs_f64()),
            first_congestion_s: probe.first_congestion().map(|t| t.as_secs_f64()),
            connections: self.connections.clone(),
            error: self.error.clone(),
            ..Default::default()
        };
        for s in sender.stats() {
            r.packets_sent += s.path.sent_packets;
            r.packets_lost += s.path.lost_packets;
            r.congestion_events += s.path.congestion_events;
            r.final_mtu = s.path.current_mtu;
        }
        for s in receiver.stats() {
            r.ack_frames_sent += s.frame_tx.acks;
            r.max_data_frames_sent += s.frame_tx.max_data;
            r.max_stream_data_frames_sent += s.frame_tx.max_stream_data;
        }
        r
    }
}
