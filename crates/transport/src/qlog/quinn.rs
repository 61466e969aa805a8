//! quinn's qlog, rewritten record by record into quiclab's schema ([`super::schema`]) on its
//! way to the file.
//!
//! quinn-proto 0.11 writes its qlog through the `qlog` crate: JSON-SEQ records (0x1E, JSON,
//! `\n`) with a header whose vantage point is `unknown`, RTTs in seconds in
//! `recovery:metrics_updated`, a `group_id` that changes with the peer's connection ID, every
//! loss triggered by `reordering_threshold`, and packet events without frames. [`QuinnQlog`] is
//! the writer quinn gets: it collects each record and writes it to the [`QlogFile`] with our
//! header (vantage point, time base), RTTs in milliseconds, no `group_id` (one connection per
//! file), no loss trigger, the simulator's exact times and, when the connection's keys are
//! tapped ([`super::tap`]), each packet's sizes and frames.

use std::io::Write;
use std::time::Instant;

use serde_json::{Map, Value};

use super::schema::{ms, seconds_to_ms, write_record, Header, Vantage, RECORD_SEPARATOR};
use super::tap::{Direction, FrameTap};
use super::QlogFile;
use crate::clock::VirtualClock;

/// What a quinn qlog file says of itself.
#[derive(Debug, Clone)]
pub struct QuinnTrace {
    /// The file's title (also the vantage point's name).
    pub title: String,
    /// The stack and engine that wrote it.
    pub description: String,
    /// Client or server.
    pub vantage: Vantage,
    /// Milliseconds since the Unix epoch of the events' time zero (0 in the simulator).
    pub reference_time: f64,
    /// The connection's frame tap (its keys must be wrapped with it), if frames are wanted.
    pub tap: Option<FrameTap>,
    /// The simulator's clock: event times from it, exact to the nanosecond, rather than
    /// quinn's (single-precision milliseconds: 49.600002 for 49.6).
    pub clock: Option<VirtualClock>,
}

/// The RTT fields of `recovery:metrics_updated`, which quinn writes in seconds.
const RTT_FIELDS: [&str; 4] = ["min_rtt", "smoothed_rtt", "latest_rtt", "rtt_variance"];

/// The writer quinn's qlog streamer gets: quinn's records in, ours out.
pub struct QuinnQlog {
    out: QlogFile,
    trace: QuinnTrace,
    /// Bytes of the record being written (quinn writes a record in many pieces).
    record: Vec<u8>,
    /// An ACK has been received, so quinn's minimum and latest RTT are measurements, no longer
    /// its initial RTT. Without a tap the frames are unknown and every RTT is written.
    rtt_sampled: bool,
}

impl QuinnQlog {
    fn new(out: QlogFile, trace: QuinnTrace) -> Self {
        let rtt_sampled = trace.tap.is_none();
        QuinnQlog {
            out,
            trace,
            record: Vec::with_capacity(512),
            rtt_sampled,
        }
    }

    /// One whole record (separator and line feed excluded).
    fn rewrite(&mut self, json: &[u8]) -> std::io::Result<()> {
        let Ok(Value::Object(mut rec)) = serde_json::from_slice::<Value>(json) else {
            // Not JSON as expected: kept as written.
            let mut raw = Vec::with_capacity(json.len() + 2);
            raw.push(RECORD_SEPARATOR);
            raw.extend_from_slice(json);
            raw.push(b'\n');
            return self.out.write_all(&raw);
        };
        if rec.contains_key("qlog_version") {
            let t = &self.trace;
            let header = Header::new(&t.title, &t.description, t.vantage, t.reference_time);
            return write_record(&mut self.out, &header);
        }
        rec.remove("group_id");
        if let Some(c) = &self.trace.clock {
            rec.insert("time".into(), Value::from(ms(c.now())));
        }
        let name = rec.get("name").and_then(Value::as_str).unwrap_or_default();
        let dir = match name {
            "transport:packet_sent" => Some(Direction::Sent),
            "transport:packet_received" => Some(Direction::Received),
            _ => None,
        };
        let metrics = name == "recovery:metrics_updated";
        let lost = name == "recovery:packet_lost";
        if let Some(Value::Object(data)) = rec.get_mut("data") {
            if metrics {
                to_ms(data);
                if !self.rtt_sampled {
                    // quinn's initial RTT, not a measurement (qvis would take it for the
                    // handshake's round trip).
                    data.remove("min_rtt");
                    data.remove("latest_rtt");
                }
            }
            if lost {
                // quinn-proto 0.11.19 compares the send time the wrong way round and calls every
                // loss `reordering_threshold`: a wrong trigger is worse than none.
                data.remove("trigger");
            }
            if let (Some(dir), Some(tap)) = (dir, &self.trace.tap) {
                add_frames(data, dir, tap);
                if dir == Direction::Received && carries_ack(data) {
                    self.rtt_sampled = true;
                }
            }
        }
        write_record(&mut self.out, &rec)
    }
}

