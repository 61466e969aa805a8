//! The resolved scenario: what the engines consume. All units are base units (see `netem::config`).
//! This module is the contract between the parser and the engines; the parser fills it, the
//! engines never see TOML.

use std::time::Duration;

use cc::config::CcConfig;
use netem::config::LinkConfig;
use serde::{Deserialize, Serialize};

/// One fully resolved run: a scenario with every sweep axis fixed, plus its seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Free-form name (defaults to the file stem).
    pub name: String,
    /// Hard stop of the simulation (virtual time).
    pub duration: Duration,
    /// Period of time-series samples (cwnd, RTT, queue) and width of throughput bins.
    pub sample_interval: Duration,
    /// Start of the measurement window used for `goodput_window_bps` (e.g. to skip slow start).
    pub measure_from: Duration,
    /// End of the measurement window (`None` = end of the flow).
    pub measure_until: Option<Duration>,
    /// The bottleneck link, one config per direction.
    pub bottleneck: DuplexLink,
    /// Transport flows.
    pub flows: Vec<FlowSpec>,
    /// Cross-traffic sources crossing the bottleneck.
    pub cross: Vec<CrossSpec>,
}

/// A link with its two directions: `up` is client → server, `down` is server → client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplexLink {
    /// Client → server.
    pub up: LinkConfig,
    /// Server → client.
    pub down: LinkConfig,
}

/// Which transport implementation carries a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stack {
    /// The real quinn-proto state machine driven in virtual time.
    Quic,
    /// quiclab's Linux-like TCP model (with TLS modelled as message exchanges).
    Tcp,
}

impl Stack {
    /// The value of `flow.stack` that selects this stack.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Quic => "quic",
            Stack::Tcp => "tcp",
        }
    }
}

/// TLS handshake carried over a TCP flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlsMode {
    /// Plain TCP: the request follows the three-way handshake.
    None,
    /// TLS 1.2: two round trips of handshake messages.
    Tls12,
    /// TLS 1.3: one round trip.
    Tls13,
}

/// Which side of the bottleneck a PEP sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PepPosition {
    /// Between the client's access link and the bottleneck (e.g. a satellite terminal).
    ClientSide,
    /// Between the bottleneck and the server's access link (e.g. a satellite gateway).
    ServerSide,
}

/// A split-connection TCP proxy (like PEPsal): terminates the client's TCP connection and opens
/// its own toward the server, relaying bytes through a bounded buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PepSpec {
    /// Which side of the bottleneck it sits on.
    pub position: PepPosition,
    /// Bytes the PEP holds per direction before it stops reading (flow control backs up).
    pub buffer: u64,
    /// Controller of the PEP's own connections (both legs).
    pub cc: CcConfig,
    /// Receive-window cap of the PEP's connections.
    pub receive_window_max: u64,
    /// Send buffer of the PEP's connections.
    pub send_buffer: u64,
}

/// TCP model knobs; defaults follow Linux.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpKnobs {
    /// IP MTU; MSS = mtu − 40 (IPv4 + TCP headers) − 12 when timestamps are on.
    pub mtu: u16,
    /// TLS handshake run before the request.
    pub tls: TlsMode,
    /// SACK (RFC 2018) with RFC 6675 loss recovery; off: NewReno-style recovery (RFC 6582).
    pub sack: bool,
    /// Timestamps option (12 bytes per segment, RTT samples from every ACK).
    pub timestamps: bool,
    /// Delayed ACKs: every second full segment or after `delayed_ack_timeout`; off: ACK every segment.
    pub delayed_ack: bool,
    /// Delayed-ACK timer (Linux: 40 ms minimum).
    pub delayed_ack_timeout: Duration,
    /// Largest receive window autotuning may reach (bytes).
    pub receive_window_max: u64,
    /// Receive window advertised at connection start (bytes).
    pub initial_receive_window: u64,
    /// Send buffer: unacknowledged plus unsent bytes the sender holds.
    pub send_buffer: u64,
    /// Lower bound of the retransmission timeout (Linux: 200 ms).
    pub min_rto: Duration,
    /// RTO before the first RTT sample (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// Download requests as HTTP/1.1 over this many parallel keep-alive connections (one
    /// request at a time each); `None`: HTTP/2-style multiplexing over one connection.
    pub http1_parallel: Option<u32>,
}

