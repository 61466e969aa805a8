//! QUIC frames from a decrypted packet payload (RFC 9000 §19, plus ACK_FREQUENCY and
//! IMMEDIATE_ACK), as qlog [`Frame`]s. Never panics: a frame that does not parse ends the list
//! with an `unknown` frame of its type.

use super::schema::{hex, ErrorSpace, Frame, StreamType, Token, TokenRaw};

/// The ACK delay exponent every quinn endpoint uses (RFC 9000's default; quinn 0.11 has no
/// knob for it), so an ACK's delay field is in units of 8 µs.
const ACK_DELAY_EXPONENT: u32 = 3;

/// A cursor over a payload.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }

    fn bytes(&mut self, n: u64) -> Option<&[u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    /// A variable-length integer (RFC 9000 §16).
    fn varint(&mut self) -> Option<u64> {
        let first = self.byte()?;
        let len = 1usize << (first >> 6);
        let mut v = u64::from(first & 0x3f);
        for _ in 1..len {
            v = (v << 8) | u64::from(self.byte()?);
        }
        Some(v)
    }
}

/// Parses every frame of `payload` (in order; consecutive PADDING bytes are one frame).
pub fn parse(payload: &[u8]) -> Vec<Frame> {
    let mut c = Cursor { b: payload, at: 0 };
    let mut out = Vec::new();
    while !c.done() {
        let Some(ty) = c.varint() else {
            break;
        };
        match frame(ty, &mut c) {
            Some(f) => out.push(f),
            None => {
                out.push(Frame::Unknown { raw_frame_type: ty });
                break;
            }
        }
    }
    out
}

fn frame(ty: u64, c: &mut Cursor<'_>) -> Option<Frame> {
    Some(match ty {
        0x00 => {
            let mut n = 1u64;
            while c.b.get(c.at) == Some(&0) {
                c.at += 1;
                n += 1;
            }
            Frame::Padding {
                length: n,
                payload_length: n,
            }
        }
        0x01 => Frame::Ping,
        0x02 | 0x03 => ack(ty == 0x03, c)?,
        0x04 => Frame::ResetStream {
            stream_id: c.varint()?,
            error_code: c.varint()?,
            final_size: c.varint()?,
        },
        0x05 => Frame::StopSending {
            stream_id: c.varint()?,
            error_code: c.varint()?,
        },
        0x06 => {
            let offset = c.varint()?;
            let length = c.varint()?;
            c.bytes(length)?;
            Frame::Crypto { offset, length }
        }
        0x07 => {
            let length = c.varint()?;
            c.bytes(length)?;
            Frame::NewToken {
                token: Token {
                    raw: TokenRaw { length },
                },
            }
        }
        0x08..=0x0f => {
            let stream_id = c.varint()?;
            let offset = if ty & 0x04 != 0 { c.varint()? } else { 0 };
            let length = if ty & 0x02 != 0 {
                c.varint()?
            } else {
                (c.b.len() - c.at) as u64
            };
            c.bytes(length)?;
            Frame::Stream {
                stream_id,
                offset,
                length,
                fin: ty & 0x01 != 0,
            }
        }
        0x10 => Frame::MaxData {
            maximum: c.varint()?,
        },
        0x11 => Frame::MaxStreamData {
            stream_id: c.varint()?,
            maximum: c.varint()?,
        },
        0x12 | 0x13 => Frame::MaxStreams {
            stream_type: stream_type(ty == 0x12),
            maximum: c.varint()?,
        },
        0x14 => Frame::DataBlocked { limit: c.varint()? },
        0x15 => Frame::StreamDataBlocked {
            stream_id: c.varint()?,
            limit: c.varint()?,
        },
        0x16 | 0x17 => Frame::StreamsBlocked {
            stream_type: stream_type(ty == 0x16),
            limit: c.varint()?,
        },
        0x18 => {
            let sequence_number = c.varint()?;
            let retire_prior_to = c.varint()?;
            let len = c.byte()?;
            let cid = c.bytes(u64::from(len))?;
            let connection_id = hex(cid);
            let token = hex(c.bytes(16)?);
            Frame::NewConnectionId {
                sequence_number,
                retire_prior_to,
                connection_id_length: u64::from(len),
                connection_id: Some(connection_id),
                stateless_reset_token: Some(token),
            }
        }
        0x19 => Frame::RetireConnectionId {
            sequence_number: c.varint()?,
        },
        0x1a => Frame::PathChallenge {
            data: hex(c.bytes(8)?),
        },
        0x1b => Frame::PathResponse {
            data: hex(c.bytes(8)?),
        },
        0x1c | 0x1d => {
            let transport = ty == 0x1c;
            let error_code = c.varint()?;
            let trigger_frame_type = if transport { Some(c.varint()?) } else { None };
            let len = c.varint()?;
            let reason = String::from_utf8_lossy(c.bytes(len)?).into_owned();
            Frame::ConnectionClose {
                error_space: if transport {
                    ErrorSpace::Transport
                } else {
                    ErrorSpace::Application
                },
                error_code,
                reason,
                trigger_frame_type,
            }
        }
        0x1e => Frame::HandshakeDone,
        0x1f => Frame::ImmediateAck,
        0x30 | 0x31 => {
            let length = if ty == 0x31 {
                c.varint()?
            } else {
                (c.b.len() - c.at) as u64
            };
            c.bytes(length)?;
            Frame::Datagram { length }
        }
        0xaf => Frame::AckFrequency {
            sequence_number: c.varint()?,
            ack_eliciting_threshold: c.varint()?,
            request_max_ack_delay: c.varint()? as f64 / 1000.0,
            reordering_threshold: c.varint()?,
        },
        _ => return None,
    })
}

