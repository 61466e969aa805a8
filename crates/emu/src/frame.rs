//! Ethernet/IPv4 frame views: classify a frame, apply a bit error, repair a UDP checksum.
//!
//! Everything here takes untrusted bytes: every access is bounds-checked and a malformed
//! frame yields [`FrameKind::Malformed`], never a panic.

/// Length of an Ethernet II header.
pub const ETH_HEADER: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

/// What the forwarder needs to know about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
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
pub fn dst_mac(frame: &[u8]) -> Option<[u8; 6]> {
    frame.get(..6)?.try_into().ok()
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Classifies a frame.
pub fn classify(frame: &[u8]) -> FrameKind {
    let Some(ethertype) = be16(frame, 12) else {
        return FrameKind::Malformed;
    };
    if ethertype != ETHERTYPE_IPV4 {
        return FrameKind::NonIp;
    }
    let ip = &frame[ETH_HEADER..];
    let Some(&vihl) = ip.first() else {
        return FrameKind::Malformed;
    };
    let ihl = usize::from(vihl & 0x0f) * 4;
    let Some(total) = be16(ip, 2) else {
        return FrameKind::Malformed;
    };
    let total = usize::from(total);
    if vihl >> 4 != 4 || ihl < 20 || total < ihl || total > ip.len() {
        return FrameKind::Malformed;
    }
    FrameKind::Ipv4 {
        ip_bytes: total as u32,
    }
}

/// Where a bit error landed, which decides what the receiving host does with the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitError {
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
pub fn apply_bit_error(frame: &mut [u8], bit: u64) -> BitError {
    let FrameKind::Ipv4 { ip_bytes } = classify(frame) else {
        return BitError::DroppedByChecksum;
    };
    let bits = u64::from(ip_bytes) * 8;
    if bits == 0 {
        return BitError::DroppedByChecksum;
    }
    let bit = bit % bits;
    let byte = ETH_HEADER + (bit / 8) as usize;
    if let Some(b) = frame.get_mut(byte) {
        *b ^= 0x80 >> (bit % 8);
    }
    let ip = &frame[ETH_HEADER..ETH_HEADER + ip_bytes as usize];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let header_bits = (ihl as u64 + 8) * 8;
    if ip[9] != PROTO_UDP || bit < header_bits || ip_bytes as usize <= ihl + 8 {
        return BitError::DroppedByChecksum;
    }
    let _ = PROTO_TCP; // TCP (and anything else) is left to its own checksum, see above.
    repair_udp_checksum(&mut frame[ETH_HEADER..ETH_HEADER + ip_bytes as usize], ihl);
    BitError::UdpPayloadDelivered
}

/// Recomputes the UDP checksum of an IPv4 packet in place (a zero checksum means "none" in
/// IPv4 and stays zero).
fn repair_udp_checksum(ip: &mut [u8], ihl: usize) {
    let Some(udp_len) = be16(ip, ihl + 4) else {
        return;
    };
    let udp_len = usize::from(udp_len);
    if udp_len < 8 || ihl + udp_len > ip.len() || be16(ip, ihl + 6) == Some(0) {
        return;
    }
    ip[ihl + 6] = 0;
    ip[ihl + 7] = 0;
    let mut sum: u32 = 0;
    let mut add = |bytes: &[u8]| {
        for pair in bytes.chunks(2) {
            let hi = u32::from(pair[0]) << 8;
            let lo = pair.get(1).map_or(0, |&b| u32::from(b));
            sum += hi | lo;
        }
    };
    add(&ip[12..20]); // source and destination addresses
    add(&[0, PROTO_UDP]);
    add(&(udp_len as u16).to_be_bytes());
    add(&ip[ihl..ihl + udp_len]);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let mut csum = !(sum as u16);
    if csum == 0 {
        csum = 0xffff;
    }
    ip[ihl + 6..ihl + 8].copy_from_slice(&csum.to_be_bytes());
}

/// Whether the UDP checksum of an IPv4 frame verifies (tests and diagnostics).
pub fn udp_checksum_ok(frame: &[u8]) -> bool {
    let FrameKind::Ipv4 { ip_bytes } = classify(frame) else {
        return false;
    };
    let mut ip = frame[ETH_HEADER..ETH_HEADER + ip_bytes as usize].to_vec();
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip[9] != PROTO_UDP || ip.len() < ihl + 8 {
        return false;
    }
    let before = be16(&ip, ihl + 6);
    repair_udp_checksum(&mut ip, ihl);
    before == be16(&ip, ihl + 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + UDP frame with a valid UDP checksum.
    pub(crate) fn udp_frame(payload: &[u8]) -> Vec<u8> {
        let total = 20 + 8 + payload.len();
        let mut f = vec![0u8; ETH_HEADER];
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
        let ihl = 20;
        repair_udp_checksum(&mut f[ETH_HEADER..], ihl);
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
        let bit = (28 + 50) * 8 + 3; // inside the payload
        assert_eq!(apply_bit_error(&mut g, bit), BitError::UdpPayloadDelivered);
        assert_ne!(f, g, "a bit must change");
        assert!(udp_checksum_ok(&g));
        assert_eq!(g[ETH_HEADER + 78], 7 ^ (0x80 >> 3));
    }

    #[test]
    fn header_bit_error_is_left_for_the_kernel() {
        let mut g = udp_frame(&[7u8; 100]);
        assert_eq!(apply_bit_error(&mut g, 12 * 8), BitError::DroppedByChecksum);
        let mut tcp = udp_frame(&[7u8; 100]);
        tcp[ETH_HEADER + 9] = PROTO_TCP;
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
