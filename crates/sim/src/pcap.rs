//! Minimal pcap writer (nanosecond timestamps, raw IPv4 link type) for bottleneck captures.

use std::io::{self, Write};
use std::time::Duration;

/// pcap magic for nanosecond-resolution timestamps.
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_RAW: packets start with the IP header.
const LINKTYPE_RAW: u32 = 101;

/// Streams packets into a pcap file.
pub struct PcapWriter<W: Write> {
    out: W,
    epoch_secs: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header; timestamps are `epoch_secs` + virtual time.
    pub fn new(mut out: W, epoch_secs: u64, snaplen: u32) -> io::Result<Self> {
        out.write_all(&MAGIC_NS.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(PcapWriter { out, epoch_secs })
    }

    /// Appends one packet captured at virtual time `t`.
    pub fn write(&mut self, t: Duration, packet: &[u8]) -> io::Result<()> {
        let secs = (self.epoch_secs + t.as_secs()) as u32;
        let len = packet.len() as u32;
        self.out.write_all(&secs.to_le_bytes())?;
        self.out.write_all(&t.subsec_nanos().to_le_bytes())?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(packet)
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
        let mut w = PcapWriter::new(Vec::new(), 100, 65535).unwrap();
        w.write(Duration::from_millis(1500), &[1, 2, 3]).unwrap();
        let b = w.finish().unwrap();
        assert_eq!(b.len(), 24 + 16 + 3);
        assert_eq!(&b[..4], &MAGIC_NS.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 101);
        assert_eq!(
            u32::from_le_bytes(b[28..32].try_into().unwrap()),
            500_000_000
        );
    }
}
