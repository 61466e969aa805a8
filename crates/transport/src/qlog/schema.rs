//! The qlog records both QUIC stacks write, typed once: the JSON-SEQ header record, the event
//! record, packet headers and frames (qlog 0.3: draft-ietf-quic-qlog-main-schema and
//! draft-ietf-quic-qlog-quic-events of that version, which qvis and the `qlog` crate read).
//!
//! Units are the main schema's: every time and duration in milliseconds (`time` relative to the
//! trace's reference time, RTTs, ACK delays), sizes in bytes. The research model builds these
//! types from its own frames; quinn's records are rewritten into them (see [`super::quinn`]).

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

/// The qlog version the records follow (the version the `qlog` crate and qvis read).
pub const QLOG_VERSION: &str = "0.3";
/// RFC 7464's record separator, before every JSON-SEQ record (each record ends with `\n`).
pub const RECORD_SEPARATOR: u8 = 0x1e;

/// Which end of the connection wrote a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Vantage {
    /// The client.
    Client,
    /// The server.
    Server,
}

impl Vantage {
    /// `client` or `server` (file names, titles).
    pub fn name(self) -> &'static str {
        match self {
            Vantage::Client => "client",
            Vantage::Server => "server",
        }
    }
}

/// A duration in milliseconds, the main schema's unit.
pub fn ms(d: Duration) -> f64 {
    // Nanoseconds over 10^6: the division rounds once, so 22.4 ms prints as 22.4.
    d.as_nanos() as f64 / 1e6
}

/// Seconds (as quinn's qlog writes RTTs) to milliseconds, to the nanosecond: the decimal the
/// seconds were printed with stays short (0.0224 → 22.4, not 22.400000000000002).
pub fn seconds_to_ms(s: f64) -> f64 {
    (s * 1e9).round() / 1e6
}

/// The JSON-SEQ header record of one trace (`qlog_format` JSON-SEQ, one trace per file).
#[derive(Debug, Clone, Serialize)]
pub struct Header<'a> {
    /// Always [`QLOG_VERSION`].
    pub qlog_version: &'static str,
    /// Always `JSON-SEQ`.
    pub qlog_format: &'static str,
    /// The file's title.
    pub title: &'a str,
    /// The one trace.
    pub trace: TraceHeader<'a>,
}

/// The trace of a JSON-SEQ file.
#[derive(Debug, Clone, Serialize)]
pub struct TraceHeader<'a> {
    /// The trace's title.
    pub title: &'a str,
    /// What the trace comes from (stack, engine).
    pub description: &'a str,
    /// Who wrote it.
    pub vantage_point: VantagePoint<'a>,
    /// Fields every event shares: the time base.
    pub common_fields: CommonFields,
}

/// The vantage point of a trace.
#[derive(Debug, Clone, Serialize)]
pub struct VantagePoint<'a> {
    /// A name for the endpoint.
    pub name: &'a str,
    /// Client or server.
    #[serde(rename = "type")]
    pub ty: Vantage,
}

/// The time base of a trace's events.
#[derive(Debug, Clone, Serialize)]
pub struct CommonFields {
    /// Always `relative`: each event's `time` is milliseconds after `reference_time`.
    pub time_format: &'static str,
    /// Milliseconds since the Unix epoch of the events' time zero (the simulator's
    /// [`VIRTUAL_REFERENCE_TIME_MS`]: its time zero is the start of the run).
    pub reference_time: f64,
}

/// The reference time of every simulator trace. Virtual time has no wall-clock origin, so any
/// value shared by both ends of a connection lines their events up; it is not 0 because qvis
/// reads 0 as "no reference time" and then shifts a client's trace against its server's.
pub const VIRTUAL_REFERENCE_TIME_MS: f64 = 1.0;

impl<'a> Header<'a> {
    /// The header of a trace titled `title` written by `vantage`.
    pub fn new(
        title: &'a str,
        description: &'a str,
        vantage: Vantage,
        reference_time: f64,
    ) -> Self {
        Header {
            qlog_version: QLOG_VERSION,
            qlog_format: "JSON-SEQ",
            title,
            trace: TraceHeader {
                title,
                description,
                vantage_point: VantagePoint {
                    name: title,
                    ty: vantage,
                },
                common_fields: CommonFields {
                    time_format: "relative",
                    reference_time,
                },
            },
        }
    }
}

