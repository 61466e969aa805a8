//! The research model's qlog: one `.sqlog` per connection and side, in the schema quinn's
//! qlog is rewritten into ([`crate::qlog::schema`]), so qvis and scripts read both stacks alike.
//!
//! The model knows its frames in plain form, so every `transport:packet_sent` and
//! `transport:packet_received` carries them; `recovery:packet_lost` and
//! `recovery:metrics_updated` (RTTs, congestion window, bytes in flight, PTO count: the fields
//! that changed) come from its recovery. Times are the simulator's virtual time in
//! milliseconds, so the same seed gives a byte-identical file. What the model does not have
//! is absent rather than invented: its NEW_CONNECTION_ID frames carry sequence numbers 1 to 4
//! (as quinn issues them) but no connection ID or reset token, and its CONNECTION_CLOSE the
//! reason quiclab's quinn flow sends, "done".

use std::path::Path;
use std::time::Duration;

use super::space::SpaceId;
use super::wire::{self, PacketKind, Reader, CID_LEN};
use crate::agent::Side;
use crate::qlog::schema::{
    ms, write_record, ErrorSpace, Event, Frame, Header, LossTrigger, Metrics, PacketEvent,
    PacketHeader, PacketLost, PacketType, RawInfo, Token, TokenRaw, Vantage,
    VIRTUAL_REFERENCE_TIME_MS,
};
use crate::qlog::{QlogErrors, QlogFile, QlogFlusher};

/// What the trace says of its source.
const DESCRIPTION: &str =
    "quiclab's QUIC research model (quic-model) in the simulator (virtual time)";

/// One endpoint's qlog file.
pub(crate) struct ModelQlog {
    file: QlogFile,
    /// The metrics last logged (the next event carries only what changed).
    last: Option<Metrics>,
    /// Largest Data-space packet number sent as 0-RTT (packet_lost names its type).
    zero_rtt_max: Option<u64>,
    /// Scratch: the frames of the packet being logged.
    frames: Vec<Frame>,
}

/// qlog's name for the model's packet kind.
fn packet_type(kind: PacketKind) -> PacketType {
    match kind {
        PacketKind::Initial => PacketType::Initial,
        PacketKind::ZeroRtt => PacketType::ZeroRtt,
        PacketKind::Handshake => PacketType::Handshake,
        PacketKind::OneRtt => PacketType::OneRtt,
    }
}

/// Appends the qlog frames of one model frame (NEW_CONNECTION_ID ×n becomes n frames).
fn push_frames(f: &wire::Frame, out: &mut Vec<Frame>) {
    out.push(match *f {
        wire::Frame::Padding(n) => Frame::Padding {
            length: u64::from(n),
            payload_length: u64::from(n),
        },
        wire::Frame::Ping => Frame::Ping,
        wire::Frame::Ack(ref a) => {
            let mut ranges: Vec<[u64; 2]> = a.ranges().map(|(lo, hi)| [lo, hi]).collect();
            ranges.reverse();
            Frame::Ack {
                // The delay field is in units of 8 µs (ack_delay_exponent 3).
                ack_delay: (a.delay << 3) as f64 / 1000.0,
                acked_ranges: ranges,
                ect0: a.ecn.map(|e| e.ect0),
                ect1: a.ecn.map(|e| e.ect1),
                ce: a.ecn.map(|e| e.ce),
            }
        }
        wire::Frame::Crypto { offset, len } => Frame::Crypto {
            offset: u64::from(offset),
            length: u64::from(len),
        },
        wire::Frame::NewToken(n) => Frame::NewToken {
            token: Token {
                raw: TokenRaw {
                    length: u64::from(n),
                },
            },
        },
        wire::Frame::Stream {
            id,
            offset,
            len,
            fin,
            ..
        } => Frame::Stream {
            stream_id: id,
            offset,
            length: u64::from(len),
            fin,
        },
        wire::Frame::MaxData(v) => Frame::MaxData { maximum: v },
        wire::Frame::MaxStreamData { id, max } => Frame::MaxStreamData {
            stream_id: id,
            maximum: max,
        },
        wire::Frame::DataBlocked(v) => Frame::DataBlocked { limit: v },
        wire::Frame::StreamDataBlocked { id, limit } => Frame::StreamDataBlocked {
            stream_id: id,
            limit,
        },
        wire::Frame::NewConnectionIds(n) => {
            for seq in 1..=u64::from(n) {
                out.push(Frame::NewConnectionId {
                    sequence_number: seq,
                    retire_prior_to: 0,
                    connection_id_length: u64::from(CID_LEN),
                    connection_id: None,
                    stateless_reset_token: None,
                });
            }
            return;
        }
        wire::Frame::Close(code) => Frame::ConnectionClose {
            error_space: ErrorSpace::Application,
            error_code: code,
            reason: "done".into(),
            trigger_frame_type: None,
        },
        wire::Frame::HandshakeDone => Frame::HandshakeDone,
        wire::Frame::AckFrequency {
            seq,
            threshold,
            max_delay_us,
            reorder,
        } => Frame::AckFrequency {
            sequence_number: seq,
            ack_eliciting_threshold: u64::from(threshold),
            request_max_ack_delay: max_delay_us as f64 / 1000.0,
            reordering_threshold: u64::from(reorder),
        },
    });
}

