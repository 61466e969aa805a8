//! The interface between a transport flow and the engines.
//!
//! A flow is both ends of one transport conversation (client and server) plus the application
//! workload on top. The engine only moves opaque UDP/IP payloads between the two sides and calls
//! timers; everything a flow knows about itself comes back through [`FlowReport`]. The TCP model
//! and the QUIC research model of later issues implement the same trait.

use std::time::Duration;

use netem::wire::IPV4_UDP_OVERHEAD;
use serde::Serialize;

/// Where a flow's endpoint sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Side {
    /// The connection initiator, on the left of the dumbbell.
    Client,
    /// The acceptor, on the right.
    Server,
    /// A middlebox on the flow's path (a split-connection PEP), on one side of the bottleneck.
    Middle,
}

impl Side {
    /// Every side, in index order.
    pub const ALL: [Side; 3] = [Side::Client, Side::Server, Side::Middle];

    /// Index 0 for the client, 1 for the server, 2 for a middlebox (for per-side arrays).
    pub fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
            Side::Middle => 2,
        }
    }

    /// The other end of an end-to-end conversation (a middlebox has none: itself).
    pub fn opposite(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
            Side::Middle => Side::Middle,
        }
    }
}

/// Instantaneous state of the flow's data sender, for time series.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SenderSample {
    /// Congestion window in bytes.
    pub cwnd: u64,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Bytes in flight at the last ACK.
    pub in_flight: u64,
}

pub use results::Connection as ConnectionReport;

/// Everything a flow reports at the end of a run. Counters are summed over connections.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowReport {
    /// Application bytes delivered to the receiving application.
    pub bytes_delivered: u64,
    /// First packet of the first connection.
    pub first_packet_s: Option<f64>,
    /// Last application byte delivered.
    pub last_byte_s: Option<f64>,
    /// Time of the data sender's first congestion event (end of the first slow start).
    pub first_congestion_s: Option<f64>,
    /// Packets sent by the data sender.
    pub packets_sent: u64,
    /// Packets the data sender declared lost.
    pub packets_lost: u64,
    /// Congestion events at the data sender.
    pub congestion_events: u64,
    /// ACK frames sent by the data receiver.
    pub ack_frames_sent: u64,
    /// MAX_DATA frames sent by the data receiver.
    pub max_data_frames_sent: u64,
    /// MAX_STREAM_DATA frames sent by the data receiver.
    pub max_stream_data_frames_sent: u64,
    /// Path MTU (UDP payload) the sender ended with.
    pub final_mtu: u16,
    /// Per-connection timings.
    pub connections: Vec<ConnectionReport>,
    /// A transport error that ended the flow early (e.g. quinn closing on too many stream gaps).
    pub error: Option<String>,
    /// Problems that did not affect the flow but leave its trace output incomplete (a qlog
    /// file that could not be created or fully written); empty when none.
    pub warnings: Vec<String>,
    /// What only the QUIC research model measures (`None` for quinn and TCP).
    pub model: Option<ModelMetrics>,
    /// ECN on the data path; `None` when the flow does not ask for ECN.
    pub ecn: Option<EcnReport>,
}

/// What ECN did on a flow that asked for it, summed over its connections ("sender" is the
/// data sender, "receiver" the data receiver).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct EcnReport {
    /// Every connection used ECN to the end: TCP negotiated it; QUIC's sender still sent ECT
    /// (its validation of the peer's counts did not fail).
    pub capable: bool,
    /// Packets (TCP: data segments) the receiver got CE-marked.
    pub ce_received: u64,
    /// Congestion events at the sender in answer to CE (TCP: ECE; QUIC: a rise of the ECN-CE
    /// count), a subset of `FlowReport::congestion_events`.
    pub ce_congestion_events: u64,
}

