//! Zero-copy views of the packet headers both engines handle: Ethernet II, IPv4, UDP and TCP.
//!
//! Each view wraps a buffer (`&[u8]` to read, `&mut [u8]` to write) and reads or writes its
//! fields in place at the offsets named in its `field` module. `new_checked` validates the
//! lengths every accessor relies on, so a view built that way never indexes out of bounds:
//! the emulator parses frames from the network with it (malformed input is an error, never a
//! panic). `new_unchecked` is for buffers the caller has sized itself, such as the simulator
//! writing headers for a capture.
//!
//! The Internet checksum helpers ([`checksum`]) serve the IPv4 header checksum and the UDP /
//! TCP checksums over the IPv4 pseudo-header.

use std::net::Ipv4Addr;

/// Bytes of an Ethernet II header (no VLAN tag).
pub const ETHERNET_HEADER_LEN: usize = 14;
/// Bytes of an IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// Bytes of a UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// Bytes of a TCP header without options.
pub const TCP_HEADER_LEN: usize = 20;
/// IPv4 (20) + UDP (8) header bytes in front of every UDP payload: what a link carries on top
/// of a QUIC packet or a cross-traffic datagram, and what separates an IP MTU from the largest
/// UDP payload.
pub const IPV4_UDP_OVERHEAD: u32 = (IPV4_HEADER_LEN + UDP_HEADER_LEN) as u32;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// A buffer too short for the header it should hold, or a header whose length fields
/// contradict the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer ends before the header (or the length a header field claims).
    #[error("truncated packet")]
    Truncated,
    /// A field holds a value the header cannot have (wrong IP version, length below the
    /// header's own size).
    #[error("malformed header")]
    Malformed,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn set_be16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn set_be32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Declares a view over a buffer: the struct, `new_unchecked`, `new_checked` (which runs the
/// type's own `check_len`) and `into_inner`, the same for every header.
macro_rules! view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps `buffer` without checks; accessors panic if it is shorter than what they read.
            pub fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wraps `buffer` after `check_len`: every accessor is then in bounds.
            pub fn new_checked(buffer: T) -> Result<Self, WireError> {
                let view = Self { buffer };
                view.check_len()?;
                Ok(view)
            }

            /// The buffer the view wraps.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}

/// Declares big-endian field accessors: `get` reads the field at `at`, `set` writes it.
macro_rules! field {
    (u16, $get:ident, $set:ident, $at:expr, $doc:literal) => {
        #[doc = $doc]
        pub fn $get(&self) -> u16 {
            be16(self.buffer.as_ref(), $at)
        }
        field!(@set u16, set_be16, $set, $at, $doc);
    };
    (u32, $get:ident, $set:ident, $at:expr, $doc:literal) => {
        #[doc = $doc]
        pub fn $get(&self) -> u32 {
            be32(self.buffer.as_ref(), $at)
        }
        field!(@set u32, set_be32, $set, $at, $doc);
    };
    (@set $ty:ty, $write:ident, $set:ident, $at:expr, $doc:literal) => {
        #[doc = concat!("Sets the field: ", $doc)]
        pub fn $set(&mut self, v: $ty)
        where
            T: AsMut<[u8]>,
        {
            $write(self.buffer.as_mut(), $at, v);
        }
    };
}

/// The Internet checksum (RFC 1071) and the IPv4 pseudo-header.
pub mod checksum {
    use super::*;

    /// The 16-bit one's-complement sum of `data` (an odd last byte is padded with zero),
    /// not yet folded or complemented, so sums of several parts can be added.
    pub fn sum(data: &[u8]) -> u32 {
        // u64 so a buffer past 128 KiB (GSO-sized) cannot overflow; end-around carries fold
        // back only when needed, so every result that fitted u32 before is unchanged.
        let mut acc: u64 = 0;
        let mut chunks = data.chunks_exact(2);
        for pair in &mut chunks {
            acc += u64::from(u16::from_be_bytes([pair[0], pair[1]]));
        }
        if let [last] = chunks.remainder() {
            acc += u64::from(*last) << 8;
        }
        while acc > u64::from(u32::MAX) {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc as u32
    }

    /// Folds a sum of 16-bit words to 16 bits and complements it: the value a checksum field
    /// holds (and 0 when a buffer that includes a correct checksum is summed).
    pub fn fold(mut acc: u64) -> u16 {
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        !(acc as u16)
    }

    /// The checksum of `data` alone (e.g. an IPv4 header).
    pub fn data(data: &[u8]) -> u16 {
        fold(u64::from(sum(data)))
    }

    /// The sum of the IPv4 pseudo-header for a transport segment of `len` bytes.
    pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, len: u16) -> u32 {
        sum(&src.octets()) + sum(&dst.octets()) + u32::from(protocol) + u32::from(len)
    }
}

view! {
    /// A view of an Ethernet II frame.
    EthernetFrame
}

/// Byte offsets of the Ethernet II header fields.
pub mod ethernet_field {
    use std::ops::Range;
    /// Destination MAC address.
    pub const DST: Range<usize> = 0..6;
    /// Source MAC address.
    pub const SRC: Range<usize> = 6..12;
    /// EtherType.
    pub const ETHERTYPE: usize = 12;
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Checks that the buffer holds a whole Ethernet header.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < ETHERNET_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Destination MAC address.
    pub fn dst_addr(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&self.buffer.as_ref()[ethernet_field::DST]);
        mac
    }

    /// Source MAC address.
    pub fn src_addr(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&self.buffer.as_ref()[ethernet_field::SRC]);
        mac
    }

    /// EtherType of the payload.
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), ethernet_field::ETHERTYPE)
    }

    /// Everything after the Ethernet header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[ETHERNET_HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Everything after the Ethernet header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ETHERNET_HEADER_LEN..]
    }
}