/// The packet's frames include an ACK frame.
fn carries_ack(data: &Map<String, Value>) -> bool {
    data.get("frames")
        .and_then(Value::as_array)
        .is_some_and(|frames| frames.iter().any(|f| f["frame_type"] == "ack"))
}

/// RTTs from seconds to milliseconds.
fn to_ms(data: &mut Map<String, Value>) {
    for f in RTT_FIELDS {
        if let Some(v) = data.get_mut(f) {
            if let Some(s) = v.as_f64() {
                *v = Value::from(seconds_to_ms(s));
            }
        }
    }
}

/// The packet's sizes and frames from the tap, when its key saw it.
fn add_frames(data: &mut Map<String, Value>, dir: Direction, tap: &FrameTap) {
    let Some(header) = data.get("header") else {
        return;
    };
    let (Some(ty), Some(pn)) = (
        header.get("packet_type").and_then(Value::as_str),
        header.get("packet_number").and_then(Value::as_u64),
    ) else {
        return;
    };
    let Some(p) = tap.take(dir, ty, pn) else {
        return;
    };
    if let (Ok(raw), Ok(frames)) = (serde_json::to_value(p.raw), serde_json::to_value(&p.frames)) {
        data.insert("raw".into(), raw);
        data.insert("frames".into(), frames);
    }
}