impl ModelQlog {
    /// Creates `<dir>/<flow>-<side>-<conn>.sqlog` and writes its header, or records why it
    /// cannot in `errors`; also returns a flusher for the flow's report.
    pub(crate) fn create(
        dir: &Path,
        flow: &str,
        conn: u32,
        side: Side,
        errors: &QlogErrors,
    ) -> Option<(ModelQlog, QlogFlusher)> {
        let vantage = match side {
            Side::Client => Vantage::Client,
            Side::Server | Side::Middle => Vantage::Server,
        };
        let role = vantage.name();
        let mut file = QlogFile::create(dir.join(format!("{flow}-{role}-{conn}.sqlog")), errors)?;
        let title = format!("quiclab {flow} {role} {conn}");
        // A failure is recorded in `errors` by the file itself.
        let _ = write_record(
            &mut file,
            &Header::new(&title, DESCRIPTION, vantage, VIRTUAL_REFERENCE_TIME_MS),
        );
        let flusher = file.flusher();
        Some((
            ModelQlog {
                file,
                last: None,
                zero_rtt_max: None,
                frames: Vec::new(),
            },
            flusher,
        ))
    }

    fn event(&mut self, now: Duration, name: &str, data: impl serde::Serialize) {
        let e = Event {
            time: ms(now),
            name,
            data,
        };
        // A failure is recorded by the file (once); the trace is not the run's result.
        let _ = write_record(&mut self.file, &e);
    }

    /// `transport:packet_sent` for every packet of a datagram the endpoint sends.
    pub(crate) fn sent(&mut self, now: Duration, datagram: &[u8]) {
        let Ok((mut r, h)) = Reader::new(datagram) else {
            return;
        };
        for _ in 0..h.packets {
            let Ok(p) = r.packet() else {
                return;
            };
            if p.kind == PacketKind::ZeroRtt {
                self.zero_rtt_max = Some(p.pn);
            }
            if self
                .packet(now, "transport:packet_sent", &p, &mut r, true)
                .is_none()
            {
                return;
            }
        }
    }

    /// `transport:packet_received` for one packet the endpoint accepts; `r` is positioned at
    /// its first frame.
    pub(crate) fn received(&mut self, now: Duration, p: &wire::PacketHeader, mut r: Reader<'_>) {
        let _ = self.packet(now, "transport:packet_received", p, &mut r, false);
    }

    /// Logs one packet (its frames read from `r`); `None` if they do not decode.
    fn packet(
        &mut self,
        now: Duration,
        name: &str,
        p: &wire::PacketHeader,
        r: &mut Reader<'_>,
        sent: bool,
    ) -> Option<()> {
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let mut payload = 0u64;
        let mut ok = true;
        for _ in 0..p.frames {
            match r.frame() {
                Ok(f) => {
                    payload += u64::from(f.wire_len());
                    push_frames(&f, &mut frames);
                }
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            let length = u64::from(p.len);
            let data = PacketEvent {
                header: PacketHeader {
                    packet_type: packet_type(p.kind),
                    packet_number: p.pn,
                    // As quinn: the length in the header of packets sent only.
                    length: sent.then_some(length),
                },
                raw: RawInfo {
                    length,
                    payload_length: payload,
                },
                frames: &frames,
            };
            self.event(now, name, data);
        }
        self.frames = frames;
        ok.then_some(())
    }

    /// `recovery:packet_lost` for packet `pn` of `space` (`size`: the bytes it held in flight).
    pub(crate) fn lost(
        &mut self,
        now: Duration,
        space: SpaceId,
        pn: u64,
        size: u32,
        trigger: LossTrigger,
    ) {
        let packet_type = match space {
            SpaceId::Initial => PacketType::Initial,
            SpaceId::Handshake => PacketType::Handshake,
            SpaceId::Data if self.zero_rtt_max.is_some_and(|m| pn <= m) => PacketType::ZeroRtt,
            SpaceId::Data => PacketType::OneRtt,
        };
        let data = PacketLost {
            header: PacketHeader {
                packet_type,
                packet_number: pn,
                length: Some(u64::from(size)),
            },
            trigger,
        };
        self.event(now, "recovery:packet_lost", data);
    }

    /// `recovery:metrics_updated` with what changed since the last one (nothing if nothing did).
    pub(crate) fn metrics(&mut self, now: Duration, m: Metrics) {
        if let Some(changed) = m.changes_since(self.last.as_ref()) {
            self.last = Some(m);
            self.event(now, "recovery:metrics_updated", changed);
        }
    }
}
