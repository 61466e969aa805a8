//! The results schema: what one run of either engine produces.
//!
//! One type per level: [`Run`] → [`Flow`] (→ [`Connection`]), [`Link`], [`Cross`], and the time
//! series [`SeriesRow`]; fairness between a run's flows ([`Fairness`], [`Flow::share`]) comes
//! from [`fairness`], the workspace's one implementation of Jain's index. Both engines fill these types; `results.jsonl` holds one serialised
//! [`Run`] per line, and the emulator's results deserialize into the same types.
//!
//! Conventions, the same for every field:
//! - **Units** are in the field name where one applies (`_s` seconds, `_bps` bit/s, `_bytes`,
//!   `_packets`) and in its doc comment. Durations are plain seconds (`f64`), never
//!   `{secs, nanos}`.
//! - **Absent = not measured.** A value an engine cannot measure is `None`, written as JSON
//!   `null` (a missing key reads back as `None` too). It is never written as `0`: a `0` is a
//!   measured zero. Summaries count only present values and report `n` per metric.
//! - **Data sender / data receiver**: the server / client of a download, the client / server of
//!   an upload (`bulk-up`).
//!
//! The run's identity (id, point, rep, seed, axes, scenario name) is attached by the caller of
//! an engine, not by the engine itself: see [`Run::identify`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use quantile::DelaySummary;

pub mod fairness;
pub mod layout;
pub mod store;
pub mod store_error;
pub use fairness::{jain_index, Fairness};

/// Results of one run: one JSON line of results.jsonl (the series go to CSV files).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Run id (`p{point}-r{rep}`).
    pub id: String,
    /// Sweep point index.
    pub point: usize,
    /// Repetition index (0-based).
    pub rep: u32,
    /// Seed of this run.
    pub seed: u64,
    /// Sweep axis values of this point (axis name → value as written in the scenario).
    pub axes: BTreeMap<String, String>,
    /// Scenario name.
    pub scenario: String,
    /// End of the run, s from its start: when the last flow delivered its last byte (all flows
    /// finished), or the scenario's duration. The emulator excludes the time its client
    /// processes take to exit after their last byte.
    pub end_s: f64,
    /// Discrete events the simulator processed (for speed figures; deterministic). Absent in
    /// the emulator, which has no events.
    pub events: Option<u64>,
    /// Per-flow results, in scenario order.
    pub flows: Vec<Flow>,
    /// Bottleneck link statistics per direction (`bottleneck_up`, `bottleneck_down`).
    pub links: BTreeMap<String, Link>,
    /// Cross-traffic sources, in scenario order.
    pub cross: Vec<Cross>,
    /// Latency probes, in scenario order; left out of the JSON when the scenario has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Probe>,
    /// Fairness between the flows over the measurement window (Jain's index, also per sample
    /// bin); absent with fewer than two flows. Each flow's share is [`Flow::share`].
    #[serde(default)]
    pub fairness: Option<Fairness>,
    /// Problems that did not stop the run but leave part of its output incomplete (e.g. a qlog
    /// file that could not be written). Empty (and left out of the JSON) when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Health of the emulator's userspace forwarder, to diagnose a suspicious emulated run from
    /// results.jsonl alone. Absent in the simulator, which has no forwarder.
    #[serde(default, rename = "emu", skip_serializing_if = "Option::is_none")]
    pub forwarder: Option<Forwarder>,
    /// Time series, written to CSV rather than JSON (see [`Run::series_csv`]).
    #[serde(skip)]
    pub series: Vec<SeriesRow>,
}

/// Counters of the emulator's forwarder (frames it saw on every port of the router, both
/// directions): anything but zero in the error counters means packets the link model never saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forwarder {
    /// Frames received on all ports.
    pub rx_frames: u64,
    /// Frames too short or with an inconsistent IPv4 header (dropped).
    pub malformed_frames: u64,
    /// Frames larger than the receive buffer (dropped).
    pub oversized_frames: u64,
    /// Non-IPv4 frames (ARP, IPv6) passed without delay or loss.
    pub non_ip_frames: u64,
    /// IPv4 frames to a MAC address no port owns (dropped).
    pub unroutable_frames: u64,
    /// Frames the kernel refused to send (full buffer, too large).
    pub tx_dropped: u64,
    /// Corrupted packets whose bit error fell in a UDP payload and were delivered, [up, down].
    pub corrupt_delivered: [u64; 2],
    /// Frames without a kernel receive timestamp (the read time was used as the arrival time).
    pub missing_timestamps: u64,
    /// Capture files written (paths).
    pub capture_files: Vec<String>,
    /// Median lateness of packet releases against their scheduled delivery time, µs (absent:
    /// not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_late_p50_us: Option<u64>,
    /// 99th percentile of the release lateness, µs: a loaded machine shows here first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_late_p99_us: Option<u64>,
}

