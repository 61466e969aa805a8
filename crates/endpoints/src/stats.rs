//! Transport statistics snapshots (kernel `TCP_INFO`, quinn connection stats) in a serializable
//! form: written by `quiclab get --json` and `serve --stats-file`, read back by the emulator.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A snapshot of a TCP socket's `TCP_INFO` (units in the field names; rates in bit/s).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpInfoSnapshot {
    /// Congestion control algorithm (`TCP_CONGESTION`).
    pub congestion: String,
    /// TCP state (1 = ESTABLISHED).
    pub state: u8,
    /// Congestion window in segments.
    pub cwnd_segments: u32,
    /// Slow-start threshold in segments (a huge value means "not set yet").
    pub ssthresh_segments: u32,
    /// Sender maximum segment size.
    pub snd_mss: u32,
    /// Receiver maximum segment size estimate.
    pub rcv_mss: u32,
    /// Path MTU.
    pub pmtu: u32,
    /// Smoothed RTT in microseconds.
    pub rtt_us: u32,
    /// RTT variation in microseconds.
    pub rttvar_us: u32,
    /// Minimum RTT seen in microseconds.
    pub min_rtt_us: u32,
    /// Retransmission timeout in microseconds.
    pub rto_us: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Segments currently considered lost.
    pub lost: u32,
    /// Segments in flight (unacknowledged).
    pub unacked: u32,
    /// Reordering metric.
    pub reordering: u32,
    /// Segments sent.
    pub segs_out: u32,
    /// Segments received.
    pub segs_in: u32,
    /// Data-carrying segments sent.
    pub data_segs_out: u32,
    /// Data-carrying segments received.
    pub data_segs_in: u32,
    /// Bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// Bytes received from the peer.
    pub bytes_received: u64,
    /// Bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Bytes retransmitted.
    pub bytes_retrans: u64,
    /// Latest delivery-rate estimate (bit/s).
    pub delivery_rate_bps: u64,
    /// Current pacing rate (bit/s).
    pub pacing_rate_bps: u64,
    /// Time busy sending data (µs).
    pub busy_time_us: u64,
    /// Time limited by the receive window (µs).
    pub rwnd_limited_us: u64,
    /// Time limited by the send buffer (µs).
    pub sndbuf_limited_us: u64,
    /// Segments delivered.
    pub delivered: u32,
    /// D-SACKed duplicate segments.
    pub dsack_dups: u32,
    /// Reordering events seen.
    pub reord_seen: u32,
    /// ECN was negotiated on the connection (`tcpi_options` & `TCPI_OPT_ECN`).
    #[serde(default)]
    pub ecn: bool,
}

/// A snapshot of quinn's `ConnectionStats` with the figures the reports use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuicStatsSnapshot {
    /// Smoothed RTT (ms).
    pub rtt_ms: f64,
    /// Congestion window (bytes).
    pub cwnd: u64,
    /// Current path MTU (UDP payload bytes).
    pub current_mtu: u16,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Bytes declared lost.
    pub lost_bytes: u64,
    /// Congestion events.
    pub congestion_events: u64,
    /// UDP datagrams sent (a GSO batch counts each datagram).
    pub udp_tx_datagrams: u64,
    /// UDP datagrams received.
    pub udp_rx_datagrams: u64,
    /// UDP payload bytes sent.
    pub udp_tx_bytes: u64,
    /// UDP payload bytes received.
    pub udp_rx_bytes: u64,
    /// Send-side I/O operations (syscalls).
    pub udp_tx_ios: u64,
    /// ACK frames sent.
    pub ack_frames_tx: u64,
    /// MAX_DATA frames sent.
    pub max_data_frames_tx: u64,
    /// MAX_STREAM_DATA frames sent.
    pub max_stream_data_frames_tx: u64,
    /// NEW_TOKEN frames received (address-validation tokens from the server).
    #[serde(default)]
    pub new_token_frames_rx: u64,
}

impl QuicStatsSnapshot {
    /// Takes a snapshot of a live (or closed) quinn connection.
    pub fn of(conn: &quinn::Connection) -> Self {
        let s = conn.stats();
        Self {
            rtt_ms: s.path.rtt.as_secs_f64() * 1e3,
            cwnd: s.path.cwnd,
            current_mtu: s.path.current_mtu,
            sent_packets: s.path.sent_packets,
            lost_packets: s.path.lost_packets,
            lost_bytes: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            udp_tx_datagrams: s.udp_tx.datagrams,
            udp_rx_datagrams: s.udp_rx.datagrams,
            udp_tx_bytes: s.udp_tx.bytes,
            udp_rx_bytes: s.udp_rx.bytes,
            udp_tx_ios: s.udp_tx.ios,
            ack_frames_tx: s.frame_tx.acks,
            max_data_frames_tx: s.frame_tx.max_data,
            max_stream_data_frames_tx: s.frame_tx.max_stream_data,
            new_token_frames_rx: s.frame_rx.new_token,
        }
    }
}

/// Transport statistics of the connection that carried a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransportSnapshot {
    /// Kernel TCP (HTTP/1.1, HTTP/2).
    Tcp(TcpInfoSnapshot),
    /// quinn (HTTP/3).
    Quic(QuicStatsSnapshot),
}