impl Write for QuinnQlog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.record.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let record = std::mem::take(&mut self.record);
            let json = record.strip_prefix(&[RECORD_SEPARATOR]).unwrap_or(&record);
            let r = if json.iter().all(u8::is_ascii_whitespace) {
                Ok(())
            } else {
                self.rewrite(json)
            };
            self.record = record;
            self.record.clear();
            r?;
        }
        self.record.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl QlogFile {
    /// A quinn qlog stream writing `trace`'s records into this file in quiclab's schema, with
    /// event times relative to `start`.
    pub fn into_stream(self, trace: QuinnTrace, start: Instant) -> Option<quinn_proto::QlogStream> {
        let mut q = quinn_proto::QlogConfig::default();
        q.writer(Box::new(QuinnQlog::new(self, trace)))
            .title(None)
            .start_time(start);
        q.into_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qlog::schema::{Frame, PacketType, RawInfo};
    use crate::qlog::tap::TappedPacket;
    use crate::qlog::QlogErrors;
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    /// A file in memory.
    #[derive(Clone, Default)]
    struct Mem(Arc<Mutex<Vec<u8>>>);

    impl Write for Mem {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn quinn_records_become_ours() {
        let mem = Mem::default();
        let tap = FrameTap::default();
        let file = QlogFile::new(mem.clone(), PathBuf::from("m"), QlogErrors::default());
        let mut w = QuinnQlog::new(
            file,
            QuinnTrace {
                title: "t".into(),
                description: "d".into(),
                vantage: Vantage::Client,
                reference_time: 0.0,
                tap: Some(tap.clone()),
                clock: None,
            },
        );
        let p = TappedPacket {
            packet_type: PacketType::OneRtt,
            packet_number: 7,
            raw: RawInfo {
                length: 100,
                payload_length: 75,
            },
            frames: vec![Frame::Ping],
        };
        tap.record(Direction::Sent, p);
        tap.record(
            Direction::Received,
            TappedPacket {
                packet_type: PacketType::Initial,
                packet_number: 0,
                raw: RawInfo {
                    length: 1200,
                    payload_length: 1100,
                },
                frames: vec![Frame::Ack {
                    ack_delay: 0.0,
                    acked_ranges: vec![[0, 0]],
                    ect0: None,
                    ect1: None,
                    ce: None,
                }],
            },
        );
        // As quinn writes them: in pieces, with the separator first. The first metrics precede
        // any ACK (quinn's initial RTT), the second follow one.
        let input = concat!(
            "\u{1e}{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"trace\":{\"vantage_point\":{\"type\":\"unknown\"}}}\n",
            "\u{1e}{\"time\":1.5,\"name\":\"recovery:metrics_updated\",\"data\":{\"min_rtt\":0.0224,\"smoothed_rtt\":0.333,\"bytes_in_flight\":3},\"group_id\":\"ab\"}\n",
            "\u{1e}{\"time\":2.0,\"name\":\"transport:packet_sent\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":7,\"length\":100}},\"group_id\":\"ab\"}\n",
            "\u{1e}{\"time\":3.0,\"name\":\"recovery:packet_lost\",\"data\":{\"header\":{\"packet_type\":\"1RTT\",\"packet_number\":5},\"trigger\":\"reordering_threshold\"}}\n",
            "\u{1e}{\"time\":4.0,\"name\":\"transport:packet_received\",\"data\":{\"header\":{\"packet_type\":\"initial\",\"packet_number\":0}}}\n",
            "\u{1e}{\"time\":4.0,\"name\":\"recovery:metrics_updated\",\"data\":{\"min_rtt\":0.0224,\"latest_rtt\":0.0224}}\n",
        );
        for piece in input.as_bytes().chunks(7) {
            w.write_all(piece).unwrap();
        }
        w.flush().unwrap();
        let out = String::from_utf8(mem.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = out.split_terminator('\n').collect();
        assert_eq!(lines.len(), 6, "{out}");
        assert!(lines.iter().all(|l| l.starts_with('\u{1e}')));
        let v: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(&l[1..]).unwrap())
            .collect();
        assert_eq!(v[0]["trace"]["vantage_point"]["type"], "client");
        assert!(
            v[1]["data"].get("min_rtt").is_none(),
            "before any ACK the minimum RTT is quinn's initial RTT"
        );
        assert_eq!(v[1]["data"]["smoothed_rtt"], 333.0);
        assert_eq!(v[4]["data"]["frames"][0]["frame_type"], "ack");
        assert_eq!(v[5]["data"]["min_rtt"], 22.4);
        assert_eq!(v[5]["data"]["latest_rtt"], 22.4);
        assert_eq!(v[1]["data"]["bytes_in_flight"], 3);
        assert!(v[1].get("group_id").is_none());
        assert_eq!(v[2]["data"]["frames"][0]["frame_type"], "ping");
        assert_eq!(v[2]["data"]["raw"]["payload_length"], 75);
        assert!(
            v[3]["data"].get("trigger").is_none(),
            "quinn's trigger is wrong"
        );
        assert_eq!(v[3]["data"]["header"]["packet_number"], 5);
    }

    #[test]
    fn the_simulators_clock_gives_exact_times() {
        let mem = Mem::default();
        let clock = VirtualClock::new();
        let file = QlogFile::new(mem.clone(), PathBuf::from("m"), QlogErrors::default());
        let mut w = QuinnQlog::new(
            file,
            QuinnTrace {
                title: "t".into(),
                description: "d".into(),
                vantage: Vantage::Server,
                reference_time: 0.0,
                tap: None,
                clock: Some(clock.clone()),
            },
        );
        clock.set(std::time::Duration::from_micros(49_600));
        w.write_all(
            b"\x1e{\"time\":49.600002,\"name\":\"recovery:metrics_updated\",\"data\":{}}\n",
        )
        .unwrap();
        w.flush().unwrap();
        let out = mem.0.lock().unwrap().clone();
        let v: Value = serde_json::from_slice(&out[1..out.len() - 1]).unwrap();
        assert_eq!(v["time"], 49.6);
    }
}