/// One event record: `time` (ms after the reference time), `name` (`category:event`), `data`.
#[derive(Debug, Clone, Serialize)]
pub struct Event<'a, D: Serialize> {
    /// Milliseconds after the trace's reference time.
    pub time: f64,
    /// `transport:packet_sent`, `recovery:metrics_updated`, …
    pub name: &'a str,
    /// The event's fields.
    pub data: D,
}

/// Writes `record` as one JSON-SEQ record (RFC 7464: separator, JSON text, line feed).
pub fn write_record(out: &mut impl Write, record: &impl Serialize) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(256);
    buf.push(RECORD_SEPARATOR);
    serde_json::to_writer(&mut buf, record).map_err(std::io::Error::other)?;
    buf.push(b'\n');
    out.write_all(&buf)
}

/// A QUIC packet type as qlog names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PacketType {
    /// Initial.
    #[serde(rename = "initial")]
    Initial,
    /// Handshake.
    #[serde(rename = "handshake")]
    Handshake,
    /// 0-RTT.
    #[serde(rename = "0RTT")]
    ZeroRtt,
    /// 1-RTT (short header).
    #[serde(rename = "1RTT")]
    OneRtt,
    /// Retry.
    #[serde(rename = "retry")]
    Retry,
}

impl PacketType {
    /// The name qlog gives the type.
    pub fn name(self) -> &'static str {
        match self {
            PacketType::Initial => "initial",
            PacketType::Handshake => "handshake",
            PacketType::ZeroRtt => "0RTT",
            PacketType::OneRtt => "1RTT",
            PacketType::Retry => "retry",
        }
    }
}

/// The header fields of a packet event.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PacketHeader {
    /// The packet's type.
    pub packet_type: PacketType,
    /// Its full packet number.
    pub packet_number: u64,
    /// The whole packet's bytes (header, payload and AEAD tag), as quinn reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// Sizes of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RawInfo {
    /// The whole packet's bytes: header, payload and AEAD tag.
    pub length: u64,
    /// The payload's bytes: its frames, without header and tag.
    pub payload_length: u64,
}

/// `transport:packet_sent` and `transport:packet_received`.
#[derive(Debug, Clone, Serialize)]
pub struct PacketEvent<'a> {
    /// Type, number (and length).
    pub header: PacketHeader,
    /// Packet and payload sizes.
    pub raw: RawInfo,
    /// The packet's frames in order.
    pub frames: &'a [Frame],
}

/// Why a packet was declared lost (RFC 9002 §6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossTrigger {
    /// kPacketThreshold packets sent after it were acknowledged.
    ReorderingThreshold,
    /// It is older than the time threshold.
    TimeThreshold,
}

/// `recovery:packet_lost`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PacketLost {
    /// Type, number and the bytes it held in flight.
    pub header: PacketHeader,
    /// Why it was declared lost.
    pub trigger: LossTrigger,
}

/// `recovery:metrics_updated`: the fields that changed since the previous one (qlog's rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Minimum RTT (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<f64>,
    /// Smoothed RTT (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smoothed_rtt: Option<f64>,
    /// Latest RTT sample (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_rtt: Option<f64>,
    /// RTT variation (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_variance: Option<f64>,
    /// Consecutive probe timeouts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pto_count: Option<u32>,
    /// Congestion window (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion_window: Option<u64>,
    /// Bytes in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_in_flight: Option<u64>,
}

impl Metrics {
    /// The fields of `self` that differ from `prev` (all of them when there is none), or
    /// `None` when nothing changed.
    pub fn changes_since(&self, prev: Option<&Metrics>) -> Option<Metrics> {
        let Some(p) = prev else {
            return Some(*self);
        };
        fn diff<T: PartialEq + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
            if a == b {
                None
            } else {
                a
            }
        }
        let d = Metrics {
            min_rtt: diff(self.min_rtt, p.min_rtt),
            smoothed_rtt: diff(self.smoothed_rtt, p.smoothed_rtt),
            latest_rtt: diff(self.latest_rtt, p.latest_rtt),
            rtt_variance: diff(self.rtt_variance, p.rtt_variance),
            pto_count: diff(self.pto_count, p.pto_count),
            congestion_window: diff(self.congestion_window, p.congestion_window),
            bytes_in_flight: diff(self.bytes_in_flight, p.bytes_in_flight),
        };
        (d != Metrics::default()).then_some(d)
    }
}

