//! Ethernet/IPv4 frames in the forwarder: classify a frame, apply a bit error, repair a UDP
//! checksum, all through [`netem::wire`]'s checked views.
//!
//! Everything here takes untrusted bytes: every view is built with `new_checked`, and a
//! malformed frame yields [`FrameKind::Malformed`], never a panic.

use netem::wire::{
    EthernetFrame, Ipv4Packet, UdpPacket, ETHERNET_HEADER_LEN, ETHERTYPE_IPV4, PROTO_UDP,
    UDP_HEADER_LEN,
};

/// What the forwarder needs to know about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// A well-formed IPv4 packet of `ip_bytes` (its total length).
    Ipv4 {
        /// IP total length (what the link accounts for).
        ip_bytes: u32,
    },
    /// A well-formed non-IPv4 frame (ARP, IPv6, ...): passed on without delay or loss.
    NonIp,
    /// Too short, or an IPv4 header that contradicts the frame.
    Malformed,
}

/// Destination MAC address, if the frame has one.
pub(crate) fn dst_mac(frame: &[u8]) -> Option<[u8; 6]> {
    EthernetFrame::new_checked(frame).ok().map(|e| e.dst_addr())
}

/// The IPv4 packet of an Ethernet frame, if it carries a well-formed one.
fn ipv4(frame: &[u8]) -> Option<Ipv4Packet<&[u8]>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != ETHERTYPE_IPV4 {
        return None;
    }
    Ipv4Packet::new_checked(&frame[ETHERNET_HEADER_LEN..]).ok()
}

/// Classifies a frame.
pub(crate) fn classify(frame: &[u8]) -> FrameKind {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return FrameKind::Malformed;
    };
    if eth.ethertype() != ETHERTYPE_IPV4 {
        return FrameKind::NonIp;
    }
    match ipv4(frame) {
        Some(ip) => FrameKind::Ipv4 {
            ip_bytes: u32::from(ip.total_len()),
        },
        None => FrameKind::Malformed,
    }
}

/// Where a bit error landed, which decides what the receiving host does with the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitError {
    /// In a UDP payload: the UDP checksum was repaired so the packet reaches the application
    /// (for QUIC: its AEAD check), as after a bit error behind a link-layer CRC.
    UdpPayloadDelivered,
    /// In an IP or UDP header, or anywhere in a TCP segment (or another protocol): checksums
    /// are left as they are, so the receiving kernel drops the packet.
    DroppedByChecksum,
}

/// Flips bit `bit` (counted from the first bit of the IP header, MSB first within a byte) of
/// an IPv4 frame and repairs the UDP checksum when the bit is in a UDP payload.
///
/// Why not repair TCP too: the simulator models a corrupted TCP segment as dropped by the
/// receiver's checksum (`corrupt_header_drops`), and doing the same here keeps both engines
/// comparable; a real bit error past the link CRC in TCP data would be caught the same way.
pub(crate) fn apply_bit_error(frame: &mut [u8], bit: u64) -> BitError {
    let Some(ip) = ipv4(frame) else {
        return BitError::DroppedByChecksum;
    };
    let (ip_bytes, header_len, protocol) =
        (usize::from(ip.total_len()), ip.header_len(), ip.protocol());
    let bits = ip_bytes as u64 * 8;
    if bits == 0 {
        return BitError::DroppedByChecksum;
    }
    let bit = bit % bits;
    let packet = &mut frame[ETHERNET_HEADER_LEN..ETHERNET_HEADER_LEN + ip_bytes];
    packet[(bit / 8) as usize] ^= 0x80 >> (bit % 8);
    // Decided on the header as it was: a flipped header bit is the kernel's to reject.
    let header_bits = (header_len + UDP_HEADER_LEN) as u64 * 8;
    if protocol != PROTO_UDP || bit < header_bits || ip_bytes <= header_len + UDP_HEADER_LEN {
        return BitError::DroppedByChecksum;
    }
    repair_udp_checksum(packet);
    BitError::UdpPayloadDelivered
}

