//! Ethernet/IPv4 frames in the forwarder: classify a frame, apply a bit error, repair a UDP
//! checksum, all through [`netem::wire`]'s checked views.
//!
//! Everything here takes untrusted bytes: every view is built with `new_checked`, and a
//! malformed frame yields [`FrameKind::Malformed`], never a panic.

use netem::qdisc::flow_hash;
use netem::wire::{
    EthernetFrame, Ipv4Packet, UdpPacket, ETHERNET_HEADER_LEN, ETHERTYPE_IPV4, PROTO_TCP,
    PROTO_UDP, UDP_HEADER_LEN,
};
use netem::{Ecn, PacketMeta};

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

/// What the link's queue discipline needs of an IPv4 frame of `ip_bytes`: its ECN codepoint
/// (the low two bits of the TOS byte) and its flow, the hash of (source, destination,
/// protocol, ports) — ports for TCP and UDP only, and only in a first fragment; a frame that is
/// not well-formed IPv4 is a Not-ECT packet of flow 0.
pub(crate) fn packet_meta(frame: &[u8], ip_bytes: u32) -> PacketMeta {
    let Some(ip) = ipv4(frame) else {
        return PacketMeta::plain(ip_bytes);
    };
    let header = ip.packet();
    let ecn = Ecn::from_bits(header[1]);
    let first_fragment = u16::from_be_bytes([header[6], header[7]]) & 0x1fff == 0;
    let protocol = ip.protocol();
    let payload = ip.payload();
    let (src_port, dst_port) = match payload {
        [a, b, c, d, ..] if first_fragment && (protocol == PROTO_TCP || protocol == PROTO_UDP) => {
            (u16::from_be_bytes([*a, *b]), u16::from_be_bytes([*c, *d]))
        }
        _ => (0, 0),
    };
    PacketMeta {
        ip_bytes,
        flow: flow_hash(ip.src_addr(), ip.dst_addr(), protocol, src_port, dst_port),
        ecn,
    }
}

/// Sets the ECN field of an IPv4 frame to CE (a queue discipline marked it) and updates the
/// header checksum incrementally (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), over the 16-bit
/// word holding the TOS byte), leaving DSCP and everything else as it was. Returns whether
/// the frame changed: a Not-ECT packet is never marked (the discipline drops those), a CE one
/// already is, and a frame that is not well-formed IPv4 is left alone.
pub(crate) fn set_ce(frame: &mut [u8]) -> bool {
    if ipv4(frame).is_none() {
        return false;
    }
    let at = ETHERNET_HEADER_LEN;
    let Some(h) = frame.get_mut(at..at + netem::wire::IPV4_HEADER_LEN) else {
        return false;
    };
    let ecn = Ecn::from_bits(h[1]);
    if !ecn.can_mark() || ecn == Ecn::Ce {
        return false;
    }
    let old = u16::from_be_bytes([h[0], h[1]]);
    h[1] |= Ecn::Ce.bits();
    let new = u16::from_be_bytes([h[0], h[1]]);
    let hc = u16::from_be_bytes([h[10], h[11]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    true
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

    /// The frame of `udp_frame` with TOS `tos` and a valid IPv4 header checksum.
    fn with_tos(payload: &[u8], tos: u8) -> Vec<u8> {
        let mut f = udp_frame(payload);
        let mut ip = Ipv4Packet::new_checked(&mut f[ETHERNET_HEADER_LEN..]).expect("ipv4");
        ip.set_tos(tos);
        ip.fill_checksum();
        f
    }

    fn ip_checksum_ok(f: &[u8]) -> bool {
        ipv4(f).is_some_and(|ip| ip.verify_checksum())
    }

    #[test]
    fn ce_rewrite_keeps_dscp_and_a_valid_checksum() {
        // Every DSCP with each ECT codepoint: CE set, DSCP kept, the incremental checksum equal
        // to a full recomputation, the payload (and its UDP checksum) untouched.
        for dscp in 0..64u8 {
            for ect in [0b01u8, 0b10] {
                let f = with_tos(&[dscp; 40], (dscp << 2) | ect);
                assert!(ip_checksum_ok(&f));
                let mut g = f.clone();
                assert!(set_ce(&mut g), "dscp {dscp} ect {ect}");
                let tos = g[ETHERNET_HEADER_LEN + 1];
                assert_eq!(tos, (dscp << 2) | 0b11);
                assert!(ip_checksum_ok(&g), "dscp {dscp}: checksum");
                let mut full = g.clone();
                Ipv4Packet::new_checked(&mut full[ETHERNET_HEADER_LEN..])
                    .expect("ipv4")
                    .fill_checksum();
                assert_eq!(g, full, "incremental = recomputed (dscp {dscp})");
                assert_eq!(f[..ETHERNET_HEADER_LEN + 1], g[..ETHERNET_HEADER_LEN + 1]);
                assert_eq!(f[ETHERNET_HEADER_LEN + 12..], g[ETHERNET_HEADER_LEN + 12..]);
                assert!(udp_checksum_ok(&g));
                assert_eq!(packet_meta(&g, 68).ecn, Ecn::Ce);
            }
        }
        // Not-ECT and CE frames are left as they are.
        for tos in [0u8, 0b1011_1000, 0b11, 0b1011_1011] {
            let f = with_tos(&[1; 10], tos);
            let mut g = f.clone();
            assert!(!set_ce(&mut g));
            assert_eq!(f, g);
        }
        // A hand-computed case (RFC 1624's arithmetic): header words of `udp_frame` with TOS
        // 0x02 (ECT(0)); setting CE adds 1 to word 0, so the checksum drops by 1.
        let f = with_tos(&[], 0x02);
        let before = u16::from_be_bytes([f[24], f[25]]);
        let mut g = f.clone();
        assert!(set_ce(&mut g));
        assert_eq!(u16::from_be_bytes([g[24], g[25]]), before - 1);
    }

    #[test]
    fn meta_reads_ecn_and_the_5_tuple() {
        let f = with_tos(&[0; 8], 0b10);
        let m = packet_meta(&f, 36);
        assert_eq!((m.ip_bytes, m.ecn), (36, Ecn::Ect0));
        let ip = ipv4(&f).expect("ipv4");
        assert_eq!(
            m.flow,
            flow_hash(ip.src_addr(), ip.dst_addr(), PROTO_UDP, 0x1234, 443)
        );
        // Another source port is another flow; a non-first fragment has no ports.
        let mut g = f.clone();
        g[ETHERNET_HEADER_LEN + 21] ^= 1;
        assert_ne!(packet_meta(&g, 36).flow, m.flow);
        let mut frag = f.clone();
        frag[ETHERNET_HEADER_LEN + 7] = 1;
        assert_eq!(
            packet_meta(&frag, 36).flow,
            flow_hash(ip.src_addr(), ip.dst_addr(), PROTO_UDP, 0, 0)
        );
        assert_eq!(packet_meta(&[0u8; 10], 5), PacketMeta::plain(5));
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
            let _ = packet_meta(&f, len as u32);
            let _ = set_ce(&mut f);
            let _ = apply_bit_error(&mut f, next());
            let _ = udp_checksum_ok(&f);
        }
    }
}
