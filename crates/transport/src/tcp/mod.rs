//! A sans-IO, Linux-like TCP model implementing [`FlowAgent`](crate::agent::FlowAgent): three-way
//! handshake, TLS 1.2 / 1.3 modelled as message exchanges of realistic sizes, SACK loss recovery
//! (RFC 6675) or NewReno (RFC 6582), RTO with backoff (RFC 6298), delayed ACKs with Linux's
//! quick-ACK start, receive-window autotuning with window scaling, and the shared congestion
//! controllers of the `cc` crate.
//!
//! Receivers offer only the buffer space unread data leaves free, and senders facing a zero
//! window run the persist timer with zero-window probes (RFC 9293 §3.8.6).
//!
//! Layers, bottom up: [`segment`] (wire format), `rtt`, `scoreboard`, `sender` and `receiver`
//! (the two halves of a connection), `endpoint` (handshake and glue), `app` (the byte-stream
//! scripts of TLS and the workloads), `pep` (a split-connection proxy's two legs and the relay
//! between them) and `flow` ([`TcpFlow`], both ends of every connection and the PEP).
//!
//! Not modelled: pacing (Linux without fq does not pace), TSO/GRO, tail-loss probes and RACK
//! (a tail loss waits for the RTO), PRR (RFC 6675's pipe rule limits recovery sending), D-SACK
//! undo, HTTP/2 and TLS record overhead inside the byte stream.

mod app;
mod endpoint;
mod flow;
mod pep;
mod receiver;
mod rtt;
mod scoreboard;
pub mod segment;
mod sender;

use std::time::Duration;

pub use flow::TcpFlow;
pub use pep::PepHeld;

/// TLS carried over a TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain TCP: the request follows the three-way handshake.
    None,
    /// TLS 1.2: two round trips of handshake messages.
    Tls12,
    /// TLS 1.3: one round trip.
    Tls13,
}

/// What the application on a TCP flow does (same meaning as
/// [`QuicWorkload`](crate::quic::QuicWorkload)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpWorkload {
    /// The client sends as fast as allowed; the server discards.
    BulkUpload,
    /// The server sends as fast as allowed; the client discards.
    BulkDownload,
    /// The client requests `size` bytes in `streams` requests (each `size / streams` bytes,
    /// the last one taking the remainder), `connections` times in a row.
    Download {
        /// Total response bytes per round.
        size: u64,
        /// Requests per round.
        streams: u32,
        /// Sequential rounds, each opening its connection(s) with their own handshakes.
        connections: u32,
        /// `None`: HTTP/2-style, all requests at once on one connection, responses
        /// interleaved. `Some(k)`: HTTP/1.1 keep-alive without pipelining over up to `k`
        /// parallel connections (0 counts as 1); each connection sends its next request only
        /// after its previous response is complete.
        http1_parallel: Option<u32>,
    },
}

/// A split-connection TCP proxy (like PEPsal) on the flow's path.
#[derive(Debug, Clone)]
pub struct PepConfig {
    /// Bytes the PEP buffers per direction before it stops reading from the incoming leg.
    pub buffer: u64,
    /// Controller of the PEP's own connections.
    pub controller: cc::config::CcConfig,
    /// Receive-window cap of the PEP's connections.
    pub receive_window_max: u64,
    /// Send buffer of the PEP's connections.
    pub send_buffer: u64,
}

/// Everything needed to build one TCP flow; defaults follow Linux.
#[derive(Debug, Clone)]
pub struct TcpFlowConfig {
    /// Flow name.
    pub name: String,
    /// The application workload.
    pub workload: TcpWorkload,
    /// When the client sends its first SYN.
    pub start: Duration,
    /// When a bulk sender stops (it resets the connection, dropping buffered data).
    pub stop: Option<Duration>,
    /// Congestion controller of both ends.
    pub controller: cc::config::CcConfig,
    /// IP MTU; MSS = mtu − 40 − 12 with timestamps.
    pub mtu: u16,
    /// TLS version carried over the connection.
    pub tls: Tls,
    /// SACK with RFC 6675 recovery; off: NewReno.
    pub sack: bool,
    /// Timestamps option.
    pub timestamps: bool,
    /// Delayed ACKs; off: ACK every segment.
    pub delayed_ack: bool,
    /// Delayed-ACK timer.
    pub delayed_ack_timeout: Duration,
    /// Largest receive window autotuning may reach.
    pub receive_window_max: u64,
    /// Receive window at connection start.
    pub initial_receive_window: u64,
    /// Unacknowledged plus unsent bytes a sender holds.
    pub send_buffer: u64,
    /// Floor of the RTO's variance term (Linux: 200 ms).
    pub min_rto: Duration,
    /// RTO before the first RTT sample, also for SYNs (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// A split-connection PEP on the path (the engine routes the client's and the server's
    /// segments to `Side::Middle`); `None`: end to end.
    pub pep: Option<PepConfig>,
}

