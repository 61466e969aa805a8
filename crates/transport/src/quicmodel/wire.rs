//! Packets and frames of the model: their real QUIC sizes (RFC 9000 §12–§19) and the model's
//! own compact encoding, which is what [`Transmit::bytes`](crate::agent::Transmit) carries.
//!
//! # Sizes
//!
//! Sizes are those of real QUIC version 1 with quinn's 8-byte connection IDs: a short header
//! is 1 + 8 (DCID) + the packet-number length (1–4 bytes, RFC 9000 §17.1 / A.2, from the
//! distance to the largest acknowledged packet); a long header (Initial, 0-RTT, Handshake) is
//! 1 + 4 (version) + 1 + 8 + 1 + 8 (CIDs) + [Initial: token length (1)] + Length (varint) +
//! packet number. Every packet ends with a 16-byte AEAD tag; frames use varint fields. A
//! datagram is an IPv4 + UDP payload (28 header bytes on the wire).
//!
//! # The model's encoding (the UDP payload in pcap)
//!
//! No payload bytes exist, so a datagram is a compact, fixed-layout description of its
//! packets, little-endian throughout:
//!
//! ```text
//! datagram: "QM" (2) | version = 2 (1) | connection index (u32)
//!           | real UDP payload length (u16) | packet count (u8) | packets…
//! packet:   kind (u8: 0 Initial, 1 0-RTT, 2 Handshake, 3 1-RTT) | flags (u8: bit 0 I-bit)
//!           | packet number (u64) | real packet length incl. header and tag (u16)
//!           | frame count (u8) | frames…
//! frame:    type (u8, the QUIC frame type) | fields:
//!   0x00 PADDING        bytes (u16)
//!   0x01 PING           –
//!   0x02 ACK            largest (u64) | ack delay field, units of 8 µs (u64)
//!                       | range count (u8) | ranges as (smallest, largest) u64 pairs, descending
//!   0x03 ACK_ECN        as ACK, then ECT(0), ECT(1) and ECN-CE counts (u64 each)
//!   0x06 CRYPTO         offset (u32) | length (u32)
//!   0x07 NEW_TOKEN      token length (u16)
//!   0x08 STREAM         stream id (u64) | offset (u64) | length (u16)
//!                       | flags (u8: bit 0 FIN, bit 1 the real frame has a length field)
//!   0x10 MAX_DATA       maximum (u64)
//!   0x11 MAX_STREAM_DATA stream id (u64) | maximum (u64)
//!   0x14 DATA_BLOCKED   limit (u64)
//!   0x15 STREAM_DATA_BLOCKED stream id (u64) | limit (u64)
//!   0x18 NEW_CONNECTION_ID ×n  count (u8): n frames of 28 bytes (sequence, retire prior
//!                       to, length, 8-byte CID, 16-byte reset token)
//!   0x1d CONNECTION_CLOSE (application) error code (u64)
//!   0x1e HANDSHAKE_DONE –
//!   0xaf ACK_FREQUENCY  sequence (u64) | ack-eliciting threshold (u32) | max ack delay, µs (u64)
//!                       | reordering threshold (u8)
//! ```
//!
//! [`describe`] renders a datagram as one line of text (for pcap readers and debugging).
//! Decoding never panics: malformed input is a [`DecodeError`].

use std::fmt::Write as _;

/// Connection-ID length (bytes) of quiclab's quinn endpoints.
pub const CID_LEN: u32 = 8;
/// AEAD tag on every packet (AES-GCM / ChaCha20-Poly1305).
pub const AEAD_TAG: u32 = 16;
/// Smallest UDP payload of a datagram carrying a client Initial (RFC 9000 §14.1).
pub const MIN_INITIAL_DATAGRAM: u32 = 1200;
/// Most ACK ranges one ACK frame carries (older ranges are dropped; quinn keeps 64 blocks).
pub const MAX_ACK_RANGES: usize = 32;
/// Most frames one packet carries in the model (its frame count is one byte).
pub const MAX_FRAMES: u32 = 255;
/// One NEW_CONNECTION_ID frame with an 8-byte CID: type, sequence, retire prior to, length,
/// CID, reset token.
pub const NEW_CONNECTION_ID_LEN: u32 = 1 + 1 + 1 + 1 + CID_LEN + 16;
/// Encoding version byte (2: the datagram header carries no send time; the simulator
/// measures one-way delay for every stack alike).
const VERSION: u8 = 2;
/// Datagram header of the model's encoding.
pub const DATAGRAM_HEADER: usize = 2 + 1 + 4 + 2 + 1;