/// Who a run is: attached to an engine's measurement by the caller that runs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// Run id (`p{point}-r{rep}`).
    pub id: String,
    /// Sweep point index.
    pub point: usize,
    /// Repetition index (0-based).
    pub rep: u32,
    /// Seed of this run.
    pub seed: u64,
    /// Sweep axis values of this point.
    pub axes: BTreeMap<String, String>,
    /// Scenario name.
    pub scenario: String,
}

impl Run {
    /// Attaches the run's identity to an engine's measurement (whose identity fields are empty).
    pub fn identify(mut self, who: Identity) -> Run {
        self.id = who.id;
        self.point = who.point;
        self.rep = who.rep;
        self.seed = who.seed;
        self.axes = who.axes;
        self.scenario = who.scenario;
        self
    }

    /// The series as CSV text (header + one line per row; an absent value is an empty field).
    pub fn series_csv(&self) -> String {
        let mut s = String::from(
            "t_s,flow,goodput_bps,payload_throughput_bps,cwnd_bytes,srtt_ms,in_flight_bytes,queue_up_packets,queue_down_packets,queue_up_bytes,queue_down_bytes,capacity_up_bps,capacity_down_bps,queue_delay_up_mean_ms,queue_delay_up_max_ms,queue_delay_down_mean_ms,queue_delay_down_max_ms\n",
        );
        let opt = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
        for r in &self.series {
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
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
                r.queue_down_bytes,
                opt(r.capacity_up_bps),
                opt(r.capacity_down_bps),
                opt(r.queue_delay_up_mean_ms),
                opt(r.queue_delay_up_max_ms),
                opt(r.queue_delay_down_mean_ms),
                opt(r.queue_delay_down_max_ms),
            ));
        }
        s
    }
}

