//! QUIC flows: two real quinn-proto endpoints driven in virtual time, with the workloads of the
//! scenario format (bulk upload/download with a discard receiver, sized downloads over several
//! streams, sequential connections with 0-RTT resumption).
//!
//! - [`config`]: the knobs ([`QuicKnobs`]) and the quinn configurations built from them.
//! - `endpoint`: one endpoint and its connections in virtual time (datagrams, timers, events).
//! - `app`: the application on each connection (streams, requests, completion).
//!
//! This module ties them together: both endpoints indexed by [`Side`] as
//! [`QuicConnections`], which the shared [`FlowDriver`] runs as [`QuicFlow`].

mod app;
pub mod config;
mod endpoint;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quinn_proto::{ClientConfig, ConnectionError, Event, TokenStore, VarInt};

use crate::agent::{EcnReport, FlowReport, SenderSample, Side, Transmit};
use crate::cc_adapter::CcProbe;
use crate::clock::{to_instant, VirtualClock};
use crate::driver::{Connections, FlowDriver, Lifecycle};
use crate::flow::FlowPlan;
use crate::null_crypto::{NullClientConfig, NullTag};
use crate::qlog::{AcceptSlot, QlogErrors, TapClientConfig, TapServerConfig};
use crate::seeded::{sub_seed, SharedRng};
use crate::tls::{self, KeyLogBuffer, TlsError, SERVER_NAME};
use app::App;
use config::{qlog_stream, server_config, Transport, CID_LEN};
pub use config::{QuicCrypto, QuicKnobs};
use endpoint::{Conn, Host};

/// Everything needed to build one QUIC flow: the shared plan, the QUIC knobs and the per-run
/// bits (seed, addresses, where qlogs and TLS secrets go).
#[derive(Debug, Clone)]
pub struct QuicFlowConfig {
    /// Name, workload, start, stop and controller.
    pub plan: FlowPlan,
    /// Transport knobs.
    pub knobs: QuicKnobs,
    /// Seed from which every random source of both endpoints derives.
    pub seed: u64,
    /// The client's address as the server sees it.
    pub client_addr: SocketAddr,
    /// The server's address.
    pub server_addr: SocketAddr,
    /// Directory for one qlog file per connection and side.
    pub qlog_dir: Option<PathBuf>,
    /// Where TLS secrets are logged (for decrypting a pcap).
    pub keylog: Option<KeyLogBuffer>,
    /// A link on the flow's path may flip bits (`link.corrupt`, `link.ber`): with
    /// `crypto = "none"` the null AEAD then checksums every packet so a flipped bit fails it as
    /// with the real cipher; otherwise its tag is fixed bytes ([`NullTag`]).
    pub bit_errors: bool,
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

/// Index of a side's endpoint in per-side arrays (a QUIC flow has no middle).
fn at(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server | Side::Middle => 1,
    }
}

/// One QUIC flow: a client endpoint, a server endpoint, and the workload.
pub type QuicFlow = FlowDriver<QuicConnections>;

/// Both endpoints of one QUIC flow and their applications (the lifecycle is the
/// [`FlowDriver`]'s).
pub struct QuicConnections {
    cfg: QuicFlowConfig,
    clock: VirtualClock,
    /// Client and server endpoints, indexed by [`at`].
    hosts: [Host; 2],
    /// Each side's congestion-controller probe, indexed by [`at`].
    probes: [Arc<CcProbe>; 2],
    client_tls: Arc<dyn quinn_proto::crypto::ClientConfig>,
    /// The client's address-validation tokens, kept across the flow's connections (as a
    /// browser keeps them per server).
    token_store: Arc<dyn TokenStore>,
    cid_rng: SharedRng,
    /// This flow's qlog problems (its own sink: flows run in parallel threads).
    qlog_errors: QlogErrors,
    /// With qlogs, where the server puts the frame tap of the connection it is accepting.
    accept_slot: Option<AcceptSlot>,
    /// Scratch of [`Connections::drive`]: the connections' events, kept to reuse its
    /// allocation.
    events: Vec<(usize, Event)>,
    /// Scratch of [`Self::pump_streams`]: what the application did, kept likewise.
    pumped: app::Pumped,
    /// CE-marked datagrams each side received (with ECN on), indexed by [`at`].
    ce_received: [u64; 2],
    /// The codepoint of each side's last datagram (with ECN on): ECT while quinn's ECN
    /// validation holds.
    last_sent_ecn: [netem::Ecn; 2],
}