view! {
    /// A view of an IPv4 packet.
    Ipv4Packet
}

/// Byte offsets of the IPv4 header fields.
pub mod ipv4_field {
    use std::ops::Range;
    /// Version (high nibble) and header length in 32-bit words (low nibble).
    pub const VER_IHL: usize = 0;
    /// DSCP and ECN.
    pub const TOS: usize = 1;
    /// Total length of the packet (header + payload).
    pub const TOTAL_LEN: usize = 2;
    /// Identification.
    pub const IDENT: usize = 4;
    /// Flags (DF = 0x4000) and fragment offset.
    pub const FLAGS_FRAG: usize = 6;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol of the payload.
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: usize = 10;
    /// Source address.
    pub const SRC: Range<usize> = 12..16;
    /// Destination address.
    pub const DST: Range<usize> = 16..20;
}

/// The "don't fragment" flag in the flags/fragment-offset field.
const IPV4_DONT_FRAG: u16 = 0x4000;

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Checks that the buffer holds an IPv4 packet whose header length and total
    /// length fit it (it may be longer, e.g. Ethernet padding: see [`Ipv4Packet::total_len`]).
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < IPV4_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let (header, total) = (self.header_len(), usize::from(self.total_len()));
        if self.version() != 4 || header < IPV4_HEADER_LEN || total < header {
            return Err(WireError::Malformed);
        }
        if total > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// IP version (4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[ipv4_field::VER_IHL] >> 4
    }

    /// Header length in bytes, options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[ipv4_field::VER_IHL] & 0x0f) * 4
    }

    field!(
        u16,
        total_len,
        set_total_len,
        ipv4_field::TOTAL_LEN,
        "Total length in bytes (header + payload): what the link accounts for."
    );

    field!(u16, ident, set_ident, ipv4_field::IDENT, "Identification.");

    /// Whether the "don't fragment" flag is set.
    pub fn dont_frag(&self) -> bool {
        be16(self.buffer.as_ref(), ipv4_field::FLAGS_FRAG) & IPV4_DONT_FRAG != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[ipv4_field::TTL]
    }

    /// Protocol of the payload ([`PROTO_UDP`], [`PROTO_TCP`], …).
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[ipv4_field::PROTOCOL]
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), ipv4_field::CHECKSUM)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[ipv4_field::SRC];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[ipv4_field::DST];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Whether the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::data(&self.buffer.as_ref()[..self.header_len()]) == 0
    }

    /// The payload: from the end of the header to the total length (padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }

    /// The packet itself: header and payload, without what follows the total length.
    pub fn packet(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the version to 4 and the header length to `len` bytes (a multiple of 4).
    pub fn set_version_and_header_len(&mut self, len: usize) {
        self.buffer.as_mut()[ipv4_field::VER_IHL] = 0x40 | ((len / 4) as u8 & 0x0f);
    }

    /// Sets DSCP and ECN.
    pub fn set_tos(&mut self, tos: u8) {
        self.buffer.as_mut()[ipv4_field::TOS] = tos;
    }

    /// Sets the flags to "don't fragment" (or none) with fragment offset 0.
    pub fn set_dont_frag(&mut self, df: bool) {
        let v = if df { IPV4_DONT_FRAG } else { 0 };
        set_be16(self.buffer.as_mut(), ipv4_field::FLAGS_FRAG, v);
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[ipv4_field::TTL] = ttl;
    }

    /// Sets the payload protocol.
    pub fn set_protocol(&mut self, protocol: u8) {
        self.buffer.as_mut()[ipv4_field::PROTOCOL] = protocol;
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[ipv4_field::SRC].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[ipv4_field::DST].copy_from_slice(&addr.octets());
    }

    /// Computes and stores the header checksum (call after every other header field is set).
    pub fn fill_checksum(&mut self) {
        let len = self.header_len();
        set_be16(self.buffer.as_mut(), ipv4_field::CHECKSUM, 0);
        let sum = checksum::data(&self.buffer.as_ref()[..len]);
        set_be16(self.buffer.as_mut(), ipv4_field::CHECKSUM, sum);
    }

    /// The whole buffer from the header on, writable (a bit error may land anywhere).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, end) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[start..end]
    }
}