/// The direction of streams a MAX_STREAMS or STREAMS_BLOCKED frame counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamType {
    /// Bidirectional streams.
    Bidirectional,
    /// Unidirectional streams.
    Unidirectional,
}

/// Whose error code a CONNECTION_CLOSE carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSpace {
    /// A QUIC transport error (frame type 0x1c).
    Transport,
    /// An application error (frame type 0x1d).
    Application,
}

/// A NEW_TOKEN frame's token: its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Token {
    /// The token's bytes.
    pub raw: TokenRaw,
}

/// A token's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TokenRaw {
    /// Bytes.
    pub length: u64,
}

/// One QUIC frame with the fields qlog names (RFC 9000 §19; ACK_FREQUENCY and IMMEDIATE_ACK
/// from draft-ietf-quic-ack-frequency, which quinn and the research model send).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "frame_type", rename_all = "snake_case")]
pub enum Frame {
    /// A run of PADDING bytes (consecutive ones are one frame).
    Padding {
        /// Bytes on the wire.
        length: u64,
        /// Bytes of padding (the same).
        payload_length: u64,
    },
    /// PING.
    Ping,
    /// ACK or ACK_ECN.
    Ack {
        /// The ACK delay (ms), scaled by the default ack_delay_exponent 3.
        ack_delay: f64,
        /// Acknowledged packet numbers as inclusive `[smallest, largest]` ranges, ascending.
        acked_ranges: Vec<[u64; 2]>,
        /// ECT(0) count (ACK_ECN only).
        #[serde(skip_serializing_if = "Option::is_none")]
        ect0: Option<u64>,
        /// ECT(1) count (ACK_ECN only).
        #[serde(skip_serializing_if = "Option::is_none")]
        ect1: Option<u64>,
        /// ECN-CE count (ACK_ECN only).
        #[serde(skip_serializing_if = "Option::is_none")]
        ce: Option<u64>,
    },
    /// RESET_STREAM.
    ResetStream {
        /// Stream.
        stream_id: u64,
        /// Application error code.
        error_code: u64,
        /// Final size of the stream (bytes).
        final_size: u64,
    },
    /// STOP_SENDING.
    StopSending {
        /// Stream.
        stream_id: u64,
        /// Application error code.
        error_code: u64,
    },
    /// CRYPTO.
    Crypto {
        /// Offset in the space's crypto stream.
        offset: u64,
        /// Bytes.
        length: u64,
    },
    /// NEW_TOKEN.
    NewToken {
        /// The token's size.
        token: Token,
    },
    /// STREAM.
    Stream {
        /// Stream.
        stream_id: u64,
        /// Offset of the first byte.
        offset: u64,
        /// Bytes.
        length: u64,
        /// The FIN bit.
        fin: bool,
    },
    /// MAX_DATA.
    MaxData {
        /// The connection's new limit (bytes).
        maximum: u64,
    },
    /// MAX_STREAM_DATA.
    MaxStreamData {
        /// Stream.
        stream_id: u64,
        /// The stream's new limit (bytes).
        maximum: u64,
    },
    /// MAX_STREAMS.
    MaxStreams {
        /// Which streams.
        stream_type: StreamType,
        /// The new cumulative limit.
        maximum: u64,
    },
    /// DATA_BLOCKED.
    DataBlocked {
        /// The connection limit the sender is blocked at.
        limit: u64,
    },
    /// STREAM_DATA_BLOCKED.
    StreamDataBlocked {
        /// Stream.
        stream_id: u64,
        /// The stream limit the sender is blocked at.
        limit: u64,
    },
    /// STREAMS_BLOCKED.
    StreamsBlocked {
        /// Which streams.
        stream_type: StreamType,
        /// The stream limit the sender is blocked at.
        limit: u64,
    },
    /// NEW_CONNECTION_ID.
    NewConnectionId {
        /// Sequence number.
        sequence_number: u64,
        /// Retire Prior To.
        retire_prior_to: u64,
        /// Length of the connection ID.
        connection_id_length: u64,
        /// The connection ID in hex (absent from the research model, which has no IDs).
        #[serde(skip_serializing_if = "Option::is_none")]
        connection_id: Option<String>,
        /// The stateless reset token in hex (absent from the research model).
        #[serde(skip_serializing_if = "Option::is_none")]
        stateless_reset_token: Option<String>,
    },
    /// RETIRE_CONNECTION_ID.
    RetireConnectionId {
        /// Sequence number.
        sequence_number: u64,
    },
    /// PATH_CHALLENGE.
    PathChallenge {
        /// The 8 bytes in hex.
        data: String,
    },
    /// PATH_RESPONSE.
    PathResponse {
        /// The 8 bytes in hex.
        data: String,
    },
    /// CONNECTION_CLOSE (0x1c transport, 0x1d application).
    ConnectionClose {
        /// Transport or application.
        error_space: ErrorSpace,
        /// The error code.
        error_code: u64,
        /// The reason phrase (lossy UTF-8).
        reason: String,
        /// The frame type that caused a transport error (0x1c only).
        #[serde(skip_serializing_if = "Option::is_none")]
        trigger_frame_type: Option<u64>,
    },
    /// HANDSHAKE_DONE.
    HandshakeDone,
    /// DATAGRAM.
    Datagram {
        /// Bytes of data.
        length: u64,
    },
    /// ACK_FREQUENCY (draft-ietf-quic-ack-frequency).
    AckFrequency {
        /// Sequence number.
        sequence_number: u64,
        /// Ack-eliciting packets the receiver may leave unacknowledged.
        ack_eliciting_threshold: u64,
        /// The requested max ACK delay (ms).
        request_max_ack_delay: f64,
        /// Reordering threshold (0: none).
        reordering_threshold: u64,
    },
    /// IMMEDIATE_ACK (draft-ietf-quic-ack-frequency).
    ImmediateAck,
    /// A frame type the parser does not know (parsing stops there).
    Unknown {
        /// The frame type.
        raw_frame_type: u64,
    },
}

