//! Addresses of simulated hosts and the IPv4/UDP headers they would carry on a wire.
//!
//! The simulator moves UDP payloads; headers exist only for rate accounting
//! ([`IPV4_UDP_OVERHEAD`]) and for pcap output, where they are synthesised through
//! [`netem::wire`]'s views so tshark sees ordinary IPv4/UDP and IPv4/TCP packets.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use netem::wire::{
    tcp_flags, Ipv4Packet, TcpPacket, UdpPacket, IPV4_HEADER_LEN, IPV4_UDP_OVERHEAD, PROTO_TCP,
    PROTO_UDP, TCP_HEADER_LEN,
};
/// QUIC servers listen on 443 so packet dissectors recognise the traffic.
pub const SERVER_PORT: u16 = 443;
/// Destination port of cross-traffic datagrams (the discard service).
pub const CROSS_PORT: u16 = 9;
/// Port latency probes are echoed from (the echo service).
pub const PROBE_PORT: u16 = 7;

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

/// Client and server ends of latency probe `i` between the hosts of flow `flow`: the flow's
/// own hosts, the echo service's port on the server.
pub fn probe_addrs(i: usize, flow: usize) -> (SocketAddr, SocketAddr) {
    let client = SocketAddrV4::new(host(1, flow), 30000 + (i % 10000) as u16);
    let server = SocketAddrV4::new(host(2, flow), PROBE_PORT);
    (SocketAddr::V4(client), SocketAddr::V4(server))
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
    let start = out.len();
    out.resize(start + IPV4_UDP_OVERHEAD as usize, 0);
    let mut ip = ipv4_header(&mut out[start..], s, d, PROTO_UDP, total, ident);
    let mut udp = UdpPacket::new_unchecked(&mut ip.bytes_mut()[IPV4_HEADER_LEN..]);
    udp.set_src_port(s.port());
    udp.set_dst_port(d.port());
    udp.set_len(total - IPV4_HEADER_LEN as u16);
    udp.set_checksum(0);
}

/// Fields of a TCP segment needed to draw it in a capture.
#[derive(Debug, Clone, Copy)]
pub struct TcpHeaderFields {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// SYN flag.
    pub syn: bool,
    /// ACK flag.
    pub ack_flag: bool,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// ECE flag.
    pub ece: bool,
    /// CWR flag.
    pub cwr: bool,
    /// Receive window in bytes (unscaled).
    pub window: u64,
    /// (TSval, TSecr).
    pub ts: Option<(u32, u32)>,
    /// SACK blocks as 32-bit sequence numbers.
    pub sack: [(u32, u32); 4],
    /// Number of valid entries in `sack`.
    pub nsack: usize,
    /// Maximum segment size announced on SYNs.
    pub mss: u16,
    /// Payload bytes of the segment.
    pub data_len: usize,
}

/// Window scale the capture announces on SYNs (Linux's usual value for large buffers).
pub const CAPTURE_WSCALE: u8 = 7;

/// The TCP options the capture shows: MSS, window scale and timestamps (or SACK-permitted
/// padding) on SYNs; timestamps and SACK blocks otherwise.
fn tcp_options(h: &TcpHeaderFields) -> Vec<u8> {
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
    opts
}

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
    let opts = tcp_options(h);
    let tcp_len = TCP_HEADER_LEN + opts.len();
    let total = (IPV4_HEADER_LEN + tcp_len + h.data_len).min(usize::from(u16::MAX)) as u16;
    let start = out.len();
    out.resize(start + IPV4_HEADER_LEN + tcp_len, 0);
    let mut ip = ipv4_header(&mut out[start..], s, d, PROTO_TCP, total, ident);
    let mut tcp = TcpPacket::new_unchecked(&mut ip.bytes_mut()[IPV4_HEADER_LEN..]);
    tcp.set_src_port(s.port());
    tcp.set_dst_port(d.port());
    tcp.set_seq(h.seq);
    tcp.set_ack(h.ack);
    tcp.set_header_len(tcp_len);
    let flag = |on: bool, bit: u8| if on { bit } else { 0 };
    tcp.set_flags(
        flag(h.fin, tcp_flags::FIN)
            | flag(h.syn, tcp_flags::SYN)
            | flag(h.rst, tcp_flags::RST)
            | flag(h.ack_flag, tcp_flags::ACK)
            | flag(h.ece, tcp_flags::ECE)
            | flag(h.cwr, tcp_flags::CWR),
    );
    let window = if h.syn {
        h.window
    } else {
        h.window >> CAPTURE_WSCALE
    };
    tcp.set_window(window.min(65_535) as u16);
    tcp.set_checksum(0);
    tcp.set_urgent(0);
    // Written past the fixed header rather than through `options_mut`: four SACK blocks with
    // timestamps do not fit the 4-bit data offset, and the capture has always shown them anyway.
    out[start + IPV4_HEADER_LEN + TCP_HEADER_LEN..].copy_from_slice(&opts);
}

/// Fills a 20-byte IPv4 header at the start of `buf` (DF set, TTL 64, a correct header
/// checksum) and returns the view, for the transport header after it.
fn ipv4_header(
    buf: &mut [u8],
    s: SocketAddrV4,
    d: SocketAddrV4,
    proto: u8,
    total: u16,
    ident: u16,
) -> Ipv4Packet<&mut [u8]> {
    let mut ip = Ipv4Packet::new_unchecked(buf);
    ip.set_version_and_header_len(IPV4_HEADER_LEN);
    ip.set_tos(0);
    ip.set_total_len(total);
    ip.set_ident(ident);
    ip.set_dont_frag(true);
    ip.set_ttl(64);
    ip.set_protocol(proto);
    ip.set_src_addr(*s.ip());
    ip.set_dst_addr(*d.ip());
    ip.fill_checksum();
    ip
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checksum_verifies_to_zero() {
        let mut h = Vec::new();
        ipv4_udp_header(client_addr(0), server_addr(0), 1200, 7, &mut h);
        assert_eq!(h.len(), 28);
        assert!(
            Ipv4Packet::new_checked(&h[..]).is_err(),
            "the payload is not there"
        );
        assert!(
            Ipv4Packet::new_unchecked(&h[..]).verify_checksum(),
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