view! {
    /// A view of a UDP datagram.
    UdpPacket
}

/// Byte offsets of the UDP header fields.
pub mod udp_field {
    /// Source port.
    pub const SRC_PORT: usize = 0;
    /// Destination port.
    pub const DST_PORT: usize = 2;
    /// Length of header + payload.
    pub const LENGTH: usize = 4;
    /// Checksum (0 = none, allowed in IPv4).
    pub const CHECKSUM: usize = 6;
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Checks that the buffer holds the header and the length it claims.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < UDP_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = usize::from(self.len());
        if len < UDP_HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if len > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    field!(
        u16,
        src_port,
        set_src_port,
        udp_field::SRC_PORT,
        "Source port."
    );

    field!(
        u16,
        dst_port,
        set_dst_port,
        udp_field::DST_PORT,
        "Destination port."
    );

    /// Length of header + payload.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), udp_field::LENGTH)
    }

    field!(
        u16,
        checksum,
        set_checksum,
        udp_field::CHECKSUM,
        "Checksum field (0: none)."
    );

    /// The payload (up to the UDP length).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[UDP_HEADER_LEN..usize::from(self.len())]
    }

    /// The checksum this datagram should carry between `src` and `dst` (0 is sent as 0xffff,
    /// since 0 means "no checksum").
    pub fn compute_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> u16 {
        let len = self.len();
        let b = &self.buffer.as_ref()[..usize::from(len)];
        let acc = u64::from(checksum::pseudo_header(src, dst, PROTO_UDP, len))
            + u64::from(checksum::sum(&b[..udp_field::CHECKSUM]))
            + u64::from(checksum::sum(&b[UDP_HEADER_LEN..]));
        match checksum::fold(acc) {
            0 => 0xffff,
            c => c,
        }
    }

    /// Whether the checksum verifies (a datagram without checksum, field 0, passes).
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        self.checksum() == 0 || self.checksum() == self.compute_checksum(src, dst)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the length of header + payload.
    pub fn set_len(&mut self, len: u16) {
        set_be16(self.buffer.as_mut(), udp_field::LENGTH, len);
    }

    /// Computes and stores the checksum over the pseudo-header, header and payload.
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let sum = self.compute_checksum(src, dst);
        self.set_checksum(sum);
    }
}

view! {
    /// A view of a TCP segment.
    TcpPacket
}

/// Byte offsets of the TCP header fields.
pub mod tcp_field {
    /// Source port.
    pub const SRC_PORT: usize = 0;
    /// Destination port.
    pub const DST_PORT: usize = 2;
    /// Sequence number.
    pub const SEQ: usize = 4;
    /// Acknowledgment number.
    pub const ACK: usize = 8;
    /// Data offset (high nibble, in 32-bit words).
    pub const DATA_OFFSET: usize = 12;
    /// Flags (FIN, SYN, RST, PSH, ACK, URG, ECE, CWR).
    pub const FLAGS: usize = 13;
    /// Receive window (scaled).
    pub const WINDOW: usize = 14;
    /// Checksum.
    pub const CHECKSUM: usize = 16;
    /// Urgent pointer.
    pub const URGENT: usize = 18;
    /// First option byte.
    pub const OPTIONS: usize = 20;
}