/// Bytes of a long header's Length field (quinn always writes a two-byte varint).
const LONG_HEADER_LENGTH_FIELD: u32 = 2;

/// QUIC variable-length integer size (RFC 9000 §16).
#[inline]
pub fn varint_len(v: u64) -> u32 {
    if v < 64 {
        1
    } else if v < 16_384 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// Packet-number length for `pn` given the largest acknowledged packet of its space (RFC 9000
/// §17.1 and A.2: enough bits for twice the unacknowledged range).
#[inline]
pub fn pn_len(pn: u64, largest_acked: Option<u64>) -> u32 {
    let unacked = match largest_acked {
        Some(l) => pn.saturating_sub(l),
        None => pn.saturating_add(1),
    };
    // ceil((log2(unacked) + 1) / 8) bytes.
    if unacked <= 1 << 7 {
        1
    } else if unacked <= 1 << 15 {
        2
    } else if unacked <= 1 << 23 {
        3
    } else {
        4
    }
}

/// Packet type (long-header types plus the short header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketKind {
    /// Initial (long header, with a token length).
    Initial,
    /// 0-RTT (long header).
    ZeroRtt,
    /// Handshake (long header).
    Handshake,
    /// 1-RTT (short header).
    OneRtt,
}

impl PacketKind {
    fn code(self) -> u8 {
        match self {
            PacketKind::Initial => 0,
            PacketKind::ZeroRtt => 1,
            PacketKind::Handshake => 2,
            PacketKind::OneRtt => 3,
        }
    }

    fn from_code(c: u8) -> Option<PacketKind> {
        Some(match c {
            0 => PacketKind::Initial,
            1 => PacketKind::ZeroRtt,
            2 => PacketKind::Handshake,
            3 => PacketKind::OneRtt,
            _ => return None,
        })
    }

    /// Name as Wireshark shows it.
    pub fn name(self) -> &'static str {
        match self {
            PacketKind::Initial => "Initial",
            PacketKind::ZeroRtt => "0-RTT",
            PacketKind::Handshake => "Handshake",
            PacketKind::OneRtt => "1-RTT",
        }
    }

    /// Header bytes before the payload, with a `pnl`-byte packet number. Long headers carry the
    /// payload's length as a two-byte varint whatever its value, as quinn writes it (a
    /// placeholder filled in once the packet is built), so a short Handshake packet is one
    /// byte longer than a minimal encoding would make it.
    #[inline]
    pub fn header_len(self, pnl: u32) -> u32 {
        match self {
            PacketKind::OneRtt => 1 + CID_LEN + pnl,
            _ => {
                let token = u32::from(self == PacketKind::Initial);
                1 + 4 + 1 + CID_LEN + 1 + CID_LEN + token + LONG_HEADER_LENGTH_FIELD + pnl
            }
        }
    }
}

