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

/// The client of flow `i`'s TCP connection number `conn` (sequential connections get new ports,
/// as a real client would).
pub fn tcp_client_addr(i: usize, conn: u32) -> SocketAddr {
    let port = 40000 + ((i * 16 + conn as usize) % 20000) as u16;
    SocketAddr::V4(SocketAddrV4::new(host(1, i), port))
}

/// The server of flow `i`.
pub fn server_addr(i: usize) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(host(2, i), SERVER_PORT))
}

/// Source of cross-traffic source `i` on the given side (left = clients' side).
pub fn cross_addr(i: usize, left: bool) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(
        host(if left { 3 } else { 4 }, i),
        10000 + (i % 20000) as u16,
    ))
}

/// Writes an IPv4 + UDP header for `payload_len` bytes into `out` (UDP checksum 0: "none",
/// allowed for IPv4, and not needed for a synthetic capture).
pub fn ipv4_udp_header(
    src: SocketAddr,
    dst: SocketAddr,
    payload_len: usize,
    ident: u16,
    out: &mut Vec<u8>,
) {
    let (SocketAddr::V4(s), SocketAddr::V4(d)) = (src, dst) else {
        return;
    };
    let total = (payload_len + IPV4_UDP_OVERHEAD as usize).min(usize::from(u16::MAX)) as u16;
    ipv4_header(s, d, PROTO_UDP, total, ident, out);
    out.extend_from_slice(&s.port().to_be_bytes());
    out.extend_from_slice(&d.port().to_be_bytes());
    out.extend_from_slice(&(total - 20).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
}

/// Fields of a TCP segment needed to draw it in a capture.
#[derive(Debug, Clone, Copy)]
pub struct TcpHeaderFields {
    pub seq: u32,
    pub ack: u32,
    pub syn: bool,
    pub ack_flag: bool,
    pub fin: bool,
    pub rst: bool,
    /// Receive window in bytes (unscaled).
    pub window: u64,
    /// (TSval, TSecr).
    pub ts: Option<(u32, u32)>,
    /// SACK blocks as 32-bit sequence numbers.
    pub sack: [(u32, u32); 4],
    pub nsack: usize,
    /// Maximum segment size announced on SYNs.
    pub mss: u16,
    pub data_len: usize,
}

/// Window scale the capture announces on SYNs (Linux's usual value for large buffers).
pub const CAPTURE_WSCALE: u8 = 7;

/// Writes an IPv4 + TCP header (with options) for a segment into `out` (TCP checksum 0: the
/// capture is synthetic and dissectors do not verify it by default).
pub fn ipv4_tcp_header(
    src: SocketAddr,
    dst: SocketAddr,
    h: &TcpHeaderFields,
    ident: u16,
    out: &mut Vec<u8>,
) {
    let (SocketAddr::V4(s), SocketAddr::V4(d)) = (src, dst) else {
        return;
    };
    let mut opts: Vec<u8> = Vec::with_capacity(40);
    if h.syn {
        opts.extend_from_slice(&[2, 4]);
        opts.extend_from_slice(&h.mss.to_be_bytes());
        opts.extend_from_slice(&[1, 3, 3, CAPTURE_WSCALE]);
        match h.ts {
            Some((val, ecr)) => {
                opts.extend_from_slice(&[4, 2, 8, 10]);
                opts.extend_from_slice(&val.to_be_bytes());
                opts.extend_from_slice(&ecr.to_be_bytes());
            }
            None => opts.extend_from_slice(&[1, 1, 4, 2]),
        }
    } else {
        if let Some((val, ecr)) = h.ts {
            opts.extend_from_slice(&[1, 1, 8, 10]);
            opts.extend_from_slice(&val.to_be_bytes());
            opts.extend_from_slice(&ecr.to_be_bytes());
        }
        if h.nsack > 0 {
            opts.extend_from_slice(&[1, 1, 5, (2 + 8 * h.nsack) as u8]);
            for &(a, b) in &h.sack[..h.nsack.min(4)] {
                opts.extend_from_slice(&a.to_be_bytes());
                opts.extend_from_slice(&b.to_be_bytes());
            }
        }
    }
    let tcp_len = 20 + opts.len();
    let total = (20 + tcp_len + h.data_len).min(usize::from(u16::MAX)) as u16;
    ipv4_header(s, d, PROTO_TCP, total, ident, out);
    out.extend_from_slice(&s.port().to_be_bytes());
    out.extend_from_slice(&d.port().to_be_bytes());
    out.extend_from_slice(&h.seq.to_be_bytes());
    out.extend_from_slice(&h.ack.to_be_bytes());
    let flags =
        u8::from(h.fin) | u8::from(h.syn) << 1 | u8::from(h.rst) << 2 | u8::from(h.ack_flag) << 4;
    out.extend_from_slice(&[((tcp_len / 4) as u8) << 4, flags]);
    let window = if h.syn {
        h.window
    } else {
        h.window >> CAPTURE_WSCALE
    };
    out.extend_from_slice(&(window.min(65_535) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    out.extend_from_slice(&opts);
}

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

/// A 20-byte IPv4 header with DF set, TTL 64 and a correct header checksum.
fn ipv4_header(
    s: SocketAddrV4,
    d: SocketAddrV4,
    proto: u8,
    total: u16,
    ident: u16,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    out.extend_from_slice(&[0x45, 0x00]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&ident.to_be_bytes());
    out.extend_from_slice(&[0x40, 0x00, 64, proto, 0, 0]);
    out.extend_from_slice(&s.ip().octets());
    out.extend_from_slice(&d.ip().octets());
    let sum = checksum(&out[start..start + 20]);
    out[start + 10..start + 12].copy_from_slice(&sum.to_be_bytes());
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
        assert_eq!(
            checksum(&h[..20]),
            0,
            "a correct IPv4 header sums to 0xffff"
        );
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 1228);
    }

    #[test]
    fn addresses_are_distinct_per_flow() {
        assert_ne!(client_addr(0), client_addr(1));
        assert_ne!(server_addr(0).ip(), server_addr(300).ip());
    }
}