/// Results of one flow (a client/server pair running one workload).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// Flow name from the scenario.
    pub name: String,
    /// Stack: `quic`, `tcp` or `quic-model`.
    pub stack: String,
    /// Workload: `bulk-down`, `bulk-up` or `download`.
    pub workload: String,
    /// Application (HTTP body) bytes delivered to the data receiver's application, bytes.
    pub bytes_delivered: u64,
    /// Application goodput of the whole flow, bit/s: `bytes_delivered` × 8 (every connection's
    /// bytes) over the time from the flow's first packet (first connection attempt) to its last
    /// delivered byte — for a download, `bytes_delivered` × 8 / `completion_s`. With several
    /// connections the gaps between them count; per connection see `connections`.
    pub goodput_bps: Option<f64>,
    /// Application goodput inside the scenario's measurement window, bit/s (no window set: the
    /// whole run, `bytes_delivered` × 8 / the run's end). The emulator takes no marks inside a
    /// run, so it has this only when no window is set.
    pub window_goodput_bps: Option<f64>,
    /// This flow's share of the flows' summed `window_goodput_bps` (the measurement window),
    /// fraction 0…1; absent with one flow or when a flow has no window goodput.
    #[serde(default)]
    pub share: Option<f64>,
    /// Transport payload throughput at the data receiver inside the measurement window, bit/s:
    /// UDP payload for QUIC (what seed 001 calls "bytes received by QUIC"), segment data for TCP.
    pub window_payload_throughput_bps: Option<f64>,
    /// Download completion of the whole flow, s: the flow's first packet (first connection) →
    /// last byte of the last connection. Equals `connections[0].completion_s` with one
    /// connection; with several, the earlier connections and the gaps between them count (each
    /// connection's own completion is in `connections`).
    pub completion_s: Option<f64>,
    /// Handshake time of the flow's first connection, s (its first packet → handshake
    /// complete); the later connections' are in `connections`.
    pub handshake_s: Option<f64>,
    /// Time to the flow's first response byte, s: the first connection's first packet → first
    /// byte (that connection's `time_to_first_byte_s`); the later connections' are in
    /// `connections`.
    pub ttfb_s: Option<f64>,
    /// Start of the data sender's first congestion event, s from the start of the run.
    pub first_congestion_s: Option<f64>,
    /// Packets sent by the data sender: QUIC packets of every kind; TCP data-carrying segments
    /// (retransmissions included), packets.
    pub packets_sent: Option<u64>,
    /// Packets the data sender declared lost (QUIC) or segments it retransmitted (TCP), packets.
    pub packets_lost: Option<u64>,
    /// Congestion events at the data sender (window reductions), count. Absent for kernel TCP,
    /// whose `TCP_INFO` has no such counter.
    pub congestion_events: Option<u64>,
    /// ACK frames (QUIC) or pure ACK segments (TCP model) sent by the data receiver, count.
    pub ack_frames_sent: Option<u64>,
    /// MAX_DATA frames sent by the data receiver, count (0 for TCP, which has no such frame).
    pub max_data_frames_sent: Option<u64>,
    /// MAX_STREAM_DATA frames sent by the data receiver, count (0 for TCP).
    pub max_stream_data_frames_sent: Option<u64>,
    /// Transport payload (UDP payload for QUIC, segment data including retransmissions for TCP)
    /// that reached the data receiver, bytes.
    pub payload_rx_bytes: Option<u64>,
    /// Datagrams (QUIC: UDP datagrams; TCP: segments of every kind) sent by `[client, server]`,
    /// packets.
    pub datagrams_sent: [Option<u64>; 2],
    /// Largest payload the data sender could put in one packet at the end of the flow, bytes:
    /// QUIC's path MTU as a UDP payload size; TCP's MSS (`TCP_INFO` `snd_mss` in the emulator).
    pub final_mtu: Option<u16>,
    /// Per-connection timings, in the order the connections were opened.
    pub connections: Vec<Connection>,
    /// A transport or endpoint error that ended the flow early.
    pub error: Option<String>,
    /// The transport configuration the flow ran with: the simulator's from its knobs, the
    /// emulator's as read back from the kernel and the endpoints. Absent: not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<FlowConfig>,
    /// What only the QUIC research model (`stack = "quic-model"`) measures; absent for `quic`
    /// and `tcp` (their stacks expose none of it) and in the emulator. Paths such as
    /// `flows.0.model.cwnd_limited_s` reach `summary.csv` like every other metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelFlow>,
    /// One-way delay of the packets that reached the data receiver, from the moment their
    /// sender (the data sender, or a PEP in front of the receiver) put them on the path:
    /// queueing, serialization and propagation on every link. Every stack has it in the
    /// simulator; absent when no packet arrived, and in the emulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_way_delay: Option<DelaySummary>,
    /// What ECN did, for a flow with `flow.ecn = true`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnFlow>,
}

/// ECN on a flow that asked for it, summed over its connections ("sender" is the data sender,
/// "receiver" the data receiver). Paths such as `flows.0.ecn.ce_received` reach `summary.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EcnFlow {
    /// Every connection used ECN to the end: TCP negotiated it; QUIC's sender still sent
    /// ECT at the end (its validation of the peer's counts held).
    pub capable: bool,
    /// Packets (TCP: data segments) the receiver got CE-marked, packets.
    pub ce_received: Option<u64>,
    /// The sender's congestion events in answer to CE (TCP: ECN-Echo; QUIC: a rise of the
    /// ECN-CE count), a part of `congestion_events`, count.
    pub ce_congestion_events: Option<u64>,
}