/// One frame as the model carries it. The ACK variant holds its ranges inline (frames are
/// built and read in place, never stored in bulk), so no frame allocates.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// PADDING of `n` bytes.
    Padding(u16),
    /// PING.
    Ping,
    /// ACK: the header; ranges follow in [`Ack::ranges`].
    Ack(Ack),
    /// CRYPTO data.
    Crypto {
        /// Offset in the space's crypto stream.
        offset: u32,
        /// Bytes.
        len: u32,
    },
    /// NEW_TOKEN with a token of `n` bytes.
    NewToken(u16),
    /// STREAM data.
    Stream {
        /// Stream id.
        id: u64,
        /// Offset.
        offset: u64,
        /// Bytes.
        len: u16,
        /// FIN bit.
        fin: bool,
        /// The frame has a length field (false: it runs to the end of the packet).
        length_field: bool,
    },
    /// MAX_DATA.
    MaxData(u64),
    /// MAX_STREAM_DATA.
    MaxStreamData {
        /// Stream id.
        id: u64,
        /// New limit.
        max: u64,
    },
    /// DATA_BLOCKED at `limit`.
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED.
    StreamDataBlocked {
        /// Stream id.
        id: u64,
        /// Limit the sender is blocked at.
        limit: u64,
    },
    /// `n` NEW_CONNECTION_ID frames (quinn issues 4 per side once 1-RTT keys exist).
    NewConnectionIds(u8),
    /// CONNECTION_CLOSE (application error code; reason "done").
    Close(u64),
    /// HANDSHAKE_DONE.
    HandshakeDone,
    /// ACK_FREQUENCY (draft-ietf-quic-ack-frequency).
    AckFrequency {
        /// Sequence number.
        seq: u64,
        /// Ack-eliciting threshold: ACK when more than this many are unacknowledged.
        threshold: u32,
        /// Requested max ACK delay (µs).
        max_delay_us: u64,
        /// Reordering threshold: 0 never ACK at once on reordering, 1 on any gap, n ≥ 2 only
        /// when the gap lets the sender declare a loss (the draft's rule).
        reorder: u8,
    },
}

/// The ECN counts of an ACK_ECN frame (RFC 9000 §19.3.2): packets of the space received with
/// each codepoint, cumulative over the connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EcnCounts {
    /// ECT(0) packets.
    pub ect0: u64,
    /// ECT(1) packets.
    pub ect1: u64,
    /// ECN-CE packets.
    pub ce: u64,
}

impl EcnCounts {
    /// Counts one more packet that arrived with `ecn` (Not-ECT is not counted).
    pub fn count(&mut self, ecn: netem::Ecn) {
        match ecn {
            netem::Ecn::NotEct => {}
            netem::Ecn::Ect0 => self.ect0 += 1,
            netem::Ecn::Ect1 => self.ect1 += 1,
            netem::Ecn::Ce => self.ce += 1,
        }
    }

    /// Sum of the three counts.
    pub fn total(&self) -> u64 {
        self.ect0 + self.ect1 + self.ce
    }
}

/// An ACK frame: largest, delay field and up to [`MAX_ACK_RANGES`] ranges, held compactly
/// (each range as its distance below `largest` and its length) so frames stay small to copy;
/// with ECN counts it is an ACK_ECN frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// Largest acknowledged.
    pub largest: u64,
    /// ACK delay field (units of 2^3 µs, the default ack_delay_exponent).
    pub delay: u64,
    /// The ECN counts (an ACK_ECN frame), when the receiver has seen ECT or CE packets.
    pub ecn: Option<EcnCounts>,
    count: u8,
    /// (largest − range's largest, range's largest − range's smallest), descending.
    rel: [(u32, u32); MAX_ACK_RANGES],
}

impl Ack {
    /// An ACK frame for `largest` with no ranges yet.
    pub fn new(largest: u64, delay: u64) -> Ack {
        Ack {
            largest,
            delay,
            ecn: None,
            count: 0,
            rel: [(0, 0); MAX_ACK_RANGES],
        }
    }

    /// Appends the next lower range `[lo, hi]` (inclusive); false when full, out of order or
    /// too far below `largest` to be held.
    pub fn push(&mut self, lo: u64, hi: u64) -> bool {
        if usize::from(self.count) >= MAX_ACK_RANGES || lo > hi || hi > self.largest {
            return false;
        }
        if let Some((plo, _)) = self.range(usize::from(self.count).wrapping_sub(1)) {
            if hi >= plo {
                return false;
            }
        }
        let (Ok(d), Ok(l)) = (u32::try_from(self.largest - hi), u32::try_from(hi - lo)) else {
            return false;
        };
        self.rel[usize::from(self.count)] = (d, l);
        self.count += 1;
        true
    }

    /// Ranges held.
    pub fn count(&self) -> usize {
        usize::from(self.count)
    }

    /// Range `i` as (smallest, largest), inclusive.
    pub fn range(&self, i: usize) -> Option<(u64, u64)> {
        if i >= usize::from(self.count) {
            return None;
        }
        let (d, l) = self.rel[i];
        let hi = self.largest - u64::from(d);
        Some((hi - u64::from(l), hi))
    }

