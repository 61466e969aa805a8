//! The TCP model's segment header: a compact binary encoding of the fields that matter to the
//! model, plus the sizes the same segment would have on a real wire.
//!
//! The data itself is synthetic, so a segment carries only its length. Sequence numbers are
//! absolute 64-bit values starting at 0 (the SYN), which removes wrap-around from the model
//! without changing any behaviour it studies. Windows travel as bytes (already scaled).

use std::time::Duration;
/// SYN flag.
pub const SYN: u8 = 0x01;
/// ACK flag.
pub const ACK: u8 = 0x02;
/// FIN flag.
pub const FIN: u8 = 0x04;
/// RST flag.
pub const RST: u8 = 0x08;
/// SACK-permitted option (on SYNs).
pub const SACK_OK: u8 = 0x20;
/// ECN-Echo (RFC 3168): on a SYN with CWR, the client asks for ECN; on the SYN-ACK, the server
/// agrees; afterwards, the receiver saw a CE mark and has not yet seen CWR.
pub const ECE: u8 = 0x40;
/// Congestion Window Reduced (RFC 3168): on a SYN with ECE, the ECN request; afterwards, the
/// sender reduced its window in answer to ECE.
pub const CWR: u8 = 0x80;
/// Internal: the timestamps option is present.
const TS: u8 = 0x10;
// Every bit of the flags byte is one of the flags above, so any flags byte decodes.
/// First byte of every encoded segment, so stray datagrams are rejected early.
const MAGIC: u8 = 0xC7;
/// Fixed part of the encoding.
const FIXED: usize = 36;
/// Most SACK blocks an option space of 40 bytes holds without timestamps.
pub const MAX_SACK_BLOCKS: usize = 4;
/// Largest data length accepted (jumbo frames are 9000 bytes; anything far above is garbage).
const MAX_DATA: u32 = 1 << 20;
/// Sequence numbers above this are garbage (the model never gets near it).
pub const SEQ_LIMIT: u64 = 1 << 62;
/// IPv4 + TCP headers without options.
const BASE_HEADERS: u32 = 40;

/// One decoded segment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Segment {
    /// Connection number within the flow (stands in for the port pair).
    pub conn: u32,
    /// SYN / ACK / FIN / RST / ECE / CWR bits (and SACK-permitted on SYNs).
    pub flags: u8,
    /// Sequence number of the first byte (or of the SYN / FIN).
    pub seq: u64,
    /// Cumulative acknowledgement (valid with ACK).
    pub ack: u64,
    /// Receive window in bytes (unscaled on SYNs, already scaled otherwise).
    pub window: u64,
    /// Data bytes carried.
    pub len: u32,
    /// Timestamps option: (TSval, TSecr) in ticks of [`ts_clock`] (milliseconds).
    pub ts: Option<(u64, u64)>,
    /// SACK blocks `[start, end)`; the first `nsack` are valid.
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    /// Number of valid SACK blocks.
    pub nsack: u8,
}

/// The timestamps option's clock (RFC 7323 §5.4): Linux ticks it in milliseconds
/// (`TCP_TS_HZ` = 1000) unless a route asks for microseconds, so a receiver's RTT samples come
/// in whole milliseconds, and which whole number a round trip gives depends on where the
/// host's millisecond boundaries fall (`phase`, below one tick). The value is one above the
/// ticks elapsed, so no real value is the zero that means "nothing to echo".
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TsClock {
    phase: Duration,
}

impl TsClock {
    /// A clock whose tick boundaries sit `phase` (taken modulo one tick) before the
    /// simulation's whole milliseconds.
    pub(crate) fn new(phase: Duration) -> Self {
        TsClock {
            phase: Duration::from_nanos(u64::try_from(phase.as_nanos() % 1_000_000).unwrap_or(0)),
        }
    }

    /// The TSval sent at `now`.
    pub(crate) fn val(self, now: Duration) -> u64 {
        u64::try_from((now + self.phase).as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// Time since this clock sent `ecr`, in whole ticks as Linux's `tcp_rtt_tsopt_us`
    /// measures it; `None` for no echo or a value from the future.
    pub(crate) fn elapsed(self, ecr: u64, now: Duration) -> Option<Duration> {
        let ticks = self.val(now).checked_sub(ecr).filter(|_| ecr > 0)?;
        Some(Duration::from_millis(ticks))
    }
}

/// Why a byte string is not a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Too short, too long, or not our magic byte.
    #[error("not a TCP model segment")]
    Framing,
    /// A field holds an impossible value.
    #[error("invalid segment field")]
    Field,
}

impl Segment {
    /// True if every bit of `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag == flag
    }