/// Lower-case hex of `b`.
pub(crate) fn hex(b: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        s.push(HEX[usize::from(x >> 4)] as char);
        s.push(HEX[usize::from(x & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_rfc7464_json_seq() {
        let mut out = Vec::new();
        write_record(&mut out, &Header::new("t", "d", Vantage::Server, 0.0)).unwrap();
        assert_eq!(out[0], RECORD_SEPARATOR);
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out[1..]).unwrap();
        assert_eq!(v["trace"]["vantage_point"]["type"], "server");
        assert_eq!(v["qlog_format"], "JSON-SEQ");
    }

    #[test]
    fn durations_are_milliseconds_with_short_decimals() {
        assert_eq!(ms(Duration::from_micros(22_400)), 22.4);
        assert_eq!(seconds_to_ms(0.0224), 22.4);
        assert_eq!(seconds_to_ms(0.333), 333.0);
        assert_eq!(
            serde_json::to_string(&seconds_to_ms(0.1665)).unwrap(),
            "166.5"
        );
    }

    #[test]
    fn frames_carry_their_qlog_names() {
        let f = Frame::Stream {
            stream_id: 0,
            offset: 10,
            length: 5,
            fin: true,
        };
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"frame_type":"stream","stream_id":0,"offset":10,"length":5,"fin":true}"#
        );
        let m = Metrics {
            smoothed_rtt: Some(20.0),
            bytes_in_flight: Some(3),
            ..Metrics::default()
        };
        let same = m.changes_since(Some(&m));
        assert_eq!(same, None);
        let moved = Metrics {
            bytes_in_flight: Some(4),
            ..m
        };
        assert_eq!(
            serde_json::to_string(&moved.changes_since(Some(&m)).unwrap()).unwrap(),
            r#"{"bytes_in_flight":4}"#
        );
    }
}