fn stream_type(bidi: bool) -> StreamType {
    if bidi {
        StreamType::Bidirectional
    } else {
        StreamType::Unidirectional
    }
}

/// ACK / ACK_ECN (RFC 9000 §19.3): ranges from the largest down, reported ascending.
fn ack(ecn: bool, c: &mut Cursor<'_>) -> Option<Frame> {
    let largest = c.varint()?;
    let delay = c.varint()?;
    let count = c.varint()?;
    let first = c.varint()?;
    let mut hi = largest;
    let mut lo = hi.checked_sub(first)?;
    let mut ranges = vec![[lo, hi]];
    for _ in 0..count {
        let gap = c.varint()?;
        let len = c.varint()?;
        hi = lo.checked_sub(gap)?.checked_sub(2)?;
        lo = hi.checked_sub(len)?;
        ranges.push([lo, hi]);
    }
    ranges.reverse();
    let (ect0, ect1, ce) = if ecn {
        (Some(c.varint()?), Some(c.varint()?), Some(c.varint()?))
    } else {
        (None, None, None)
    };
    Some(Frame::Ack {
        ack_delay: (delay << ACK_DELAY_EXPONENT) as f64 / 1000.0,
        acked_ranges: ranges,
        ect0,
        ect1,
        ce,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_of_a_packet_parse_in_order() {
        let payload = [
            // ACK largest 10, delay 125 (1 ms), 1 more range, first 2 (8..10), gap 1, len 1.
            0x02, 0x0a, 0x40, 0x7d, 0x01, 0x02, 0x01, 0x01,
            // STREAM with offset and length and FIN: id 4, offset 1000, length 3.
            0x0f, 0x04, 0x43, 0xe8, 0x03, b'a', b'b', b'c',
            // MAX_STREAM_DATA id 4, max 70000 (4-byte varint).
            0x11, 0x04, 0x80, 0x01, 0x11, 0x70,
            // ACK_FREQUENCY (2-byte type): seq 0, threshold 9, delay 25000 µs, reorder 2.
            0x40, 0xaf, 0x00, 0x09, 0x80, 0x00, 0x61, 0xa8, 0x02,
            // Three bytes of padding.
            0x00, 0x00, 0x00,
        ];
        let f = parse(&payload);
        assert_eq!(
            f,
            vec![
                Frame::Ack {
                    ack_delay: 1.0,
                    acked_ranges: vec![[4, 5], [8, 10]],
                    ect0: None,
                    ect1: None,
                    ce: None,
                },
                Frame::Stream {
                    stream_id: 4,
                    offset: 1000,
                    length: 3,
                    fin: true,
                },
                Frame::MaxStreamData {
                    stream_id: 4,
                    maximum: 70_000,
                },
                Frame::AckFrequency {
                    sequence_number: 0,
                    ack_eliciting_threshold: 9,
                    request_max_ack_delay: 25.0,
                    reordering_threshold: 2,
                },
                Frame::Padding {
                    length: 3,
                    payload_length: 3,
                },
            ]
        );
    }

    #[test]
    fn a_stream_frame_without_length_runs_to_the_end() {
        let f = parse(&[0x08, 0x00, 1, 2, 3, 4]);
        assert_eq!(
            f,
            vec![Frame::Stream {
                stream_id: 0,
                offset: 0,
                length: 4,
                fin: false,
            }]
        );
    }

    #[test]
    fn garbage_ends_in_an_unknown_frame_and_never_panics() {
        assert_eq!(
            parse(&[0x21]),
            vec![Frame::Unknown {
                raw_frame_type: 0x21
            }]
        );
        // A CRYPTO frame longer than the payload.
        assert_eq!(
            parse(&[0x01, 0x06, 0x00, 0x10, 1]),
            vec![Frame::Ping, Frame::Unknown { raw_frame_type: 6 }]
        );
        // An ACK range below zero.
        assert_eq!(
            parse(&[0x02, 0x01, 0x00, 0x01, 0x00, 0x05, 0x00]),
            vec![Frame::Unknown { raw_frame_type: 2 }]
        );
        for n in 0..=255u8 {
            for m in 0..=255u8 {
                let _ = parse(&[n, m, 0x40, 0xff, 0xc0]);
            }
        }
    }
}