    /// Sequence space the segment occupies (data, plus one for SYN and for FIN).
    pub fn seq_len(&self) -> u64 {
        u64::from(self.len) + u64::from(self.has(SYN)) + u64::from(self.has(FIN))
    }

    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..usize::from(self.nsack).min(MAX_SACK_BLOCKS)]
    }

    /// Length of the encoding.
    pub fn encoded_len(&self) -> usize {
        FIXED + if self.ts.is_some() { 16 } else { 0 } + 16 * usize::from(self.nsack)
    }

    /// Appends the encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let flags = (self.flags & !TS) | if self.ts.is_some() { TS } else { 0 };
        out.push(MAGIC);
        out.push(flags);
        out.push(self.nsack);
        out.push(0);
        out.extend_from_slice(&self.conn.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.ack.to_le_bytes());
        out.extend_from_slice(&self.window.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        if let Some((val, ecr)) = self.ts {
            out.extend_from_slice(&val.to_le_bytes());
            out.extend_from_slice(&ecr.to_le_bytes());
        }
        for &(l, r) in self.sack_blocks() {
            out.extend_from_slice(&l.to_le_bytes());
            out.extend_from_slice(&r.to_le_bytes());
        }
    }

    /// Parses one segment; anything malformed is an error, never a panic.
    pub fn decode(b: &[u8]) -> Result<Segment, DecodeError> {
        if b.len() < FIXED || b[0] != MAGIC || b[3] != 0 {
            return Err(DecodeError::Framing);
        }
        let flags = b[1];
        let nsack = b[2];
        let has_ts = flags & TS != 0;
        if usize::from(nsack) > max_sack_blocks(has_ts) {
            return Err(DecodeError::Field);
        }
        let want = FIXED + if has_ts { 16 } else { 0 } + 16 * usize::from(nsack);
        if b.len() != want {
            return Err(DecodeError::Framing);
        }
        let mut r = Reader { b, pos: 4 };
        let mut s = Segment {
            conn: r.u32(),
            flags: flags & !TS,
            seq: r.u64(),
            ack: r.u64(),
            window: r.u64(),
            len: r.u32(),
            ts: None,
            sack: [(0, 0); MAX_SACK_BLOCKS],
            nsack,
        };
        if has_ts {
            s.ts = Some((r.u64(), r.u64()));
        }
        for i in 0..usize::from(nsack) {
            let (l, rr) = (r.u64(), r.u64());
            if l >= rr || rr > SEQ_LIMIT {
                return Err(DecodeError::Field);
            }
            s.sack[i] = (l, rr);
        }
        let bad = s.len > MAX_DATA
            || s.seq > SEQ_LIMIT
            || s.ack > SEQ_LIMIT
            || s.window > SEQ_LIMIT
            || (s.has(SYN) && (s.has(FIN) || s.has(RST)));
        if bad {
            return Err(DecodeError::Field);
        }
        Ok(s)
    }

    /// IPv4 + TCP header bytes on a real wire, options included (Linux's layouts: timestamps
    /// take 12 bytes with padding, SACK 4 + 8 per block, a SYN carries MSS, window scale,
    /// SACK-permitted and timestamps).
    pub fn header_wire_len(&self) -> u32 {
        let ts = self.ts.is_some();
        let opts = if self.has(SYN) {
            // MSS (4) + NOP/window scale (4) + SACK-permitted and timestamps (12) or NOP-padded
            // SACK-permitted alone (4).
            8 + if ts {
                12
            } else if self.has(SACK_OK) {
                4
            } else {
                0
            }
        } else {
            let sack = if self.nsack > 0 {
                4 + 8 * u32::from(self.nsack)
            } else {
                0
            };
            (if ts { 12 } else { 0 }) + sack
        };
        BASE_HEADERS + opts
    }
}