/// Recomputes the UDP checksum of an IPv4 packet in place (a zero checksum means "none" in
/// IPv4 and stays zero; a datagram that does not fit the packet is left alone).
fn repair_udp_checksum(packet: &mut [u8]) {
    let Ok(mut ip) = Ipv4Packet::new_checked(packet) else {
        return;
    };
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let Ok(mut udp) = UdpPacket::new_checked(ip.payload_mut()) else {
        return;
    };
    if udp.checksum() != 0 {
        udp.fill_checksum(src, dst);
    }
}

/// Whether the UDP checksum of an IPv4 frame verifies (what the receiving kernel would check).
#[cfg(test)]
pub(crate) fn udp_checksum_ok(frame: &[u8]) -> bool {
    let Some(ip) = ipv4(frame) else {
        return false;
    };
    if ip.protocol() != PROTO_UDP {
        return false;
    }
    UdpPacket::new_checked(ip.payload())
        .is_ok_and(|udp| udp.verify_checksum(ip.src_addr(), ip.dst_addr()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + UDP frame with a valid UDP checksum.
    pub(crate) fn udp_frame(payload: &[u8]) -> Vec<u8> {
        let total = netem::wire::IPV4_UDP_OVERHEAD as usize + payload.len();
        let mut f = vec![0u8; ETHERNET_HEADER_LEN];
        f[12] = 0x08;
        f.extend_from_slice(&[
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            0,
            0x40,
            0,
            64,
            17,
        ]);
        f.extend_from_slice(&[0, 0, 10, 99, 1, 1, 10, 99, 2, 1]);
        let ulen = 8 + payload.len();
        f.extend_from_slice(&[
            0x12,
            0x34,
            0x01,
            0xbb,
            (ulen >> 8) as u8,
            ulen as u8,
            0xff,
            0xff,
        ]);
        f.extend_from_slice(payload);
        repair_udp_checksum(&mut f[ETHERNET_HEADER_LEN..]);
        f
    }

    #[test]
    fn classify_well_formed_and_short() {
        let f = udp_frame(b"hello");
        assert_eq!(classify(&f), FrameKind::Ipv4 { ip_bytes: 33 });
        assert_eq!(classify(&f[..20]), FrameKind::Malformed);
        assert_eq!(classify(&[0u8; 13]), FrameKind::Malformed);
        let mut arp = vec![0u8; 42];
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert_eq!(classify(&arp), FrameKind::NonIp);
    }

    #[test]
    fn payload_bit_error_keeps_checksum_valid() {
        let f = udp_frame(&[7u8; 100]);
        assert!(udp_checksum_ok(&f));
        let mut g = f.clone();
        let bit = (u64::from(netem::wire::IPV4_UDP_OVERHEAD) + 50) * 8 + 3; // inside the payload
        assert_eq!(apply_bit_error(&mut g, bit), BitError::UdpPayloadDelivered);
        assert_ne!(f, g, "a bit must change");
        assert!(udp_checksum_ok(&g));
        assert_eq!(g[ETHERNET_HEADER_LEN + 78], 7 ^ (0x80 >> 3));
    }

    #[test]
    fn header_bit_error_is_left_for_the_kernel() {
        let mut g = udp_frame(&[7u8; 100]);
        assert_eq!(apply_bit_error(&mut g, 12 * 8), BitError::DroppedByChecksum);
        let mut tcp = udp_frame(&[7u8; 100]);
        tcp[ETHERNET_HEADER_LEN + 9] = netem::wire::PROTO_TCP;
        assert_eq!(
            apply_bit_error(&mut tcp, 60 * 8),
            BitError::DroppedByChecksum
        );
    }

    /// Fuzz-style: random bytes, random lengths, random bit indexes never panic.
    #[test]
    fn random_frames_never_panic() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let template = udp_frame(&[1u8; 64]);
        for i in 0..50_000 {
            let len = (next() % 200) as usize;
            let mut f: Vec<u8> = if i % 2 == 0 {
                (0..len).map(|_| next() as u8).collect()
            } else {
                // A valid frame with a few random bytes overwritten and a random truncation.
                let mut t = template.clone();
                for _ in 0..3 {
                    let at = (next() as usize) % t.len();
                    t[at] = next() as u8;
                }
                t.truncate(len.min(t.len()));
                t
            };
            let _ = classify(&f);
            let _ = dst_mac(&f);
            let _ = apply_bit_error(&mut f, next());
            let _ = udp_checksum_ok(&f);
        }
    }
}