/// quinn's codepoint for the engine's (Not-ECT is no codepoint).
fn quinn_ecn(ecn: netem::Ecn) -> Option<quinn_proto::EcnCodepoint> {
    match ecn {
        netem::Ecn::NotEct => None,
        netem::Ecn::Ect0 => Some(quinn_proto::EcnCodepoint::Ect0),
        netem::Ecn::Ect1 => Some(quinn_proto::EcnCodepoint::Ect1),
        netem::Ecn::Ce => Some(quinn_proto::EcnCodepoint::Ce),
    }
}

/// The engine's codepoint for quinn's.
fn netem_ecn(ecn: Option<quinn_proto::EcnCodepoint>) -> netem::Ecn {
    match ecn {
        None => netem::Ecn::NotEct,
        Some(quinn_proto::EcnCodepoint::Ect0) => netem::Ecn::Ect0,
        Some(quinn_proto::EcnCodepoint::Ect1) => netem::Ecn::Ect1,
        Some(quinn_proto::EcnCodepoint::Ce) => netem::Ecn::Ce,
    }
}

impl std::fmt::Debug for QuicConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConnections")
            .field("client", &self.hosts[0].conns.len())
            .field("server", &self.hosts[1].conns.len())
            .finish()
    }
}

impl FlowDriver<QuicConnections> {
    /// Builds both endpoints; nothing is sent before `cfg.plan.start`.
    pub fn new(cfg: QuicFlowConfig, clock: VirtualClock) -> Result<Self, QuicFlowError> {
        let payload = cfg.knobs.max_udp_payload();
        if payload < 1200 {
            return Err(QuicFlowError::Invalid(format!(
                "QUIC needs a UDP payload of at least 1200 bytes (IP MTU >= 1228); got {payload}"
            )));
        }
        let root = SharedRng::new(cfg.seed);
        let probes = [Arc::new(CcProbe::default()), Arc::new(CcProbe::default())];
        let client_tls: Arc<dyn quinn_proto::crypto::ClientConfig> = match (
            tls::client_config(
                SharedRng::new(sub_seed(cfg.seed, 1)),
                &clock,
                cfg.keylog.clone(),
                cfg.knobs.common.zero_rtt,
            )?,
            cfg.knobs.crypto,
        ) {
            (t, QuicCrypto::Tls) => t,
            (t, QuicCrypto::None) => {
                Arc::new(NullClientConfig(t, NullTag::for_path(cfg.bit_errors)))
            }
        };
        let mut server = server_config(
            SharedRng::new(sub_seed(cfg.seed, 2)),
            root.bytes32(),
            &clock,
            cfg.keylog.clone(),
            &cfg.knobs,
            NullTag::for_path(cfg.bit_errors),
        )?;
        server.transport_config(transport(&cfg).config(probes[1].clone(), None)?);
        // With qlogs, the server's keys parse each packet's frames for the connection's qlog.
        let accept_slot = cfg.qlog_dir.as_ref().map(|_| AcceptSlot::default());
        if let Some(slot) = &accept_slot {
            server.crypto = TapServerConfig::new(server.crypto.clone(), slot.clone());
        }
        let hosts = [
            Host::new(&cfg.knobs, &root, None),
            Host::new(&cfg.knobs, &root, Some(server)),
        ];
        let token_store = cfg.knobs.token_store();
        let plan = cfg.plan.clone();
        let conns = QuicConnections {
            cid_rng: SharedRng::new(sub_seed(cfg.seed, 3)),
            cfg,
            clock,
            hosts,
            probes,
            client_tls,
            token_store,
            qlog_errors: QlogErrors::default(),
            accept_slot,
            events: Vec::new(),
            pumped: app::Pumped::default(),
            ce_received: [0; 2],
            last_sent_ecn: [netem::Ecn::NotEct; 2],
        };
        Ok(FlowDriver::from_parts(plan, conns))
    }
}

impl QuicConnections {
    /// The application's part of [`Connections::drive`], on the events in `self.events`.
    fn react(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) {
        let stop_reached = flow.stopped();
        let mut events = std::mem::take(&mut self.events);
        for (idx, ev) in events.drain(..) {
            self.on_event(flow, side, idx, ev, now);
        }
        self.events = events;
        self.pump_streams(flow, side, now, stop_reached);
        self.hosts[at(side)].retire_drained();
    }