/// Errors building a flow.
#[derive(Debug, thiserror::Error)]
pub enum TcpFlowError {
    /// A knob outside what the model supports.
    #[error("{0}")]
    Invalid(String),
}

/// Smallest MSS accepted (Linux's tcp_min_snd_mss is 48; smaller makes no sense here either).
const MIN_MSS: u16 = 48;
/// Linux's tcp_syn_retries.
const SYN_RETRIES: u32 = 6;
/// Linux's tcp_retries2: timeouts of one segment before the connection is given up.
const DATA_RETRIES: u32 = 15;

/// Per-endpoint parameters derived once from the configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    /// Maximum segment size (data bytes).
    pub mss: u32,
    /// SACK and RFC 6675 recovery.
    pub sack: bool,
    /// Timestamps option.
    pub timestamps: bool,
    /// Delayed ACKs.
    pub delayed_ack: bool,
    /// Delayed-ACK timer.
    pub delayed_ack_timeout: Duration,
    /// Receive window cap (at most 1 GiB, the largest window scaling can express).
    pub receive_window_max: u64,
    /// Receive window at start (at most the cap).
    pub initial_receive_window: u64,
    /// Send buffer.
    pub send_buffer: u64,
    /// RTO variance floor.
    pub min_rto: Duration,
    /// RTO before the first sample and for SYNs.
    pub initial_rto: Duration,
    /// Congestion controller.
    pub controller: cc::config::CcConfig,
    /// Window scale shift that lets `receive_window_max` fit 16 bits.
    pub wscale: u8,
    /// SYN / SYN-ACK retransmissions before giving up.
    pub syn_retries: u32,
    /// Consecutive RTO backoffs before giving up.
    pub max_backoffs: u32,
}

impl Params {
    /// Validates the configuration and derives the parameters.
    pub(crate) fn from_config(c: &TcpFlowConfig) -> Result<Params, TcpFlowError> {
        let invalid = |m: String| Err(TcpFlowError::Invalid(m));
        let overhead = 40 + if c.timestamps { 12 } else { 0 };
        let mss = c.mtu.saturating_sub(overhead);
        if mss < MIN_MSS {
            return invalid(format!(
                "TCP needs an MSS of at least {MIN_MSS} bytes; MTU {} gives {mss}",
                c.mtu
            ));
        }
        if c.receive_window_max == 0 || c.initial_receive_window == 0 || c.send_buffer == 0 {
            return invalid("TCP windows and the send buffer must be positive".into());
        }
        if c.initial_rto.is_zero() {
            return invalid("TCP initial RTO must be positive".into());
        }
        if c.delayed_ack && c.delayed_ack_timeout.is_zero() {
            return invalid("TCP delayed-ACK timeout must be positive".into());
        }
        // RFC 7323 caps the shift at 14 (windows up to 1 GiB).
        let max = c.receive_window_max.min(65_535 << 14);
        let mut wscale = 0u8;
        while (max >> wscale) > 65_535 {
            wscale += 1;
        }
        Ok(Params {
            mss: u32::from(mss),
            sack: c.sack,
            timestamps: c.timestamps,
            delayed_ack: c.delayed_ack,
            delayed_ack_timeout: c.delayed_ack_timeout,
            receive_window_max: max,
            initial_receive_window: c.initial_receive_window.min(max),
            send_buffer: c.send_buffer,
            min_rto: c.min_rto,
            initial_rto: c.initial_rto,
            controller: c.controller,
            wscale,
            syn_retries: SYN_RETRIES,
            max_backoffs: DATA_RETRIES,
        })
    }
}

/// Linux-like defaults for unit tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A config with Linux defaults, CUBIC, plain TCP, 1 MB download.
    pub(crate) fn config() -> TcpFlowConfig {
        TcpFlowConfig {
            name: "t".into(),
            workload: TcpWorkload::Download {
                size: 1_000_000,
                streams: 1,
                connections: 1,
                http1_parallel: None,
            },
            start: Duration::ZERO,
            stop: None,
            controller: cc::config::CcConfig::Cubic {
                hystart: false,
                common: cc::config::CommonCcConfig {
                    initial_window_packets: 10,
                    loss_reduction_factor: 0.7,
                    minimum_window_packets: 2,
                },
            },
            mtu: 1500,
            tls: Tls::None,
            sack: true,
            timestamps: true,
            delayed_ack: true,
            delayed_ack_timeout: Duration::from_millis(40),
            receive_window_max: 6 << 20,
            initial_receive_window: 64 * 1024,
            send_buffer: 4 << 20,
            min_rto: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            pep: None,
        }
    }

    /// Parameters of [`config`].
    pub(crate) fn params() -> Params {
        match Params::from_config(&config()) {
            Ok(p) => p,
            Err(e) => panic!("test config invalid: {e}"),
        }
    }
}
