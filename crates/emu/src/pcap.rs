//! pcap writer for Ethernet frames with nanosecond wall-clock timestamps.
//!
//! The simulator's writer (`sim::pcap`) stores raw IP packets with virtual timestamps; the
//! emulator captures whole frames at real times, so it has its own few lines rather than a
//! link-type parameter threaded through the simulator.

use std::io::{self, Write};

const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;

/// Streams Ethernet frames into a pcap file.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut out: W, snaplen: u32) -> io::Result<Self> {
        out.write_all(&MAGIC_NS.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&LINKTYPE_ETHERNET.to_le_bytes())?;
        Ok(PcapWriter { out })
    }

    /// Appends one frame seen at `realtime_ns` (nanoseconds since the Unix epoch).
    pub fn write(&mut self, realtime_ns: u64, frame: &[u8]) -> io::Result<()> {
        let secs = (realtime_ns / 1_000_000_000) as u32;
        let nanos = (realtime_ns % 1_000_000_000) as u32;
        let len = frame.len() as u32;
        self.out.write_all(&secs.to_le_bytes())?;
        self.out.write_all(&nanos.to_le_bytes())?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(frame)
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new(), 65535).expect("vec");
        w.write(1_500_000_000, &[1, 2, 3]).expect("vec");
        let b = w.finish().expect("vec");
        assert_eq!(b.len(), 24 + 16 + 3);
        assert_eq!(u32::from_le_bytes([b[20], b[21], b[22], b[23]]), 1);
        assert_eq!(u32::from_le_bytes([b[24], b[25], b[26], b[27]]), 1);
        assert_eq!(
            u32::from_le_bytes([b[28], b[29], b[30], b[31]]),
            500_000_000
        );
    }
}