    fn on_event(&mut self, flow: &mut Lifecycle, side: Side, idx: usize, ev: Event, now: Duration) {
        match ev {
            Event::Connected if side == Side::Client => {
                let c = &self.hosts[0].conns[idx];
                flow.handshake_done(c.app.report_index, now, c.conn.accepted_0rtt());
            }
            Event::ConnectionLost { reason } => {
                self.hosts[at(side)].conns[idx].closing = true;
                // Every application close here is ours ("done", "stopped"). A client that has
                // its whole response before the handshake is confirmed (a small 0-RTT download)
                // closes then, and RFC 9000 §10.2.3 makes that close a transport
                // APPLICATION_ERROR in a Handshake packet: the server sees the same orderly
                // close, not a failure.
                let expected = match &reason {
                    ConnectionError::LocallyClosed | ConnectionError::ApplicationClosed(_) => true,
                    ConnectionError::ConnectionClosed(close) => {
                        close.error_code == quinn_proto::TransportErrorCode::APPLICATION_ERROR
                    }
                    _ => false,
                };
                if !expected && !flow.is_finished() {
                    flow.fail(format!("{side:?} connection lost: {reason}"));
                }
            }
            _ => {}
        }
    }

    /// Runs the application on `side`'s connections and books what it delivered and completed.
    fn pump_streams(&mut self, flow: &mut Lifecycle, side: Side, now: Duration, stop: bool) {
        let workload = flow.workload();
        let mut done = std::mem::take(&mut self.pumped);
        app::pump(
            &mut self.hosts[at(side)].conns,
            side,
            workload,
            stop,
            &mut done,
        );
        for e in done.errors.drain(..) {
            flow.fail(e);
        }
        for &(ci, n) in &done.delivered_by {
            // The client knows which report a connection has; a server receives only
            // uploads, which are bulk flows of one connection (the newest report).
            let report = match side {
                Side::Client => Some(self.hosts[0].conns[ci].app.report_index),
                Side::Server | Side::Middle => flow.reports().len().checked_sub(1),
            };
            if let Some(r) = report {
                flow.read(r, side, n, now);
            }
        }
        for &ci in &done.completed {
            let c = &mut self.hosts[0].conns[ci];
            flow.completed(c.app.report_index, now);
            c.conn.close(
                to_instant(now),
                VarInt::from_u32(0),
                Bytes::from_static(b"done"),
            );
        }
        self.pumped = done;
    }
}

impl Connections for QuicConnections {
    const RUN_ON_TIMEOUT: bool = true;
    const RUN_CLIENT_ON_OPEN: bool = true;

    fn advance(&mut self, now: Duration) {
        self.clock.set(now);
    }

    /// Opens the client's next connection.
    fn open(&mut self, flow: &mut Lifecycle, now: Duration) {
        let client = &mut self.hosts[0];
        let qlog = qlog_stream(
            self.cfg.qlog_dir.as_deref(),
            &self.cfg.plan.name,
            Side::Client,
            client,
            &self.qlog_errors,
            &self.clock,
        );
        let (qlog, tap) = qlog.unzip();
        let transport = match transport(&self.cfg).config(self.probes[0].clone(), qlog) {
            Ok(t) => t,
            Err(e) => return flow.fail(e.to_string()),
        };
        // With a qlog, the connection's keys parse each packet's frames for it.
        let crypto: Arc<dyn quinn_proto::crypto::ClientConfig> = match tap {
            Some(tap) => TapClientConfig::new(self.client_tls.clone(), tap),
            None => self.client_tls.clone(),
        };
        let mut cc = ClientConfig::new(crypto);
        cc.transport_config(transport);
        cc.token_store(self.token_store.clone());
        let rng = self.cid_rng.clone();
        cc.initial_dst_cid_provider(Arc::new(move || {
            let mut b = [0u8; CID_LEN];
            rng.fill(&mut b);
            quinn_proto::ConnectionId::new(&b)
        }));
        let result =
            self.hosts[0]
                .endpoint
                .connect(to_instant(now), cc, self.cfg.server_addr, SERVER_NAME);
        let (handle, conn) = match result {
            Ok(x) => x,
            Err(e) => return flow.fail(format!("connect: {e}")),
        };
        let report_index = flow.begin_connection(now);
        let app = App::client(flow.workload(), report_index);
        self.hosts[0].conns.push(Conn {
            handle,
            conn,
            app,
            closing: false,
        });
    }