/// Per-flow figures of the QUIC research model, summed over the flow's connections. "Sender"
/// is the data sender, "receiver" the data receiver. Seed 001 studies the ACK and I-bit counts,
/// seed 000 the one-way delay and the ACKs generated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelFlow {
    /// ACK frames the sender received, count (`Flow::ack_frames_sent` counts those the
    /// receiver sent; the difference was lost on the way).
    pub ack_frames_received: u64,
    /// Ack-eliciting packets the receiver received, packets.
    pub ack_eliciting_received: u64,
    /// Achieved ACK ratio n of 1:n, ack-eliciting packets received per ACK frame sent by the
    /// receiver (`ack_eliciting_received / ack_frames_sent`); absent when no ACK was sent.
    pub achieved_ack_ratio: Option<f64>,
    /// DATA_BLOCKED frames the sender sent, count.
    pub data_blocked_frames_sent: u64,
    /// STREAM_DATA_BLOCKED frames the sender sent, count.
    pub stream_data_blocked_frames_sent: u64,
    /// Packets the sender sent with the I-bit set, packets.
    pub ibit_packets_sent: u64,
    /// ACK_FREQUENCY frames the sender sent, count.
    pub ack_frequency_frames_sent: u64,
    /// Time the sender had data but a full congestion window (or pacing) held it back, s.
    pub cwnd_limited_s: f64,
    /// Time the sender had data but no stream or connection credit, s.
    pub flow_control_limited_s: f64,
    /// Time the sender had nothing to send (application-limited), s.
    pub app_limited_s: f64,
    /// Download: the first response stream's completion, s from its connection's start (the
    /// earliest over the connections; seed 001's stream scheduler); absent before any completes.
    pub first_stream_completion_s: Option<f64>,
    /// Download: the response streams' mean completion, s from their connection's start;
    /// absent before any completes.
    pub mean_stream_completion_s: Option<f64>,
}

/// The effective transport configuration of a flow, in Linux's terms so both engines compare.
/// Every field is optional: absent means not measured (or not applicable to the stack).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowConfig {
    /// Congestion controller: the scenario name (QUIC: `cubic`, `quinn-cubic`, …) or the kernel's
    /// (`TCP_CONGESTION`: `cubic`, `reno`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// HyStart (HyStart++ in our CUBIC; the kernel's own HyStart for kernel TCP) on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
    /// `net.ipv4.tcp_rmem`: min, default, max receive buffer, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_rmem: Option<[u64; 3]>,
    /// `net.ipv4.tcp_wmem`: min, default, max send buffer, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_wmem: Option<[u64; 3]>,
    /// Initial congestion window, packets (route `initcwnd` in the emulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initcwnd_packets: Option<u64>,
    /// Lower bound of the retransmission timeout, ms (route `rto_min` in the emulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_min_ms: Option<f64>,
    /// Delayed ACKs on (off: route `quickack 1` in the emulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<bool>,
    /// SACK on (`net.ipv4.tcp_sack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sack: Option<bool>,
    /// Timestamps on (`net.ipv4.tcp_timestamps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<bool>,
    /// RACK-TLP loss detection on (`net.ipv4.tcp_recovery` bit 0 and tail loss probes,
    /// `net.ipv4.tcp_early_retrans` ≥ 3, in the emulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<bool>,
    /// Bound on the receive window advertised at connection start, segments (route `initrwnd`
    /// in the emulator: the kernel offers at most this many MSS before autotuning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrwnd_packets: Option<u64>,
    /// QUIC address-validation tokens (`flow.address_token`) on: the simulator's knob; in the
    /// emulator, whether the client received NEW_TOKEN frames from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_token: Option<bool>,
    /// `net.ipv4.tcp_ecn` of the flow's hosts: 1 = ask for ECN and accept it (`flow.ecn`),
    /// 2 = accept it only (Linux's default). TCP only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_ecn: Option<u8>,
}

/// One connection of a flow (download flows may open several in sequence).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Connection {
    /// When the client sent its first packet, s from the start of the run.
    pub started_s: f64,
    /// Handshake duration at the client, s (first packet → handshake complete; TCP: connect +
    /// TLS).
    pub handshake_s: Option<f64>,
    /// First response byte at the client, s from this connection's first packet.
    pub time_to_first_byte_s: Option<f64>,
    /// Download completion of this connection, s (its first packet → last byte of its last
    /// response).
    pub completion_s: Option<f64>,
    /// Whether the server accepted 0-RTT data on this connection.
    pub zero_rtt_accepted: bool,
    /// Application (HTTP body) bytes this connection delivered to the data receiver, bytes;
    /// the connections' sum is the flow's `bytes_delivered`. Absent: not measured.
    #[serde(default)]
    pub bytes_delivered: Option<u64>,
    /// This connection's application goodput, bit/s: `bytes_delivered` × 8 / `completion_s`
    /// (its own first packet → its last byte, so the gaps between connections do not count);
    /// absent without a completion (bulk flows: see the flow's `goodput_bps`).
    #[serde(default)]
    pub goodput_bps: Option<f64>,
}