    /// The ranges as (smallest, largest), inclusive, descending.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..usize::from(self.count)).filter_map(|i| self.range(i))
    }

    /// Real size (RFC 9000 §19.3).
    pub fn wire_len(&self) -> u32 {
        let Some((lo0, hi0)) = self.range(0) else {
            return 0;
        };
        let mut n = 1
            + varint_len(self.largest)
            + varint_len(self.delay)
            + varint_len(u64::from(self.count) - 1)
            + varint_len(hi0 - lo0);
        let mut prev_lo = lo0;
        for (lo, hi) in self.ranges().skip(1) {
            // gap = previous smallest − largest − 2; length = largest − smallest.
            n += varint_len(prev_lo.saturating_sub(hi).saturating_sub(2)) + varint_len(hi - lo);
            prev_lo = lo;
        }
        if let Some(e) = self.ecn {
            n += varint_len(e.ect0) + varint_len(e.ect1) + varint_len(e.ce);
        }
        n
    }
}

impl Frame {
    /// Real size of the frame on the wire.
    pub fn wire_len(&self) -> u32 {
        match *self {
            Frame::Padding(n) => u32::from(n),
            Frame::Ping | Frame::HandshakeDone => 1,
            Frame::Ack(ref a) => a.wire_len(),
            Frame::Crypto { offset, len } => {
                (1 + varint_len(u64::from(offset)) + varint_len(u64::from(len))).saturating_add(len)
            }
            Frame::NewToken(n) => 1 + varint_len(u64::from(n)) + u32::from(n),
            Frame::Stream {
                id,
                offset,
                len,
                length_field,
                ..
            } => stream_frame_len(id, offset, len, length_field),
            Frame::MaxData(v) | Frame::DataBlocked(v) => 1 + varint_len(v),
            Frame::MaxStreamData { id, max: v } | Frame::StreamDataBlocked { id, limit: v } => {
                1 + varint_len(id) + varint_len(v)
            }
            Frame::NewConnectionIds(n) => NEW_CONNECTION_ID_LEN * u32::from(n),
            // type, error code, reason length, reason "done".
            Frame::Close(code) => 1 + varint_len(code) + 1 + 4,
            Frame::AckFrequency {
                seq,
                threshold,
                max_delay_us,
                ..
            } => {
                // type 0xaf is a 2-byte varint; reordering threshold 1 byte.
                2 + varint_len(seq)
                    + varint_len(u64::from(threshold))
                    + varint_len(max_delay_us)
                    + 1
            }
        }
    }

    /// Whether the frame makes its packet ack-eliciting (all but ACK, PADDING and
    /// CONNECTION_CLOSE, RFC 9002 §2).
    pub fn ack_eliciting(&self) -> bool {
        !matches!(self, Frame::Padding(_) | Frame::Ack(_) | Frame::Close(_))
    }
}

/// Size of a STREAM frame: offset field when the offset is not zero, length field unless the
/// frame runs to the end of its packet (quinn omits it then).
#[inline]
pub fn stream_frame_len(id: u64, offset: u64, len: u16, length_field: bool) -> u32 {
    let off = if offset > 0 { varint_len(offset) } else { 0 };
    let lf = if length_field {
        varint_len(u64::from(len))
    } else {
        0
    };
    1 + varint_len(id) + off + lf + u32::from(len)
}

/// quinn's choice of a STREAM frame for `avail` bytes at `offset` in at most `room` bytes:
/// when the data fills the room the frame runs to the end of the packet without a length
/// field; otherwise quinn reserves 8 bytes for the length and sends what fits. Returns
/// (bytes, length field), or `None` when not even the header fits.
#[inline]
pub fn stream_chunk(id: u64, offset: u64, avail: u64, room: u32) -> Option<(u16, bool)> {
    let off = if offset > 0 { varint_len(offset) } else { 0 };
    let fixed = 1 + varint_len(id) + off;
    let mut max_len = room.checked_sub(fixed)?;
    let length_field = avail < u64::from(max_len);
    if length_field {
        max_len = max_len.saturating_sub(8);
    }
    let len = avail.min(u64::from(max_len)).min(u64::from(u16::MAX)) as u16;
    (len > 0 || avail == 0).then_some((len, length_field))
}