    fn on_datagram(
        &mut self,
        side: Side,
        _from: Side,
        now: Duration,
        payload: Vec<u8>,
        ecn: netem::Ecn,
    ) -> bool {
        // QUIC cannot be split: no middlebox ever terminates it.
        if side == Side::Middle {
            return false;
        }
        // With ECN off, quinn's socket reports no codepoint (as one without IP_RECVTOS).
        let ecn = if self.cfg.knobs.common.ecn {
            if ecn == netem::Ecn::Ce {
                self.ce_received[at(side)] += 1;
            }
            quinn_ecn(ecn)
        } else {
            None
        };
        let remote = match side {
            Side::Client => self.cfg.server_addr,
            Side::Server | Side::Middle => self.cfg.client_addr,
        };
        let cfg = &self.cfg;
        let server_probe = &self.probes[1];
        let qlog_errors = &self.qlog_errors;
        let accept_slot = &self.accept_slot;
        let clock = &self.clock;
        self.hosts[at(side)].handle(now, remote, payload, ecn, |host| {
            let mut sc = host.server_config.clone()?;
            let (qlog, tap) = qlog_stream(
                cfg.qlog_dir.as_deref(),
                &cfg.plan.name,
                Side::Server,
                host,
                qlog_errors,
                clock,
            )
            .unzip();
            if let Some(slot) = accept_slot {
                slot.set(tap);
            }
            if let Ok(t) = transport(cfg).config(server_probe.clone(), qlog) {
                sc.transport_config(t);
            }
            Some(Arc::new(sc))
        });
        // The connection is accepted (or refused): later keys belong to their connections.
        if let Some(slot) = &self.accept_slot {
            slot.set(None);
        }
        true
    }

    fn stop(&mut self, side: Side, now: Duration) {
        // The traffic generator stops: whatever quinn still buffers must not keep flowing, so
        // the connection closes now (CONNECTION_CLOSE discards it).
        for c in self.hosts[at(side)].conns.iter_mut() {
            c.conn.close(
                to_instant(now),
                VarInt::from_u32(0),
                Bytes::from_static(b"stopped"),
            );
        }
    }

    fn on_timeout(&mut self, side: Side, now: Duration) {
        self.hosts[at(side)].handle_timeout(now);
    }

    /// Runs application logic and endpoint bookkeeping for `side` after any input.
    fn drive(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) {
        self.hosts[at(side)].poll_events(&mut self.events);
        self.react(flow, side, now);
    }

    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit> {
        let (d, ecn) = self.hosts[at(side)].poll_transmit(now)?;
        let mut t = Transmit::udp(d, side.opposite());
        // With ECN off, quinn's socket sends Not-ECT whatever quinn asks for, and quinn's
        // validation turns ECN off once ACKs come back without counts.
        if self.cfg.knobs.common.ecn {
            t.ecn = netem_ecn(ecn);
            self.last_sent_ecn[at(side)] = t.ecn;
        }
        Some(t)
    }

    /// Sending changes no stream's readable data and no send credit (those move only with
    /// received packets and timers), so the application has something to do only if sending
    /// produced events (e.g. a close).
    fn after_send(&mut self, flow: &mut Lifecycle, side: Side, now: Duration) -> bool {
        if self.hosts[at(side)].poll_events(&mut self.events) {
            self.react(flow, side, now);
            return true;
        }
        false
    }

    fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
        self.hosts[at(side)].poll_timeout()
    }

    fn sample(&self, sender: Side) -> SenderSample {
        let s = at(sender);
        match self.hosts[s].conns.last() {
            Some(c) => SenderSample {
                cwnd: c.conn.stats().path.cwnd,
                srtt: c.conn.rtt(),
                in_flight: self.probes[s].in_flight(),
            },
            None => SenderSample::default(),
        }
    }

    fn report(&self, flow: &Lifecycle, r: &mut FlowReport) {
        // A write failing in a file quinn still holds would otherwise surface only after this.
        for f in self.hosts.iter().flat_map(|h| &h.qlog_files) {
            f.flush();
        }
        let s = at(flow.data_sender());
        let (sender, receiver) = (&self.hosts[s], &self.hosts[1 - s]);
        r.first_congestion_s = self.probes[s].first_congestion().map(|t| t.as_secs_f64());
        r.warnings = self.qlog_errors.to_vec();
        for st in sender.stats() {
            r.packets_sent += st.path.sent_packets;
            r.packets_lost += st.path.lost_packets;
            r.congestion_events += st.path.congestion_events;
            r.final_mtu = st.path.current_mtu;
        }
        for st in receiver.stats() {
            r.ack_frames_sent += st.frame_tx.acks;
            r.max_data_frames_sent += st.frame_tx.max_data;
            r.max_stream_data_frames_sent += st.frame_tx.max_stream_data;
        }
        if self.cfg.knobs.common.ecn {
            r.ecn = Some(EcnReport {
                capable: self.last_sent_ecn[s] != netem::Ecn::NotEct,
                ce_received: self.ce_received[1 - s],
                ce_congestion_events: self.probes[s].ce_events(),
            });
        }
    }

    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        true
    }
}

/// The flow-wide inputs of each connection's transport config (borrowed, never cloned).
fn transport(cfg: &QuicFlowConfig) -> Transport<'_> {
    Transport {
        knobs: &cfg.knobs,
        workload: cfg.plan.workload,
        cc: cfg.plan.cc,
    }
}