impl Connection {
    /// `bytes_delivered` × 8 / `completion_s`: what `goodput_bps` holds once an engine has
    /// filled the connection (absent without both, or with a zero completion time).
    pub fn goodput(&self) -> Option<f64> {
        match (self.bytes_delivered, self.completion_s) {
            (Some(b), Some(t)) if t > 0.0 => Some(b as f64 * 8.0 / t),
            _ => None,
        }
    }
}

/// One bottleneck link direction: the link model's counters plus derived figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Packets offered to the link, packets.
    pub offered_packets: u64,
    /// IP bytes offered to the link, bytes.
    pub offered_bytes: u64,
    /// Packets dropped because the queue was full (tail drops: the drop-tail limit, a queue
    /// discipline's hard limit, FQ-CoDel's overflow drops), packets.
    pub dropped_queue_packets: u64,
    /// IP bytes of those packets, bytes.
    pub dropped_queue_bytes: u64,
    /// Packets dropped by the loss model (outside blackouts), packets.
    pub lost_packets: u64,
    /// Packets dropped because they left the serializer during a blackout, packets.
    pub blackout_packets: u64,
    /// Packets delivered with a bit error, packets.
    pub corrupted_packets: u64,
    /// Extra copies created by duplication, packets.
    pub duplicated_packets: u64,
    /// Packets held back so later ones overtake them, packets.
    pub reordered_packets: u64,
    /// Packets the link delivered (corrupted ones and duplicate copies included), packets.
    pub forwarded_packets: u64,
    /// IP bytes the link delivered, bytes.
    pub forwarded_bytes: u64,
    /// Time the serializer spent transmitting (finished packets only), s.
    pub busy_time_s: f64,
    /// Most packets ever waiting in the queue, packets.
    pub max_queue_packets: u64,
    /// Most IP bytes ever waiting in the queue, bytes.
    pub max_queue_bytes: u64,
    /// `busy_time_s` / the run's `end_s` (0 when the run lasted no time), fraction.
    pub utilisation: f64,
    /// Corrupted packets dropped by the receiving host's checksums (a bit error in the IP/UDP
    /// header, or anywhere in a TCP segment) rather than reaching the transport, packets.
    pub corrupt_header_drops: u64,
    /// Packets dropped by an active queue management decision of the queue discipline (RED,
    /// CoDel, FQ-CoDel, PIE, DualPI2), apart from the limit's tail drops
    /// (`dropped_queue_packets`), packets.
    #[serde(default)]
    pub aqm_dropped_packets: u64,
    /// IP bytes of those packets, bytes.
    #[serde(default)]
    pub aqm_dropped_bytes: u64,
    /// Packets the queue discipline marked Congestion Experienced instead of dropping them
    /// (each counted once), packets.
    #[serde(default)]
    pub ce_marked_packets: u64,
    /// IP bytes of those packets, bytes.
    #[serde(default)]
    pub ce_marked_bytes: u64,
    /// Mean queue delay (sojourn: arrival to start of serialization) of the packets the link
    /// delivered, s; absent when it delivered none.
    #[serde(default)]
    pub queue_delay_mean_s: Option<f64>,
    /// Median queue delay, s (nearest rank over a log-linear histogram: within 0.8%).
    #[serde(default)]
    pub queue_delay_p50_s: Option<f64>,
    /// 95th percentile of the queue delay, s (same histogram).
    #[serde(default)]
    pub queue_delay_p95_s: Option<f64>,
    /// 99th percentile of the queue delay, s (same histogram).
    #[serde(default)]
    pub queue_delay_p99_s: Option<f64>,
    /// Largest queue delay, s (exact).
    #[serde(default)]
    pub queue_delay_max_s: Option<f64>,
}