/// Datagram-level fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramHeader {
    /// Connection index within the flow.
    pub conn: u32,
    /// Real UDP payload length.
    pub udp_len: u16,
    /// Packets that follow.
    pub packets: u8,
}

/// Packet-level fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHeader {
    /// Type.
    pub kind: PacketKind,
    /// I-bit set.
    pub ibit: bool,
    /// Full packet number.
    pub pn: u64,
    /// Real length including header and tag.
    pub len: u16,
    /// Frames that follow.
    pub frames: u8,
}

/// Why bytes did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Ran out of bytes.
    #[error("truncated model datagram")]
    Truncated,
    /// Wrong magic or version.
    #[error("not a quic-model datagram (bad magic or version)")]
    Magic,
    /// An unknown packet kind or frame type.
    #[error("unknown packet kind or frame type {0:#x}")]
    Unknown(u8),
    /// A field out of range (e.g. too many ACK ranges).
    #[error("field out of range")]
    Range,
}

/// Writes the model's encoding into a byte vector.
pub struct Writer {
    buf: Vec<u8>,
    count_at: usize,
    frames_at: usize,
    len_at: usize,
}

impl Writer {
    /// A datagram of connection `conn`.
    pub fn new(conn: u32) -> Writer {
        let mut buf = Vec::with_capacity(96);
        buf.extend_from_slice(b"QM");
        buf.push(VERSION);
        buf.extend_from_slice(&conn.to_le_bytes());
        buf.extend_from_slice(&[0, 0, 0]);
        Writer {
            buf,
            count_at: DATAGRAM_HEADER - 1,
            frames_at: 0,
            len_at: 0,
        }
    }

    /// Starts a packet.
    pub fn packet(&mut self, kind: PacketKind, ibit: bool, pn: u64) {
        self.buf[self.count_at] = self.buf[self.count_at].wrapping_add(1);
        self.buf.push(kind.code());
        self.buf.push(u8::from(ibit));
        self.buf.extend_from_slice(&pn.to_le_bytes());
        self.len_at = self.buf.len();
        self.buf.extend_from_slice(&[0, 0, 0]);
        self.frames_at = self.buf.len() - 1;
    }

    /// Sets the I-bit of the current packet.
    pub fn set_ibit(&mut self) {
        let at = self.len_at - 9;
        self.buf[at] |= 1;
    }

    /// Closes the current packet with its real length.
    pub fn end_packet(&mut self, len: u32) {
        let l = u16::try_from(len).unwrap_or(u16::MAX).to_le_bytes();
        self.buf[self.len_at] = l[0];
        self.buf[self.len_at + 1] = l[1];
    }

