//! QUIC flows over Cloudflare's quiche (`stack = "quiche"`): two real quiche connections in
//! virtual time, with the workloads of the quinn stack (bulk up and down, sized downloads over
//! several streams, sequential connections with 0-RTT resumption).
//!
//! - [`knobs`]: the keys quiche honours ([`QuicheKnobs`]).
//! - [`config`]: quiche's configurations and controllers from the knobs.
//! - `app`: the application on each connection.
//! - `interpose`: virtual time and seeded randomness inside quiche, by link-time
//!   interposition ([`LINK_ARGS`]); the only unsafe code of this stack.
//!
//! quiche reads the clock itself, so every call into it runs inside
//! `interpose::Virtual::enter` at the engine's `now`; a program not linked with [`LINK_ARGS`]
//! cannot build a quiche flow ([`QuicheFlowError::NotInterposed`]).

mod app;
pub mod config;
mod interpose;
pub mod knobs;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::agent::{FlowReport, SenderSample, Side, Transmit};
use crate::clock::VirtualClock;
use crate::driver::{Connections, FlowDriver, Lifecycle};
use crate::flow::FlowPlan;
use crate::seeded::sub_seed;
use crate::tls::{KeyLogBuffer, SERVER_NAME};
use app::App;
use config::{End, QuicheController};
use interpose::Virtual;
pub use knobs::QuicheKnobs;

/// The linker options every program that runs quiche flows is linked with (`build.rs`:
/// `cargo:rustc-link-arg-bins=` / `-tests=` / `-cdylib=` each), so quiche's clock reads and
/// BoringSSL's random bytes come from the simulation.
pub const LINK_ARGS: [&str; 4] = [
    "-Wl,--wrap=clock_gettime",
    "-Wl,--wrap=gettimeofday",
    "-Wl,--wrap=time",
    "-Wl,--wrap=RAND_bytes",
];

/// Connection-ID length of both ends (as quinn's simulated endpoints).
const CID_LEN: usize = 8;
/// Largest UDP payload quiche is handed or asked for.
const MAX_DATAGRAM: usize = 65_535;

/// Everything needed to build one quiche flow.
#[derive(Debug, Clone)]
pub struct QuicheFlowConfig {
    /// Name, workload, start, stop and controller.
    pub plan: FlowPlan,
    /// quiche's knobs.
    pub knobs: QuicheKnobs,
    /// Seed of every random draw of both ends (TLS, connection IDs, packet-number skips).
    pub seed: u64,
    /// The client's address.
    pub client_addr: SocketAddr,
    /// The server's address.
    pub server_addr: SocketAddr,
    /// Where TLS secrets are logged (for decrypting a pcap).
    pub keylog: Option<KeyLogBuffer>,
    /// qlogs were asked for (the run's qlog directory is set): quiche's flows write none, and
    /// say so in the report's warnings.
    pub qlog_requested: bool,
}

/// Errors building a quiche flow.
#[derive(Debug, thiserror::Error)]
pub enum QuicheFlowError {
    /// A knob or controller quiche cannot run with.
    #[error("{0}")]
    Invalid(String),
    /// This program cannot put quiche into virtual time.
    #[error("stack = \"quiche\": {0}")]
    NotInterposed(String),
    /// quiche or BoringSSL refused a configuration.
    #[error("{0}")]
    Config(String),
}

/// One quiche flow: a client, a server and the workload.
pub type QuicheFlow = FlowDriver<QuicheConnections>;

/// One quiche connection at one end, with its application.
struct Conn {
    conn: ::quiche::Connection,
    app: App,
    /// The client's first destination connection ID (server: to recognise its Initials).
    odcid: Vec<u8>,
    /// A datagram quiche asked to leave later (pacing), with its virtual release time.
    pending: Option<(Vec<u8>, Duration)>,
    /// This side closed the connection on purpose (done or stopped).
    closing: bool,
    /// Client: the handshake was reported.
    handshake_seen: bool,
}

/// Counters of connections that have gone (closed connections are dropped).
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    sent: u64,
    lost: u64,
    pmtu: u64,
}

impl Totals {
    fn add(&mut self, c: &::quiche::Connection) {
        let s = c.stats();
        self.sent += s.sent as u64;
        self.lost += s.lost as u64;
        if let Some(p) = c.path_stats().next() {
            self.pmtu = p.pmtu as u64;
        }
    }
}

