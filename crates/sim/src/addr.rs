//! Addresses of simulated hosts and the IPv4/UDP headers they would carry on a wire.
//!
//! The simulator moves UDP payloads; headers exist only for rate accounting (28 bytes) and for
//! pcap output, where they are synthesised so tshark sees ordinary IPv4/UDP packets.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// IPv4 (20) + UDP (8) header bytes counted on every link.
pub const IPV4_UDP_OVERHEAD: u32 = 28;
/// QUIC servers listen on 443 so packet dissectors recognise the traffic.
pub const SERVER_PORT: u16 = 443;
/// Destination port of cross-traffic datagrams (the discard service).
pub const CROSS_PORT: u16 = 9;

fn host(net: u8, index: usize) -> Ipv4Addr {
    // 254 hosts per /24 inside 10.net.0.0/16.
    let i = index % (254 * 256);
    Ipv4Addr::new(10, net, (i / 254) as u8, (i % 254 + 1) as u8)
}

/// The client of flow `i`.
pub fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(host(1, i), 40000 + (i % 20000) as u16))
}

/// The server of flow `i`.
pub fn server_addr(i: usize) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(host(2, i), SERVER_PORT))
}

/// Source of cross-traffic source `i` on the given side (left = clients' side).
pub fn cross_addr(i: usize, left: bool) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(host(if left { 3 } else { 4 }, i), 10000 + (i % 20000) as u16))
}

/// Writes an IPv4 + UDP header for `payload_len` bytes into `out` (UDP checksum 0: "none",
/// allowed for IPv4, and not needed for a synthetic capture).
pub fn ipv4_udp_header(src: SocketAddr, dst: SocketAddr, payload_len: usize, ident: u16, out: &mut Vec<u8>) {
    let (SocketAddr::V4(s), SocketAddr::V4(d)) = (src, dst) else {
        return;
    };
    let total = (payload_len + IPV4_UDP_OVERHEAD as usize).min(usize::from(u16::MAX)) as u16;
    let start = out.len();
    out.extend_from_slice(&[0x45, 0x00]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&ident.to_be_bytes());
    out.extend_from_slice(&[0x40, 0x00, 64, 17, 0, 0]); // DF, TTL 64, UDP, checksum placeholder
    out.extend_from_slice(&s.ip().octets());
    out.extend_from_slice(&d.ip().octets());
    let sum = checksum(&out[start..start + 20]);
    out[start + 10..start + 12].copy_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&s.port().to_be_bytes());
    out.extend_from_slice(&d.port().to_be_bytes());
    out.extend_from_slice(&(total - 20).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
}

fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checksum_verifies_to_zero() {
        let mut h = Vec::new();
        ipv4_udp_header(client_addr(0), server_addr(0), 1200, 7, &mut h);
        assert_eq!(h.len(), 28);
        assert_eq!(checksum(&h[..20]), 0, "a correct IPv4 header sums to 0xffff");
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 1228);
    }

    #[test]
    fn addresses_are_distinct_per_flow() {
        assert_ne!(client_addr(0), client_addr(1));
        assert_ne!(server_addr(0).ip(), server_addr(300).ip());
    }
}