impl Link {
    /// `busy_s / end_s`, or 0 for a run that lasted no time.
    pub fn utilisation_of(busy_s: f64, end_s: f64) -> f64 {
        if end_s > 0.0 {
            busy_s / end_s
        } else {
            0.0
        }
    }
}

/// Cross-traffic counters of one source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cross {
    /// Source name from the scenario.
    pub name: String,
    /// Packets the source emitted, packets.
    pub sent_packets: u64,
    /// IP bytes the source emitted, bytes.
    pub sent_bytes: u64,
    /// Packets that crossed the bottleneck and reached the sink, packets.
    pub delivered_packets: u64,
}

/// A latency probe: timestamped UDP request/echo exchanges between the client and the server
/// of a flow at a fixed interval (flent's RRUL ping). Paths such as `probes.0.rtt.p99_s` reach
/// `summary.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Probe name from the scenario.
    pub name: String,
    /// Name of the flow whose client and server exchanged the probes.
    pub flow: String,
    /// Requests the client sent, packets.
    pub sent_packets: u64,
    /// Requests whose echo came back before the run ended (a duplicate counts once), packets.
    pub answered_packets: u64,
    /// Round-trip time of the answered requests; absent when none was answered.
    pub rtt: Option<DelaySummary>,
    /// One-way delay of those requests, client → server.
    pub up: Option<DelaySummary>,
    /// One-way delay of their echoes, server → client.
    pub down: Option<DelaySummary>,
}