/// Both ends of one quiche flow.
pub struct QuicheConnections {
    cfg: QuicheFlowConfig,
    clock: VirtualClock,
    virt: Virtual,
    /// The `Instant` quiche sees at virtual time zero.
    origin: Instant,
    configs: [::quiche::Config; 2],
    conns: [Vec<Conn>; 2],
    gone: [Totals; 2],
    cid_rng: ChaCha8Rng,
    /// The client's session ticket from its latest connection (0-RTT on the next).
    session: Option<Vec<u8>>,
    /// A failure noticed where the lifecycle is not at hand (sending).
    failure: Option<String>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for QuicheConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicheConnections")
            .field("client", &self.conns[0].len())
            .field("server", &self.conns[1].len())
            .finish()
    }
}

fn at(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server | Side::Middle => 1,
    }
}

/// Writes BoringSSL's key-log lines into the run's key log.
struct KeyLogWriter(KeyLogBuffer);

impl std::io::Write for KeyLogWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.push_lines(&String::from_utf8_lossy(b));
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl FlowDriver<QuicheConnections> {
    /// Builds both ends' configurations; nothing is sent before `cfg.plan.start`.
    pub fn new(cfg: QuicheFlowConfig, clock: VirtualClock) -> Result<Self, QuicheFlowError> {
        interpose::check_interposed().map_err(QuicheFlowError::NotInterposed)?;
        cfg.knobs
            .validate()
            .map_err(|e| QuicheFlowError::Invalid(e.to_string()))?;
        let cc: QuicheController =
            config::controller(&cfg.plan.cc).map_err(QuicheFlowError::Invalid)?;
        let mut virt = Virtual::new(sub_seed(cfg.seed, 1));
        let origin = virt.origin();
        let mut ticket_key = [0u8; 48];
        ChaCha8Rng::seed_from_u64(sub_seed(cfg.seed, 2)).fill_bytes(&mut ticket_key);
        let keylog = cfg.keylog.is_some();
        let now = clock.now();
        let configs = virt.enter(now, || -> Result<_, String> {
            Ok([
                config::build(End::Client, &cfg.knobs, &cc, keylog)?,
                config::build(End::Server { ticket_key }, &cfg.knobs, &cc, keylog)?,
            ])
        });
        let configs = configs.map_err(QuicheFlowError::Config)?;
        let plan = cfg.plan.clone();
        let conns = QuicheConnections {
            cid_rng: ChaCha8Rng::seed_from_u64(sub_seed(cfg.seed, 3)),
            cfg,
            clock,
            virt,
            origin,
            configs,
            conns: [Vec::new(), Vec::new()],
            gone: [Totals::default(); 2],
            session: None,
            failure: None,
            buf: vec![0u8; MAX_DATAGRAM],
        };
        Ok(FlowDriver::from_parts(plan, conns))
    }
}

impl QuicheConnections {
    fn new_cid(&mut self) -> [u8; CID_LEN] {
        let mut b = [0u8; CID_LEN];
        self.cid_rng.fill_bytes(&mut b);
        b
    }

    fn virtual_time(&self, i: Instant) -> Duration {
        i.saturating_duration_since(self.origin)
    }

    fn set_keylog(&self, conn: &mut ::quiche::Connection) {
        if let Some(k) = &self.cfg.keylog {
            conn.set_keylog(Box::new(KeyLogWriter(k.clone())));
        }
    }

    /// The server's connection for a datagram with destination connection ID `dcid`, or a
    /// new one for a client Initial.
    fn server_conn(&mut self, payload: &mut [u8], now: Duration) -> Option<usize> {
        let hdr = ::quiche::Header::from_slice(payload, CID_LEN).ok()?;
        let dcid: &[u8] = &hdr.dcid;
        if let Some(i) = self.conns[1]
            .iter()
            .position(|c| c.odcid == dcid || c.conn.source_id().as_ref() == dcid)
        {
            return Some(i);
        }
        if hdr.ty != ::quiche::Type::Initial {
            return None;
        }
        let odcid = dcid.to_vec();
        let scid = self.new_cid();
        let (local, peer) = (self.cfg.server_addr, self.cfg.client_addr);
        let Self { virt, configs, .. } = self;
        let scid = ::quiche::ConnectionId::from_ref(&scid);
        let mut conn = virt
            .enter(now, || {
                ::quiche::accept(&scid, None, local, peer, &mut configs[1])
            })
            .ok()?;
        self.set_keylog(&mut conn);
        self.conns[1].push(Conn {
            conn,
            app: App::default(),
            odcid,
            pending: None,
            closing: false,
            handshake_seen: false,
        });
        Some(self.conns[1].len() - 1)
    }