/// What the application on a flow does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Workload {
    /// Saturated sender with a discard receiver. `upload = true`: client sends (seed 001's
    /// traffic generator on the client); `false`: server sends.
    Bulk {
        /// `true`: the client sends.
        upload: bool,
    },
    /// The client requests `size` bytes, split evenly over `streams` concurrent streams; the
    /// server answers on each stream. Repeated `connections` times in sequence (the second and
    /// later connections may use 0-RTT resumption).
    Download {
        /// Total bytes requested per connection.
        size: u64,
        /// Concurrent streams the size is split over.
        streams: u32,
        /// Connections made one after the other.
        connections: u32,
    },
}

/// QUIC transport knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuicKnobs {
    /// IP MTU of the path; the max UDP payload is `mtu - 28` (IPv4 + UDP headers).
    pub mtu: u16,
    /// Let quinn probe for a larger MTU (DPLPMTUD). Off by default so the MTU is what you set.
    pub mtu_discovery: bool,
    /// Initial RTT estimate before the first sample.
    pub initial_rtt: Duration,
    /// Per-stream receive window (bytes), i.e. initial MAX_STREAM_DATA.
    pub stream_window: u64,
    /// Connection receive window (bytes), i.e. initial MAX_DATA.
    pub conn_window: u64,
    /// Data-sender's send buffer limit (bytes).
    pub send_window: u64,
    /// ACK ratio 1:n requested from the peer via the ACK-frequency extension (`None` = quinn's
    /// default, which acknowledges every second ack-eliciting packet).
    pub ack_ratio: Option<u32>,
    /// Max ACK delay requested via the ACK-frequency extension (`None` = quinn default, 25 ms).
    pub max_ack_delay: Option<Duration>,
    /// Use 0-RTT on the second and later connections of a download flow.
    pub zero_rtt: bool,
}

/// One transport flow between a client on the left and a server on the right of the dumbbell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// Unique name (used in results and file names).
    pub name: String,
    /// Transport implementation.
    pub stack: Stack,
    /// What the application does.
    pub workload: Workload,
    /// When the client starts its first connection.
    pub start: Duration,
    /// When a bulk flow stops sending (`None` = until the end of the run).
    pub stop: Option<Duration>,
    /// Congestion controller of this flow's senders.
    pub cc: CcChoice,
    /// QUIC transport knobs (used when `stack` is `Quic`).
    pub quic: QuicKnobs,
    /// TCP model knobs (used when `stack` is `Tcp`).
    pub tcp: TcpKnobs,
    /// A split-connection PEP on this (TCP) flow's path, if any.
    pub pep: Option<PepSpec>,
    /// Client-side access link (client ↔ bottleneck).
    pub client_access: DuplexLink,
    /// Server-side access link (bottleneck ↔ server).
    pub server_access: DuplexLink,
}

/// Congestion control: one of ours, or one of quinn's built-in controllers for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum CcChoice {
    /// One of quiclab's controllers (crate `cc`).
    Ours(CcConfig),
    /// quinn's built-in NewReno.
    QuinnNewReno,
    /// quinn's built-in CUBIC.
    QuinnCubic,
    /// quinn's built-in BBR.
    QuinnBbr,
}

/// Cross-traffic sources live in netem, where both engines generate them.
pub use netem::cross::{CrossPattern, CrossSpec};

/// One point of a sweep: the axis values that produced it (for tables) and the scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// `key = value` pairs of the sweep axes, in axis order (empty without a sweep).
    pub axes: Vec<(String, String)>,
    /// The resolved scenario of this point.
    pub scenario: Scenario,
}

/// One run to execute: a sweep point, a repetition index and the seed derived from both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Stable identifier: `p{point}-r{rep}`; resume keys on it.
    pub id: String,
    /// Index into `LoadedScenario::points`.
    pub point: usize,
    /// Repetition index, from 0.
    pub rep: u32,
    /// Seed of this run (see `scenario::run_seed`).
    pub seed: u64,
}