/// Counters and times only the QUIC research model keeps, summed over connections. "Sender"
/// is the data sender, "receiver" the data receiver.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelMetrics {
    /// ACK frames the data sender received.
    pub ack_frames_received: u64,
    /// Ack-eliciting packets the data receiver received (achieved ACK ratio = this /
    /// `FlowReport::ack_frames_sent`).
    pub ack_eliciting_received: u64,
    /// DATA_BLOCKED frames the data sender sent.
    pub data_blocked_frames_sent: u64,
    /// STREAM_DATA_BLOCKED frames the data sender sent.
    pub stream_data_blocked_frames_sent: u64,
    /// Packets the data sender sent with the I-bit set.
    pub ibit_packets_sent: u64,
    /// ACK_FREQUENCY frames the data sender sent.
    pub ack_frequency_frames_sent: u64,
    /// Seconds the data sender had data but the congestion window (or pacing) was full.
    pub cwnd_limited_s: f64,
    /// Seconds the data sender had data but no stream or connection credit.
    pub flow_control_limited_s: f64,
    /// Seconds the data sender had nothing to send (application-limited).
    pub app_limited_s: f64,
    /// Download: the first response stream's completion, seconds from its connection's start
    /// (the earliest over the connections); `None` before any completes.
    pub first_stream_completion_s: Option<f64>,
    /// Download: the mean completion of the response streams, seconds from their connection's
    /// start; `None` before any completes.
    pub mean_stream_completion_s: Option<f64>,
}

/// A datagram or segment leaving an endpoint.
#[derive(Debug, Clone)]
pub struct Transmit {
    /// What the peer's `handle_datagram` receives: the UDP payload for QUIC; an encoded
    /// segment (header fields and data length, no data bytes) for the TCP model.
    pub bytes: Vec<u8>,
    /// Size on the wire at the IP layer (IP + transport headers + payload), for link rates.
    pub wire_len: u32,
    /// Transport payload carried (UDP payload for QUIC, segment data for TCP), for metrics.
    pub payload_len: u32,
    /// Header bytes in front of the payload (28 for IPv4+UDP, 52 for IPv4+TCP+timestamps):
    /// a bit error inside them is caught by the receiving host's IP/UDP/TCP checksum.
    pub header_len: u32,
    /// Where it goes: the peer endpoint, or a middlebox that intercepts the connection.
    pub to: Side,
    /// The IP ECN codepoint it is sent with: ECT(0) on what an ECN-capable flow's stack marks
    /// (TCP: new data after ECN was negotiated; QUIC: what quinn or the research model asks
    /// for), Not-ECT otherwise. The engines offer it to the queue disciplines.
    pub ecn: netem::Ecn,
}

impl Transmit {
    /// A UDP datagram over IPv4 carrying `payload` to `to`.
    pub fn udp(payload: Vec<u8>, to: Side) -> Self {
        let len = payload.len() as u32;
        Transmit {
            bytes: payload,
            wire_len: len + IPV4_UDP_OVERHEAD,
            payload_len: len,
            header_len: IPV4_UDP_OVERHEAD,
            to,
            ecn: netem::Ecn::NotEct,
        }
    }
}

/// Both ends of one transport flow, driven by an engine in virtual (or real) time.
pub trait FlowAgent {
    /// A Not-ECT datagram (UDP payload) arrived at `side`; see [`Self::handle_datagram_ecn`].
    fn handle_datagram(&mut self, side: Side, from: Side, now: Duration, payload: Vec<u8>) {
        self.handle_datagram_ecn(side, from, now, payload, netem::Ecn::NotEct);
    }
    /// A datagram arrived at `side` with the IP ECN codepoint `ecn`: as it was sent, or CE when
    /// a queue discipline on the path marked it. The application may run only at the next
    /// `poll_transmit`, so all datagrams arriving at one instant are processed as a batch.
    fn handle_datagram_ecn(
        &mut self,
        side: Side,
        from: Side,
        now: Duration,
        payload: Vec<u8>,
        ecn: netem::Ecn,
    );
    /// The timer of `side` fired (the engine calls this at or after `poll_timeout`).
    fn handle_timeout(&mut self, side: Side, now: Duration);
    /// Next datagram `side` wants to send now, if any. Call until `None`.
    fn poll_transmit(&mut self, side: Side, now: Duration) -> Option<Transmit>;
    /// Whether a packet with a bit error in its payload still reaches the endpoint. QUIC: yes
    /// (UDP checksums are often off; quinn's AEAD rejects it). TCP: no (the TCP checksum
    /// covers the payload, so the host drops it).
    fn corrupt_payload_reaches_endpoint(&self) -> bool {
        true
    }
    /// When `side` next needs `handle_timeout`.
    fn poll_timeout(&mut self, side: Side) -> Option<Duration>;
    /// Application bytes delivered so far (monotonic), for throughput series.
    fn delivered_bytes(&self) -> u64;
    /// The data sender's congestion state now.
    fn sample(&self) -> SenderSample;
    /// True once the workload is complete (or failed) and nothing more will happen.
    fn is_finished(&self) -> bool;
    /// End-of-run report.
    fn report(&self) -> FlowReport;
}
