//! The TCP model's knobs, with Linux's defaults: the one definition the scenario format, the
//! engines and the model share. Serialized field names are the scenario keys (`flow.<field>`).

use std::time::Duration;

use congestion::config::{CcConfig, CommonCcConfig, CubicProfile};
use serde::{Deserialize, Serialize};

/// TLS handshake carried over a TCP connection (serialized as the scenario's `flow.tls` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlsMode {
    /// Plain TCP: the request follows the three-way handshake.
    #[serde(rename = "none")]
    None,
    /// TLS 1.2: two round trips of handshake messages.
    #[serde(rename = "1.2")]
    Tls12,
    /// TLS 1.3: one round trip.
    #[serde(rename = "1.3")]
    Tls13,
}

choice::names!(TlsMode { Tls13 = "1.3", Tls12 = "1.2", None = "none" });

/// How a TCP download carries its requests (serialized as the scenario's `flow.http` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HttpVersion {
    /// HTTP/2-style: every request at once on one connection, responses interleaved.
    #[serde(rename = "http2")]
    Http2,
    /// HTTP/1.1 keep-alive without pipelining over `http1_connections` parallel connections.
    #[serde(rename = "http1.1")]
    Http11,
}

choice::names!(HttpVersion { Http2 = "http2", Http11 = "http1.1" });

/// Loss recovery of the TCP sender (serialized as the scenario's `flow.recovery` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LossRecovery {
    /// Proportional Rate Reduction (RFC 6937) as Linux runs it (`tcp_cwnd_reduction`, the
    /// slow-start reduction bound): during fast recovery the sender sends in proportion to
    /// what the receiver reports delivered, reaching ssthresh when recovery ends.
    #[serde(rename = "prr")]
    Prr,
    /// RFC 6675: the window drops to ssthresh at once when recovery starts.
    #[serde(rename = "rfc6675")]
    Rfc6675,
}

choice::names!(LossRecovery { Prr = "prr", Rfc6675 = "rfc6675" });

/// TCP model knobs; defaults follow Linux.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Send buffer: unacknowledged plus unsent bytes the sender holds (bytes).
    pub send_buffer: u64,
    /// Lower bound of the retransmission timeout (Linux: 200 ms).
    pub min_rto: Duration,
    /// Window reduction in fast recovery (Linux: PRR).
    pub recovery: LossRecovery,
    /// RACK-TLP loss detection (RFC 8985, Linux's default `tcp_recovery = 1` with
    /// `tcp_early_retrans = 3`); off: RFC 6675's three-SACK rule and no tail loss probe.
    pub rack: bool,
    /// RTO before the first RTT sample, also for SYNs (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// How a download carries its requests.
    pub http: HttpVersion,
    /// HTTP/1.1: parallel keep-alive connections per download round (browsers open 6 per host).
    pub http1_connections: u32,
    /// The client requests ECN (RFC 3168) in its SYN, as Linux with `net.ipv4.tcp_ecn = 1`;
    /// servers and PEPs accept it when asked, as Linux's default `tcp_ecn = 2`. Off: Linux's
    /// default client, which never asks.
    #[serde(default)]
    pub ecn: bool,
}

impl Default for TcpKnobs {
    /// Linux's defaults (tcp_rmem's 3 MiB autotuning cap, 64 KiB − 1 initial window, 4 MiB send
    /// buffer, 200 ms minimum RTO, 40 ms delayed-ACK timer) with TLS 1.3 and HTTP/2.
    fn default() -> Self {
        TcpKnobs {
            mtu: 1500,
            tls: TlsMode::Tls13,
            sack: true,
            timestamps: true,
            delayed_ack: true,
            delayed_ack_timeout: Duration::from_millis(40),
            receive_window_max: 3 << 20,
            initial_receive_window: 65_535,
            send_buffer: 4 << 20,
            min_rto: Duration::from_millis(200),
            recovery: LossRecovery::Prr,
            rack: true,
            initial_rto: Duration::from_secs(1),
            http: HttpVersion::Http2,
            http1_connections: 6,
            ecn: false,
        }
    }
}

impl TcpKnobs {
    /// Linux's defaults for an IP MTU.
    pub fn with_mtu(mtu: u16) -> Self {
        TcpKnobs {
            mtu,
            ..TcpKnobs::default()
        }
    }

    /// HTTP/1.1's parallel connections per download round; `None` for HTTP/2-style multiplexing.
    pub fn http1_parallel(&self) -> Option<u32> {
        (self.http == HttpVersion::Http11).then_some(self.http1_connections)
    }
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
/// its own toward the server, relaying bytes through a bounded buffer. The model ignores
/// `position`: the engine routes the segments to it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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

impl Default for PepSpec {
    /// A gateway PEP (server side) with a 4 MiB relay buffer and Linux's CUBIC with HyStart
    /// over 16 MiB windows, as satellite PEPs (Linux boxes running PEPsal) run.
    fn default() -> Self {
        PepSpec {
            position: PepPosition::ServerSide,
            buffer: 4 << 20,
            cc: CcConfig::Cubic {
                hystart: true,
                profile: CubicProfile::Linux,
                common: CommonCcConfig {
                    initial_window_packets: 10,
                    loss_reduction_factor: 0.7,
                    minimum_window_packets: 2,
                },
            },
            receive_window_max: 16 << 20,
            send_buffer: 16 << 20,
        }
    }
}
