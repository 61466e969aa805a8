//! The results schema: what one run of either engine produces.
//!
//! One type per level: [`Run`] → [`Flow`] (→ [`Connection`]), [`Link`], [`Cross`], and the time
//! series [`SeriesRow`]. Both engines fill these types; `results.jsonl` holds one serialised
//! [`Run`] per line.

use std::collections::BTreeMap;

use netem::LinkStats;
use serde::{Deserialize, Serialize};

/// Results of one run: one JSON line of results.jsonl (the series go to CSV files).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// Run id (`p{point}-r{rep}`).
    pub id: String,
    /// Sweep point index.
    pub point: usize,
    /// Repetition index.
    pub rep: u32,
    /// Seed of this run.
    pub seed: u64,
    /// Sweep axis values of this point.
    pub axes: BTreeMap<String, String>,
    /// Scenario name.
    pub scenario: String,
    /// Virtual time at which the run ended.
    pub end_s: f64,
    /// Simulated events processed (for speed figures; deterministic).
    pub events: u64,
    /// Per-flow results, in scenario order.
    pub flows: Vec<Flow>,
    /// Bottleneck link statistics per direction.
    pub links: BTreeMap<String, Link>,
    /// Cross-traffic sources.
    pub cross: Vec<Cross>,
    /// Time series, written to CSV rather than JSON.
    #[serde(skip)]
    pub series: Vec<SeriesRow>,
}

/// Results of one flow.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flow {
    pub name: String,
    pub stack: String,
    pub workload: String,
    /// Application bytes delivered to the receiver.
    pub bytes_delivered: u64,
    /// Application goodput from the first packet to the last delivered byte.
    pub goodput_bps: Option<f64>,
    /// Application goodput inside the measurement window.
    pub window_goodput_bps: Option<f64>,
    /// Transport payload throughput at the data receiver inside the measurement window: UDP
    /// payload for QUIC (what seed 001 calls "bytes received by QUIC"), segment data for TCP.
    pub window_payload_throughput_bps: Option<f64>,
    /// Download completion time of the last connection (first packet → last byte).
    pub completion_s: Option<f64>,
    /// Handshake time of the first connection.
    pub handshake_s: Option<f64>,
    /// Time to first response byte of the first connection.
    pub ttfb_s: Option<f64>,
    /// Start of the first congestion event at the data sender.
    pub first_congestion_s: Option<f64>,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub congestion_events: u64,
    pub ack_frames_sent: u64,
    pub max_data_frames_sent: u64,
    pub max_stream_data_frames_sent: u64,
    /// Transport payload bytes (UDP payload / TCP segment data) delivered to the data receiver.
    pub payload_rx_bytes: u64,
    /// Datagrams sent by the client and by the server.
    pub datagrams_sent: [u64; 2],
    pub final_mtu: u16,
    pub connections: Vec<Connection>,
    /// A transport error that ended the flow early.
    pub error: Option<String>,
}

/// One link direction's counters plus derived figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Link {
    #[serde(flatten)]
    pub stats: LinkStats,
    /// Busy time / run time.
    pub utilisation: f64,
    /// Corrupted packets dropped by the receiving host's checksums (a bit error in the IP/UDP
    /// header, or anywhere in a TCP segment) rather than reaching the transport.
    pub corrupt_header_drops: u64,
}

/// Cross-traffic counters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cross {
    pub name: String,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub delivered_packets: u64,
}

/// One sample of one flow (plus the bottleneck queues) at the end of a bin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeriesRow {
    /// End of the bin.
    pub t_s: f64,
    pub flow: String,
    /// Application goodput during the bin.
    pub goodput_bps: f64,
    /// Transport payload throughput at the data receiver during the bin.
    pub payload_throughput_bps: f64,
    pub cwnd_bytes: u64,
    pub srtt_ms: f64,
    pub in_flight_bytes: u64,
    pub queue_up_packets: u64,
    pub queue_down_packets: u64,
    pub queue_up_bytes: u64,
    pub queue_down_bytes: u64,
}

impl Run {
    /// The series as CSV text (header + one line per row).
    pub fn series_csv(&self) -> String {
        let mut s = String::from(
            "t_s,flow,goodput_bps,payload_throughput_bps,cwnd_bytes,srtt_ms,in_flight_bytes,queue_up_packets,queue_down_packets,queue_up_bytes,queue_down_bytes\n",
        );
        for r in &self.series {
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{}\n",
                r.t_s,
                r.flow,
                r.goodput_bps,
                r.payload_throughput_bps,
                r.cwnd_bytes,
                r.srtt_ms,
                r.in_flight_bytes,
                r.queue_up_packets,
                r.queue_down_packets,
                r.queue_up_bytes,
                r.queue_down_bytes
            ));
        }
        s
    }
}

/// One connection of a flow (download flows may open several in sequence).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Connection {
    /// When the client sent its first packet.
    pub started_s: f64,
    /// Handshake duration at the client (first packet → handshake complete).
    pub handshake_s: Option<f64>,
    /// First response byte at the client, from the first packet.
    pub time_to_first_byte_s: Option<f64>,
    /// Download completion (first packet → last byte of the last response).
    pub completion_s: Option<f64>,
    /// Whether the server accepted 0-RTT data.
    pub zero_rtt_accepted: bool,
}