    /// Runs the application on `side`'s connections, reports what happened and drops the
    /// connections that have closed.
    fn react(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) {
        let s = at(side);
        let workload = flow.workload();
        let stop = flow.stopped();
        let Self {
            virt, conns, buf, ..
        } = self;
        for c in conns[s].iter_mut() {
            if c.conn.is_closed() {
                continue;
            }
            let pumped = if c.closing {
                None
            } else {
                Some(virt.enter(now, || c.app.pump(&mut c.conn, side, workload, stop, buf)))
            };
            if side == Side::Client && !c.handshake_seen && c.conn.is_established() {
                c.handshake_seen = true;
                let accepted = c.app.sent_early && c.conn.is_resumed();
                flow.handshake_done(c.app.report_index, now, accepted);
            }
            if let Some(p) = pumped {
                for e in p.errors {
                    flow.fail(e);
                }
                let report = match side {
                    Side::Client => Some(c.app.report_index),
                    // A server receives only uploads: bulk flows of one connection.
                    Side::Server | Side::Middle => flow.reports().len().checked_sub(1),
                };
                if let Some(r) = report {
                    flow.read(r, side, p.delivered, now);
                }
                if p.completed {
                    flow.completed(c.app.report_index, now);
                    c.closing = true;
                    let _ = virt.enter(now, || c.conn.close(true, 0, b"done"));
                }
            }
        }
        self.retire_closed(flow, side);
    }

    /// Drops `side`'s closed connections, keeping their counters; a connection that closed
    /// without either end meaning to fails the flow.
    fn retire_closed(&mut self, flow: &mut Lifecycle, side: Side) {
        let s = at(side);
        let mut k = 0;
        while k < self.conns[s].len() {
            let c = &self.conns[s][k];
            if !c.conn.is_closed() {
                k += 1;
                continue;
            }
            let orderly = c.closing
                || c.conn
                    .peer_error()
                    .is_some_and(|e| e.is_app && (e.reason == b"done" || e.reason == b"stopped"));
            if !orderly && !flow.is_finished() {
                let why = if c.conn.is_timed_out() {
                    "idle timeout".to_string()
                } else if let Some(e) = c.conn.peer_error() {
                    format!("closed by peer (error {:#x})", e.error_code)
                } else if let Some(e) = c.conn.local_error() {
                    format!("closed locally (error {:#x})", e.error_code)
                } else {
                    "closed".to_string()
                };
                flow.fail(format!("{side:?} connection lost: {why}"));
            }
            if side == Side::Client {
                if let Some(t) = c.conn.session() {
                    self.session = Some(t.to_vec());
                }
            }
            let c = self.conns[s].swap_remove(k);
            self.gone[s].add(&c.conn);
        }
    }
}

impl Connections for QuicheConnections {
    const RUN_ON_TIMEOUT: bool = true;
    const RUN_CLIENT_ON_OPEN: bool = true;

    fn advance(&mut self, now: Duration) {
        self.clock.set(now);
    }

    fn open(&mut self, flow: &mut Lifecycle, now: Duration) {
        // The previous connection's ticket, taken while it is still open (a client closes
        // a download as soon as it is complete).
        for c in &self.conns[0] {
            if let Some(t) = c.conn.session() {
                self.session = Some(t.to_vec());
            }
        }
        let scid = self.new_cid();
        let (local, peer) = (self.cfg.client_addr, self.cfg.server_addr);
        let session = self.session.clone().filter(|_| self.cfg.knobs.zero_rtt);
        let keylog = self.cfg.keylog.clone();
        let origin = self.origin;
        let Self {
            virt, configs, buf, ..
        } = self;
        let scid = ::quiche::ConnectionId::from_ref(&scid);
        // The first Initial is built at once: only then does the TLS stack hold a resumed
        // session in early data, so the application (run right after this) can send its
        // requests as 0-RTT.
        let made = virt.enter(now, || {
            let mut conn =
                ::quiche::connect(Some(SERVER_NAME), &scid, local, peer, &mut configs[0])?;
            if let Some(k) = keylog {
                conn.set_keylog(Box::new(KeyLogWriter(k)));
            }
            if let Some(s) = &session {
                conn.set_session(s)?;
            }
            let (len, info) = conn.send(buf)?;
            let first = (
                buf[..len].to_vec(),
                info.at.saturating_duration_since(origin),
            );
            Ok::<_, ::quiche::Error>((conn, first))
        });
        let (conn, first) = match made {
            Ok(c) => c,
            Err(e) => return flow.fail(format!("connect: {e}")),
        };
        let report_index = flow.begin_connection(now);
        self.conns[0].push(Conn {
            conn,
            app: App::client(flow.workload(), report_index),
            odcid: Vec::new(),
            pending: Some(first),
            closing: false,
            handshake_seen: false,
        });
    }