/// One sample of one flow (plus the bottleneck queues) at the end of a bin (simulator only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesRow {
    /// End of the bin, s from the start of the run.
    pub t_s: f64,
    /// Flow name.
    pub flow: String,
    /// Application goodput during the bin, bit/s: bytes the application could read in order, so
    /// the bin after a repaired loss, which releases everything held behind the hole, can exceed
    /// the link's capacity (`payload_throughput_bps` cannot).
    pub goodput_bps: f64,
    /// Transport payload throughput at the data receiver during the bin, bit/s.
    pub payload_throughput_bps: f64,
    /// Data sender's congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Data sender's smoothed RTT, ms.
    pub srtt_ms: f64,
    /// Data sender's bytes in flight, bytes.
    pub in_flight_bytes: u64,
    /// Packets queued at the bottleneck, client → server, packets.
    pub queue_up_packets: u64,
    /// Packets queued at the bottleneck, server → client, packets.
    pub queue_down_packets: u64,
    /// IP bytes queued at the bottleneck, client → server, bytes.
    pub queue_up_bytes: u64,
    /// IP bytes queued at the bottleneck, server → client, bytes.
    pub queue_down_bytes: u64,
    /// Capacity of the bottleneck, client → server: its rate averaged over the bin, bit/s
    /// (absent: unlimited).
    #[serde(default)]
    pub capacity_up_bps: Option<f64>,
    /// Capacity of the bottleneck, server → client: its rate averaged over the bin, bit/s
    /// (absent: unlimited).
    #[serde(default)]
    pub capacity_down_bps: Option<f64>,
    /// Mean queue delay of the packets that left the bottleneck queue, client → server, during
    /// the bin, ms (absent: no packet left).
    #[serde(default)]
    pub queue_delay_up_mean_ms: Option<f64>,
    /// Largest queue delay of those packets, ms (absent: no packet left).
    #[serde(default)]
    pub queue_delay_up_max_ms: Option<f64>,
    /// Mean queue delay of the packets that left the bottleneck queue, server → client, during
    /// the bin, ms (absent: no packet left).
    #[serde(default)]
    pub queue_delay_down_mean_ms: Option<f64>,
    /// Largest queue delay of those packets, ms (absent: no packet left).
    #[serde(default)]
    pub queue_delay_down_max_ms: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmeasured_values_are_null_and_read_back_as_none() {
        let run = Run {
            flows: vec![Flow {
                packets_sent: Some(0),
                datagrams_sent: [Some(3), None],
                ..Flow::default()
            }],
            ..Run::default()
        };
        let text = serde_json::to_string(&run).expect("serialise");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["flows"][0]["packets_sent"], 0, "a measured zero stays 0");
        assert!(v["flows"][0]["congestion_events"].is_null());
        assert_eq!(
            v["flows"][0]["datagrams_sent"],
            serde_json::json!([3, null])
        );
        assert!(v.get("warnings").is_none(), "no warnings, no key");
        let back: Run = serde_json::from_str(&text).expect("deserialise");
        assert_eq!(back, run);
    }

    #[test]
    fn series_csv_leaves_unmeasured_link_values_empty() {
        let run = Run {
            series: vec![
                SeriesRow {
                    t_s: 0.1,
                    flow: "a".into(),
                    capacity_up_bps: Some(1e7),
                    queue_delay_down_mean_ms: Some(2.5),
                    queue_delay_down_max_ms: Some(4.0),
                    ..SeriesRow::default()
                },
                SeriesRow {
                    t_s: 0.2,
                    flow: "a".into(),
                    ..SeriesRow::default()
                },
            ],
            ..Run::default()
        };
        let csv = run.series_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].ends_with(
            ",capacity_up_bps,capacity_down_bps,queue_delay_up_mean_ms,queue_delay_up_max_ms,\
             queue_delay_down_mean_ms,queue_delay_down_max_ms"
        ));
        assert_eq!(lines[1], "0.1,a,0,0,0,0,0,0,0,0,0,10000000,,,,2.5,4");
        assert_eq!(lines[2], "0.2,a,0,0,0,0,0,0,0,0,0,,,,,,");
        let header = lines[0].split(',').count();
        assert!(lines[1..].iter().all(|l| l.split(',').count() == header));
    }

    #[test]
    fn forwarder_counters_only_in_emulated_runs() {
        let sim = serde_json::to_value(Run::default()).expect("serialise");
        assert!(sim.get("emu").is_none(), "the simulator has no forwarder");
        let emu = Run {
            forwarder: Some(Forwarder {
                rx_frames: 7,
                corrupt_delivered: [1, 0],
                capture_files: vec!["/tmp/up.pcap".into()],
                ..Forwarder::default()
            }),
            ..Run::default()
        };
        let v = serde_json::to_value(&emu).expect("serialise");
        assert_eq!(v["emu"]["rx_frames"], 7);
        let back: Run = serde_json::from_value(v).expect("deserialise");
        assert_eq!(back, emu);
    }

    #[test]
    fn model_metrics_only_for_the_research_model() {
        let other = serde_json::to_value(Flow::default()).expect("serialise");
        assert!(
            other.get("model").is_none(),
            "quinn and TCP lines keep their keys"
        );
        let f = Flow {
            stack: "quic-model".into(),
            model: Some(ModelFlow {
                ack_frames_received: 4,
                achieved_ack_ratio: Some(2.0),
                cwnd_limited_s: 1.5,
                ..ModelFlow::default()
            }),
            ..Flow::default()
        };
        let v = serde_json::to_value(&f).expect("serialise");
        assert_eq!(v["model"]["ack_frames_received"], 4);
        assert_eq!(v["model"]["cwnd_limited_s"], 1.5);
        assert!(v["model"]["achieved_ack_ratio"].is_number());
        let back: Flow = serde_json::from_value(v).expect("deserialise");
        assert_eq!(back, f);
    }

    #[test]
    fn a_missing_key_reads_back_as_absent() {
        let mut v = serde_json::to_value(Flow::default()).expect("serialise");
        v.as_object_mut().expect("object").remove("final_mtu");
        let f: Flow = serde_json::from_value(v).expect("deserialise");
        assert_eq!(f.final_mtu, None);
    }

    #[test]
    fn identity_is_attached_outside_the_engine() {
        let measured = Run {
            end_s: 2.5,
            ..Run::default()
        };
        let r = measured.identify(Identity {
            id: "p1-r2".into(),
            point: 1,
            rep: 2,
            seed: 9,
            axes: BTreeMap::from([("rate".into(), "10Mbit".into())]),
            scenario: "s".into(),
        });
        assert_eq!((r.id.as_str(), r.point, r.rep, r.seed), ("p1-r2", 1, 2, 9));
        assert_eq!(r.end_s, 2.5);
        assert_eq!(r.axes["rate"], "10Mbit");
    }

    #[test]
    fn utilisation_of_an_empty_run_is_zero() {
        assert_eq!(Link::utilisation_of(1.0, 0.0), 0.0);
        assert_eq!(Link::utilisation_of(1.0, 4.0), 0.25);
    }
}