    /// Appends a frame to the current packet.
    pub fn frame(&mut self, f: &Frame) {
        self.buf[self.frames_at] = self.buf[self.frames_at].wrapping_add(1);
        let b = &mut self.buf;
        match *f {
            Frame::Padding(n) => {
                b.push(0x00);
                b.extend_from_slice(&n.to_le_bytes());
            }
            Frame::Ping => b.push(0x01),
            Frame::Ack(ref a) => {
                b.push(if a.ecn.is_some() { 0x03 } else { 0x02 });
                b.extend_from_slice(&a.largest.to_le_bytes());
                b.extend_from_slice(&a.delay.to_le_bytes());
                b.push(a.count);
                for (lo, hi) in a.ranges() {
                    b.extend_from_slice(&lo.to_le_bytes());
                    b.extend_from_slice(&hi.to_le_bytes());
                }
                if let Some(e) = a.ecn {
                    for n in [e.ect0, e.ect1, e.ce] {
                        b.extend_from_slice(&n.to_le_bytes());
                    }
                }
            }
            Frame::Crypto { offset, len } => {
                b.push(0x06);
                b.extend_from_slice(&offset.to_le_bytes());
                b.extend_from_slice(&len.to_le_bytes());
            }
            Frame::NewToken(n) => {
                b.push(0x07);
                b.extend_from_slice(&n.to_le_bytes());
            }
            Frame::Stream {
                id,
                offset,
                len,
                fin,
                length_field,
            } => {
                b.push(0x08);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&offset.to_le_bytes());
                b.extend_from_slice(&len.to_le_bytes());
                b.push(u8::from(fin) | (u8::from(length_field) << 1));
            }
            Frame::MaxData(v) => {
                b.push(0x10);
                b.extend_from_slice(&v.to_le_bytes());
            }
            Frame::MaxStreamData { id, max } => {
                b.push(0x11);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&max.to_le_bytes());
            }
            Frame::DataBlocked(v) => {
                b.push(0x14);
                b.extend_from_slice(&v.to_le_bytes());
            }
            Frame::StreamDataBlocked { id, limit } => {
                b.push(0x15);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&limit.to_le_bytes());
            }
            Frame::NewConnectionIds(n) => {
                b.push(0x18);
                b.push(n);
            }
            Frame::Close(code) => {
                b.push(0x1d);
                b.extend_from_slice(&code.to_le_bytes());
            }
            Frame::HandshakeDone => b.push(0x1e),
            Frame::AckFrequency {
                seq,
                threshold,
                max_delay_us,
                reorder,
            } => {
                b.push(0xaf);
                b.extend_from_slice(&seq.to_le_bytes());
                b.extend_from_slice(&threshold.to_le_bytes());
                b.extend_from_slice(&max_delay_us.to_le_bytes());
                b.push(reorder);
            }
        }
    }

    /// Finishes the datagram with its real UDP payload length.
    pub fn finish(mut self, udp_len: u32) -> Vec<u8> {
        let l = u16::try_from(udp_len).unwrap_or(u16::MAX).to_le_bytes();
        self.buf[DATAGRAM_HEADER - 3] = l[0];
        self.buf[DATAGRAM_HEADER - 2] = l[1];
        self.buf
    }
}

/// Reads the model's encoding without allocating.
#[derive(Clone)]
pub struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Reads the datagram header.
    pub fn new(b: &'a [u8]) -> Result<(Reader<'a>, DatagramHeader), DecodeError> {
        if b.len() < DATAGRAM_HEADER {
            return Err(DecodeError::Truncated);
        }
        if &b[..2] != b"QM" || b[2] != VERSION {
            return Err(DecodeError::Magic);
        }
        let mut r = Reader { b, at: 3 };
        let conn = r.u32()?;
        let udp_len = r.u16()?;
        let packets = r.u8()?;
        Ok((
            r,
            DatagramHeader {
                conn,
                udp_len,
                packets,
            },
        ))
    }

    #[inline]
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self
            .b
            .get(self.at..self.at + N)
            .ok_or(DecodeError::Truncated)?;
        self.at += N;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline]
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take::<1>()?[0])
    }

    #[inline]
    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.take()?))
    }

    #[inline]
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take()?))
    }

    #[inline]
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.take()?))
    }

    /// The next packet header.
    pub fn packet(&mut self) -> Result<PacketHeader, DecodeError> {
        let code = self.u8()?;
        let kind = PacketKind::from_code(code).ok_or(DecodeError::Unknown(code))?;
        let flags = self.u8()?;
        let pn = self.u64()?;
        let len = self.u16()?;
        let frames = self.u8()?;
        Ok(PacketHeader {
            kind,
            ibit: flags & 1 != 0,
            pn,
            len,
            frames,
        })
    }

    /// The next frame.
    #[inline(always)]
    pub fn frame(&mut self) -> Result<Frame, DecodeError> {
        let t = self.u8()?;
        Ok(match t {
            0x00 => Frame::Padding(self.u16()?),
            0x01 => Frame::Ping,
            0x02 | 0x03 => {
                let largest = self.u64()?;
                let delay = self.u64()?;
                let count = self.u8()?;
                if usize::from(count) > MAX_ACK_RANGES || count == 0 {
                    return Err(DecodeError::Range);
                }
                let mut a = Ack::new(largest, delay);
                for i in 0..count {
                    let lo = self.u64()?;
                    let hi = self.u64()?;
                    // Descending, disjoint, lo ≤ hi, the first ending at `largest`: anything
                    // else is malformed.
                    if (i == 0 && hi != largest) || !a.push(lo, hi) {
                        return Err(DecodeError::Range);
                    }
                }
                if t == 0x03 {
                    a.ecn = Some(EcnCounts {
                        ect0: self.u64()?,
                        ect1: self.u64()?,
                        ce: self.u64()?,
                    });
                }
                Frame::Ack(a)
            }
            0x06 => Frame::Crypto {
                offset: self.u32()?,
                len: self.u32()?,
            },
            0x07 => Frame::NewToken(self.u16()?),
            0x08 => {
                let (id, offset, len, flags) = (self.u64()?, self.u64()?, self.u16()?, self.u8()?);
                Frame::Stream {
                    id,
                    offset,
                    len,
                    fin: flags & 1 != 0,
                    length_field: flags & 2 != 0,
                }
            }
            0x10 => Frame::MaxData(self.u64()?),
            0x11 => Frame::MaxStreamData {
                id: self.u64()?,
                max: self.u64()?,
            },
            0x14 => Frame::DataBlocked(self.u64()?),
            0x15 => Frame::StreamDataBlocked {
                id: self.u64()?,
                limit: self.u64()?,
            },
            0x18 => Frame::NewConnectionIds(self.u8()?),
            0x1d => Frame::Close(self.u64()?),
            0x1e => Frame::HandshakeDone,
            0xaf => Frame::AckFrequency {
                seq: self.u64()?,
                threshold: self.u32()?,
                max_delay_us: self.u64()?,
                reorder: self.u8()?,
            },
            other => return Err(DecodeError::Unknown(other)),
        })
    }
}