/// TCP flag bits of the flags byte.
pub mod tcp_flags {
    /// No more data from the sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push.
    pub const PSH: u8 = 0x08;
    /// The acknowledgment number is valid.
    pub const ACK: u8 = 0x10;
    /// ECN-Echo (RFC 3168).
    pub const ECE: u8 = 0x40;
    /// Congestion Window Reduced (RFC 3168).
    pub const CWR: u8 = 0x80;
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Checks that the buffer holds the header and the options it claims.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < TCP_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let header = self.header_len();
        if header < TCP_HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if header > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    field!(
        u16,
        src_port,
        set_src_port,
        tcp_field::SRC_PORT,
        "Source port."
    );

    field!(
        u16,
        dst_port,
        set_dst_port,
        tcp_field::DST_PORT,
        "Destination port."
    );

    field!(u32, seq, set_seq, tcp_field::SEQ, "Sequence number.");

    field!(u32, ack, set_ack, tcp_field::ACK, "Acknowledgment number.");

    /// Header length in bytes, options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[tcp_field::DATA_OFFSET] >> 4) * 4
    }

    /// The flags byte (see [`tcp_flags`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[tcp_field::FLAGS]
    }

    field!(
        u16,
        window,
        set_window,
        tcp_field::WINDOW,
        "Receive window field (as sent, i.e. scaled)."
    );

    field!(
        u16,
        checksum,
        set_checksum,
        tcp_field::CHECKSUM,
        "Checksum field."
    );

    /// The option bytes.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[tcp_field::OPTIONS..self.header_len()]
    }

    /// The data after the header (to the end of the buffer).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Sets the header length in bytes (a multiple of 4), clearing the reserved bits.
    pub fn set_header_len(&mut self, len: usize) {
        self.buffer.as_mut()[tcp_field::DATA_OFFSET] = ((len / 4) as u8) << 4;
    }

    /// Sets the flags byte.
    pub fn set_flags(&mut self, flags: u8) {
        self.buffer.as_mut()[tcp_field::FLAGS] = flags;
    }

    /// Sets the urgent pointer.
    pub fn set_urgent(&mut self, urgent: u16) {
        set_be16(self.buffer.as_mut(), tcp_field::URGENT, urgent);
    }

    /// The option bytes, writable (size them with [`TcpPacket::set_header_len`] first).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[tcp_field::OPTIONS..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 99, 1, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 99, 2, 1);

    /// An IPv4 + UDP packet built through the views.
    fn udp_packet(payload: &[u8]) -> Vec<u8> {
        let total = IPV4_UDP_OVERHEAD as usize + payload.len();
        let mut b = vec![0u8; total];
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        ip.set_version_and_header_len(IPV4_HEADER_LEN);
        ip.set_total_len(total as u16);
        ip.set_ident(7);
        ip.set_dont_frag(true);
        ip.set_ttl(64);
        ip.set_protocol(PROTO_UDP);
        ip.set_src_addr(SRC);
        ip.set_dst_addr(DST);
        ip.fill_checksum();
        let mut udp = UdpPacket::new_unchecked(ip.payload_mut());
        udp.set_src_port(4660);
        udp.set_dst_port(443);
        udp.set_len((UDP_HEADER_LEN + payload.len()) as u16);
        b[IPV4_UDP_OVERHEAD as usize..].copy_from_slice(payload);
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        UdpPacket::new_unchecked(ip.payload_mut()).fill_checksum(SRC, DST);
        b
    }

    #[test]
    fn ipv4_udp_round_trip() {
        let b = udp_packet(b"hello");
        let ip = Ipv4Packet::new_checked(&b[..]).expect("valid");
        assert_eq!(ip.version(), 4);
        assert_eq!(ip.header_len(), 20);
        assert_eq!(ip.total_len(), 33);
        assert_eq!(ip.ident(), 7);
        assert!(ip.dont_frag());
        assert_eq!(ip.ttl(), 64);
        assert_eq!(ip.protocol(), PROTO_UDP);
        assert_eq!((ip.src_addr(), ip.dst_addr()), (SRC, DST));
        assert!(ip.verify_checksum());
        let udp = UdpPacket::new_checked(ip.payload()).expect("valid");
        assert_eq!((udp.src_port(), udp.dst_port(), udp.len()), (4660, 443, 13));
        assert_eq!(udp.payload(), b"hello");
        assert!(udp.verify_checksum(SRC, DST));
    }

    /// Values computed by hand from RFC 1071's example and a well-known IPv4 header.
    #[test]
    fn checksum_known_values() {
        // RFC 1071 section 3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2 (complement 220d).
        assert_eq!(
            checksum::data(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        // The IPv4 header of Wikipedia's example has checksum b861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert!(Ipv4Packet::new_unchecked(&h[..]).verify_checksum());
        let mut ip = Ipv4Packet::new_unchecked(&mut h[..]);
        ip.fill_checksum();
        assert_eq!(ip.checksum(), 0xb861);
        // An odd length pads with a zero byte.
        assert_eq!(checksum::sum(&[0x12]), 0x1200);
    }

    #[test]
    fn corrupted_payload_fails_the_udp_checksum() {
        let mut b = udp_packet(&[7u8; 40]);
        b[40] ^= 1;
        let ip = Ipv4Packet::new_checked(&b[..]).expect("valid");
        let udp = UdpPacket::new_checked(ip.payload()).expect("valid");
        assert!(!udp.verify_checksum(SRC, DST));
        // No checksum (0) always passes.
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        UdpPacket::new_unchecked(ip.payload_mut()).set_checksum(0);
        let ip = Ipv4Packet::new_unchecked(&b[..]);
        assert!(UdpPacket::new_unchecked(ip.payload()).verify_checksum(SRC, DST));
    }

    #[test]
    fn truncated_and_contradictory_input_is_rejected() {
        let b = udp_packet(b"hello");
        for len in 0..b.len() {
            assert!(Ipv4Packet::new_checked(&b[..len]).is_err(), "len {len}");
        }
        // Trailing padding is allowed; the payload stops at the total length.
        let mut padded = b.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(
            Ipv4Packet::new_checked(&padded[..]).map(|p| p.payload().len()),
            Ok(13)
        );
        let mut bad = b.clone();
        bad[0] = 0x65; // version 6
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(WireError::Malformed)
        );
        bad[0] = 0x44; // header length 16
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(WireError::Malformed)
        );
        let udp = &b[20..];
        for len in 0..udp.len() {
            assert!(UdpPacket::new_checked(&udp[..len]).is_err(), "len {len}");
        }
        let mut short = udp.to_vec();
        short[5] = 4; // length 4 < header
        assert_eq!(
            UdpPacket::new_checked(&short[..]).err(),
            Some(WireError::Malformed)
        );
        assert_eq!(
            EthernetFrame::new_checked(&[0u8; 13][..]).err(),
            Some(WireError::Truncated)
        );
        let mut tcp = [0u8; 24];
        tcp[12] = 6 << 4; // 24-byte header in 24 bytes: fine
        assert!(TcpPacket::new_checked(&tcp[..]).is_ok());
        tcp[12] = 7 << 4; // 28 bytes claimed
        assert_eq!(
            TcpPacket::new_checked(&tcp[..]).err(),
            Some(WireError::Truncated)
        );
        tcp[12] = 4 << 4; // 16 < 20
        assert_eq!(
            TcpPacket::new_checked(&tcp[..]).err(),
            Some(WireError::Malformed)
        );
        assert!(TcpPacket::new_checked(&tcp[..19]).is_err());
    }

    #[test]
    fn tcp_round_trip() {
        let mut b = [0u8; 32];
        let mut t = TcpPacket::new_unchecked(&mut b[..]);
        t.set_src_port(40000);
        t.set_dst_port(443);
        t.set_seq(0xdead_beef);
        t.set_ack(42);
        t.set_header_len(28);
        t.set_flags(tcp_flags::SYN | tcp_flags::ACK);
        t.set_window(512);
        t.options_mut()
            .copy_from_slice(&[2, 4, 5, 0xb4, 1, 1, 1, 0]);
        let t = TcpPacket::new_checked(&b[..]).expect("valid");
        assert_eq!((t.src_port(), t.dst_port()), (40000, 443));
        assert_eq!((t.seq(), t.ack()), (0xdead_beef, 42));
        assert_eq!(t.header_len(), 28);
        assert_eq!(t.flags(), 0x12);
        assert_eq!(t.window(), 512);
        assert_eq!(t.options(), &[2, 4, 5, 0xb4, 1, 1, 1, 0]);
        assert_eq!(t.payload().len(), 4);
    }

    #[test]
    fn ethernet_fields() {
        let mut f = [0u8; 20];
        f[..6].copy_from_slice(&[1, 2, 3, 4, 5, 6]);
        f[6..12].copy_from_slice(&[7, 8, 9, 10, 11, 12]);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let e = EthernetFrame::new_checked(&f[..]).expect("valid");
        assert_eq!(e.dst_addr(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(e.src_addr(), [7, 8, 9, 10, 11, 12]);
        assert_eq!(e.ethertype(), ETHERTYPE_IPV4);
        assert_eq!(e.payload().len(), 6);
    }
}