    fn on_datagram(
        &mut self,
        side: Side,
        _from: Side,
        now: Duration,
        mut payload: Vec<u8>,
        _ecn: netem::Ecn,
    ) -> bool {
        let i = match side {
            Side::Middle => return false,
            Side::Server => self.server_conn(&mut payload, now),
            Side::Client => ::quiche::Header::from_slice(&mut payload, CID_LEN)
                .ok()
                .and_then(|h| {
                    self.conns[0]
                        .iter()
                        .position(|c| c.conn.source_id().as_ref() == &h.dcid[..])
                }),
        };
        let Some(i) = i else {
            return false;
        };
        let (from, to) = match side {
            Side::Client => (self.cfg.server_addr, self.cfg.client_addr),
            _ => (self.cfg.client_addr, self.cfg.server_addr),
        };
        let Self { virt, conns, .. } = self;
        let c = &mut conns[at(side)][i];
        // A datagram quiche rejects (damaged, undecryptable) is dropped as by a real stack.
        let _ = virt.enter(now, || {
            c.conn.recv(&mut payload, ::quiche::RecvInfo { from, to })
        });
        true
    }

    fn stop(&mut self, side: Side, now: Duration) {
        let Self { virt, conns, .. } = self;
        for c in conns[at(side)].iter_mut() {
            c.closing = true;
            let _ = virt.enter(now, || c.conn.close(true, 0, b"stopped"));
        }
    }

    fn on_timeout(&mut self, side: Side, now: Duration) {
        let Self { virt, conns, .. } = self;
        for c in conns[at(side)].iter_mut() {
            virt.enter(now, || c.conn.on_timeout());
        }
    }

    fn drive(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) {
        self.react(flow, side, now);
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
        let s = at(side);
        let origin = self.origin;
        let Self {
            virt,
            conns,
            buf,
            failure,
            ..
        } = self;
        for c in conns[s].iter_mut() {
            if let Some((_, release)) = &c.pending {
                if *release > now {
                    continue;
                }
                let (d, _) = c.pending.take()?;
                return Some(Transmit::udp(d, side.opposite()));
            }
            match virt.enter(now, || c.conn.send(buf)) {
                Ok((len, info)) => {
                    let release = info.at.saturating_duration_since(origin);
                    let d = buf[..len].to_vec();
                    if release > now {
                        c.pending = Some((d, release));
                        continue;
                    }
                    return Some(Transmit::udp(d, side.opposite()));
                }
                Err(::quiche::Error::Done) => {}
                Err(e) => {
                    failure.get_or_insert_with(|| format!("{side:?} send: {e}"));
                }
            }
        }
        None
    }

    fn after_send(&mut self, flow: &mut Lifecycle, side: Side, _now: Duration) -> bool {
        if let Some(e) = self.failure.take() {
            flow.fail(e);
        }
        // Sending can close a connection (after its CONNECTION_CLOSE or an idle timeout).
        if self.conns[at(side)].iter().any(|c| c.conn.is_closed()) {
            self.retire_closed(flow, side);
            return true;
        }
        false
    }

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        self.conns[at(side)]
            .iter()
            .flat_map(|c| {
                let timer = c.conn.timeout_instant().map(|i| self.virtual_time(i));
                let release = c.pending.as_ref().map(|p| p.1);
                [timer, release]
            })
            .flatten()
            .min()
    }

    fn sample(&self, sender: Side) -> SenderSample {
        let Some(c) = self.conns[at(sender)].last() else {
            return SenderSample::default();
        };
        match c.conn.path_stats().next() {
            Some(p) => SenderSample {
                cwnd: p.cwnd as u64,
                srtt: p.rtt,
                // quiche does not expose its bytes in flight.
                in_flight: 0,
            },
            None => SenderSample::default(),
        }
    }

    fn report(&self, flow: &Lifecycle, r: &mut FlowReport) {
        let s = at(flow.data_sender());
        let mut t = self.gone[s];
        for c in &self.conns[s] {
            t.add(&c.conn);
        }
        if self.cfg.qlog_requested {
            r.warnings.push(
                "no qlog: quiclab writes no qlog for stack = \"quiche\" flows (their pcap and key log are written)".into(),
            );
        }
        r.packets_sent = t.sent;
        r.packets_lost = t.lost;
        r.final_mtu = u16::try_from(t.pmtu).unwrap_or(u16::MAX);
    }

    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        true
    }
}