/// A packet header with its frames.
pub type DecodedPacket = (PacketHeader, Vec<Frame>);

/// Decodes a whole datagram into its header and packets (allocates; for tests, tools and pcap
/// readers — the model itself decodes in place).
pub fn decode(bytes: &[u8]) -> Result<(DatagramHeader, Vec<DecodedPacket>), DecodeError> {
    let (mut r, h) = Reader::new(bytes)?;
    let mut packets = Vec::with_capacity(usize::from(h.packets));
    for _ in 0..h.packets {
        let p = r.packet()?;
        let mut frames = Vec::with_capacity(usize::from(p.frames));
        for _ in 0..p.frames {
            frames.push(r.frame()?);
        }
        packets.push((p, frames));
    }
    Ok((h, packets))
}

/// One line describing a datagram the way a Wireshark user reads QUIC: connection, real UDP
/// length, then each packet (type, number, length, I-bit) with its frames.
pub fn describe(bytes: &[u8]) -> Result<String, DecodeError> {
    let (h, packets) = decode(bytes)?;
    let mut s = format!("quic-model conn {} udp {} B:", h.conn, h.udp_len);
    for (p, frames) in packets {
        let _ = write!(s, " [{} pn={} len={}", p.kind.name(), p.pn, p.len);
        if p.ibit {
            s.push_str(" I");
        }
        for f in frames {
            s.push(' ');
            let _ = match f {
                Frame::Padding(n) => write!(s, "PADDING({n})"),
                Frame::Ping => write!(s, "PING"),
                Frame::Ack(a) => {
                    let _ = write!(s, "ACK(");
                    for (i, (lo, hi)) in a.ranges().enumerate() {
                        let sep = if i > 0 { "," } else { "" };
                        let _ = write!(s, "{sep}{lo}-{hi}");
                    }
                    if let Some(e) = a.ecn {
                        let _ = write!(s, " ect0={} ect1={} ce={}", e.ect0, e.ect1, e.ce);
                    }
                    write!(s, " delay={}us)", a.delay << 3)
                }
                Frame::Crypto { offset, len } => write!(s, "CRYPTO(off={offset} len={len})"),
                Frame::NewToken(n) => write!(s, "NEW_TOKEN({n})"),
                Frame::Stream {
                    id,
                    offset,
                    len,
                    fin,
                    ..
                } => write!(
                    s,
                    "STREAM(id={id} off={offset} len={len}{})",
                    if fin { " fin" } else { "" }
                ),
                Frame::MaxData(v) => write!(s, "MAX_DATA({v})"),
                Frame::MaxStreamData { id, max } => write!(s, "MAX_STREAM_DATA(id={id} {max})"),
                Frame::DataBlocked(v) => write!(s, "DATA_BLOCKED({v})"),
                Frame::StreamDataBlocked { id, limit } => {
                    write!(s, "STREAM_DATA_BLOCKED(id={id} {limit})")
                }
                Frame::NewConnectionIds(n) => write!(s, "NEW_CONNECTION_ID×{n}"),
                Frame::Close(c) => write!(s, "CONNECTION_CLOSE({c})"),
                Frame::HandshakeDone => write!(s, "HANDSHAKE_DONE"),
                Frame::AckFrequency {
                    seq,
                    threshold,
                    max_delay_us,
                    reorder,
                } => write!(
                    s,
                    "ACK_FREQUENCY(seq={seq} threshold={threshold} max_delay={max_delay_us}us \
                     reorder={reorder})"
                ),
            };
        }
        s.push(']');
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_packet_numbers_have_rfc_sizes() {
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
        assert_eq!(varint_len(16_383), 2);
        assert_eq!(varint_len(16_384), 4);
        assert_eq!(varint_len(1 << 30), 8);
        // RFC 9000 A.2's example: largest acked 0xabe8b3, sending 0xac5c02 needs 2 bytes.
        assert_eq!(pn_len(0xac5c02, Some(0xabe8b3)), 2);
        assert_eq!(pn_len(0xace8fe, Some(0xabe8b3)), 3);
        assert_eq!(pn_len(0, None), 1);
        assert_eq!(pn_len(127, None), 1);
        assert_eq!(pn_len(128, None), 2);
    }

    #[test]
    fn frames_round_trip_and_garbage_is_an_error() {
        let mut ack = Ack::new(10, 3);
        assert!(ack.push(8, 10) && ack.push(0, 5));
        assert!(!ack.push(0, 0), "not below the previous range");
        // type, largest, delay, count, first range, gap (8−5−2 = 1), length.
        assert_eq!(ack.wire_len(), 7);
        let mut ack_ecn = ack;
        ack_ecn.ecn = Some(EcnCounts {
            ect0: 100,
            ect1: 0,
            ce: 3,
        });
        // Three more varints: 100 takes two bytes, 0 and 3 one each.
        assert_eq!(ack_ecn.wire_len(), 11);
        let mut w = Writer::new(7);
        w.packet(PacketKind::OneRtt, true, 42);
        let frames = [
            Frame::Ack(ack),
            Frame::Ack(ack_ecn),
            Frame::Stream {
                id: 4,
                offset: 1000,
                len: 1200,
                fin: true,
                length_field: true,
            },
            Frame::MaxData(1 << 20),
            Frame::AckFrequency {
                seq: 0,
                threshold: 9,
                max_delay_us: 25_000,
                reorder: 2,
            },
        ];
        for f in &frames {
            w.frame(f);
        }
        w.end_packet(1300);
        let bytes = w.finish(1300);
        let (h, p) = decode(&bytes).unwrap();
        assert_eq!((h.conn, h.udp_len, h.packets), (7, 1300, 1));
        assert!(p[0].0.ibit);
        assert_eq!(p[0].0.pn, 42);
        assert_eq!(p[0].1, frames);
        assert!(describe(&bytes)
            .unwrap()
            .contains("STREAM(id=4 off=1000 len=1200 fin)"));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "prefix {cut} decoded");
        }
        let mut bad = bytes.clone();
        bad[DATAGRAM_HEADER] = 9;
        assert_eq!(decode(&bad).unwrap_err(), DecodeError::Unknown(9));
    }

    #[test]
    fn stream_frames_fill_the_packet_as_quinns_do() {
        // Plenty of data: the frame runs to the end of the room without a length field.
        for room in 7..1500u32 {
            let (n, lf) = stream_chunk(4, 70_000, 1 << 20, room).unwrap();
            assert!(!lf);
            assert_eq!(stream_frame_len(4, 70_000, n, lf), room);
        }
        // Less than the room: a length field, and 8 bytes reserved for it.
        assert_eq!(stream_chunk(4, 0, 100, 1000), Some((100, true)));
        assert_eq!(stream_chunk(4, 0, 995, 1000), Some((990, true)));
        assert_eq!(stream_chunk(4, 0, 0, 10), Some((0, true)), "FIN only");
        assert_eq!(stream_chunk(4, 70_000, 10, 6), None);
    }
}