/// SACK blocks that fit in the option space next to (or without) timestamps.
pub fn max_sack_blocks(timestamps: bool) -> usize {
    if timestamps {
        3
    } else {
        MAX_SACK_BLOCKS
    }
}

/// Little-endian reader over a slice whose length was checked up front.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.b.get(self.pos..self.pos + N) {
            out.copy_from_slice(src);
        }
        self.pos += N;
        out
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_tick_in_milliseconds_and_round_trips_come_in_whole_ticks() {
        let us = Duration::from_micros;
        let clock = TsClock::new(Duration::ZERO);
        assert_eq!(
            clock.val(Duration::ZERO),
            1,
            "never the zero that means no echo"
        );
        assert_eq!(clock.val(us(999)), 1);
        assert_eq!(clock.val(us(1000)), 2);
        // A 43.2 ms round trip is 43 or 44 ticks, depending on where the ticks fall.
        let sent = us(10_100);
        let echo = clock.val(sent);
        assert_eq!(
            clock.elapsed(echo, sent + us(43_200)),
            Some(Duration::from_millis(43))
        );
        let shifted = TsClock::new(us(750));
        let echo = shifted.val(sent);
        assert_eq!(
            shifted.elapsed(echo, sent + us(43_200)),
            Some(Duration::from_millis(44))
        );
        // A phase is taken modulo one tick.
        assert_eq!(TsClock::new(us(1750)).val(sent), shifted.val(sent));
        // No echo, or one from the future, gives no sample; the same tick gives zero.
        assert_eq!(clock.elapsed(0, sent), None);
        assert_eq!(clock.elapsed(clock.val(sent) + 1, sent), None);
        assert_eq!(
            clock.elapsed(clock.val(sent), sent + us(100)),
            Some(Duration::ZERO)
        );
    }

    fn sample() -> Segment {
        let mut s = Segment {
            conn: 3,
            flags: ACK | FIN,
            seq: 1001,
            ack: 77,
            window: 65535 << 7,
            len: 1448,
            ts: Some((123, 45)),
            ..Default::default()
        };
        s.sack[0] = (5000, 6448);
        s.sack[1] = (9000, 10448);
        s.nsack = 2;
        s
    }

    #[test]
    fn round_trip() {
        let s = sample();
        let mut v = Vec::new();
        s.encode(&mut v);
        assert_eq!(v.len(), s.encoded_len());
        assert_eq!(Segment::decode(&v), Ok(s));
        assert_eq!(s.seq_len(), 1449);
        // 40 + 12 (timestamps) + 4 + 16 (two SACK blocks)
        assert_eq!(s.header_wire_len(), 72);
    }

    #[test]
    fn garbage_and_truncation_are_errors() {
        let mut v = Vec::new();
        sample().encode(&mut v);
        for n in 0..v.len() {
            assert!(Segment::decode(&v[..n]).is_err(), "truncated to {n}");
        }
        let mut bad = v.clone();
        bad[2] = 4; // four SACK blocks do not fit next to timestamps
        assert!(Segment::decode(&bad).is_err());
        // ECN's flags are ordinary flags.
        let mut ecn = v.clone();
        ecn[1] |= ECE | CWR;
        let s = Segment::decode(&ecn).expect("ECE and CWR decode");
        assert!(s.has(ECE | CWR) && s.has(ACK | FIN));
        // An inverted SACK block.
        let mut s = sample();
        s.sack[0] = (7000, 6000);
        let mut w = Vec::new();
        s.encode(&mut w);
        assert_eq!(Segment::decode(&w), Err(DecodeError::Field));
    }

    #[test]
    fn syn_header_sizes_follow_linux() {
        let syn = Segment {
            flags: SYN,
            ts: Some((1, 0)),
            ..Default::default()
        };
        assert_eq!(syn.header_wire_len(), 60);
        let syn = Segment {
            flags: SYN | SACK_OK,
            ..Default::default()
        };
        assert_eq!(syn.header_wire_len(), 52);
        let syn = Segment {
            flags: SYN,
            ..Default::default()
        };
        assert_eq!(syn.header_wire_len(), 48);
        let plain = Segment {
            flags: ACK,
            ..Default::default()
        };
        assert_eq!(plain.header_wire_len(), 40);
    }
}
