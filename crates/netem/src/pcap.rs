//! Minimal pcap writer (nanosecond timestamps) shared by the simulator (raw IPv4 packets at
//! virtual times) and the emulator (Ethernet frames at wall-clock times).

use std::io::{self, Write};
use std::time::Duration;

/// pcap magic for nanosecond-resolution timestamps.
const MAGIC_NS: u32 = 0xa1b2_3c4d;

/// What each captured packet starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// LINKTYPE_RAW: the IP header (the simulator synthesises IP packets).
    RawIp,
    /// LINKTYPE_ETHERNET: an Ethernet header (the emulator captures whole frames).
    Ethernet,
}

impl LinkType {
    fn code(self) -> u32 {
        match self {
            LinkType::RawIp => 101,
            LinkType::Ethernet => 1,
        }
    }
}

/// Streams packets into a pcap file.
pub struct PcapWriter<W: Write> {
    out: W,
    epoch_secs: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header; [`PcapWriter::write`] timestamps are `epoch_secs` + virtual time.
    pub fn new(out: W, epoch_secs: u64, snaplen: u32) -> io::Result<Self> {
        Self::with_link_type(out, LinkType::RawIp, epoch_secs, snaplen)
    }

    /// Writes the file header for packets of `link` type.
    pub fn with_link_type(
        mut out: W,
        link: LinkType,
        epoch_secs: u64,
        snaplen: u32,
    ) -> io::Result<Self> {
        out.write_all(&MAGIC_NS.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&link.code().to_le_bytes())?;
        Ok(PcapWriter { out, epoch_secs })
    }

    /// Appends one packet captured at virtual time `t`.
    pub fn write(&mut self, t: Duration, packet: &[u8]) -> io::Result<()> {
        self.write_record(
            (self.epoch_secs + t.as_secs()) as u32,
            t.subsec_nanos(),
            packet,
        )
    }

    /// Appends one packet captured at `unix_ns` nanoseconds since the Unix epoch.
    pub fn write_unix_ns(&mut self, unix_ns: u64, packet: &[u8]) -> io::Result<()> {
        let secs = (unix_ns / 1_000_000_000) as u32;
        self.write_record(secs, (unix_ns % 1_000_000_000) as u32, packet)
    }

    fn write_record(&mut self, secs: u32, nanos: u32, packet: &[u8]) -> io::Result<()> {
        let len = packet.len() as u32;
        self.out.write_all(&secs.to_le_bytes())?;
        self.out.write_all(&nanos.to_le_bytes())?;
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

    fn u32_at(b: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
    }

    #[test]
    fn header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new(), 100, 65535).unwrap();
        w.write(Duration::from_millis(1500), &[1, 2, 3]).unwrap();
        let b = w.finish().unwrap();
        assert_eq!(b.len(), 24 + 16 + 3);
        assert_eq!(&b[..4], &MAGIC_NS.to_le_bytes());
        assert_eq!(u32_at(&b, 20), 101);
        assert_eq!(u32_at(&b, 24), 101);
        assert_eq!(u32_at(&b, 28), 500_000_000);
    }

    #[test]
    fn ethernet_frames_at_wall_clock_times() {
        let mut w = PcapWriter::with_link_type(Vec::new(), LinkType::Ethernet, 0, 65535).unwrap();
        w.write_unix_ns(1_500_000_000, &[1, 2, 3]).unwrap();
        let b = w.finish().unwrap();
        assert_eq!(u32_at(&b, 20), 1);
        assert_eq!(u32_at(&b, 24), 1);
        assert_eq!(u32_at(&b, 28), 500_000_000);
        assert_eq!(u32_at(&b, 32), 3);
    }
}
