//! Property tests of `netem::wire`'s checked views and checksums: arbitrary bytes and mutated
//! valid Ethernet/IPv4/UDP/TCP frames never panic once a view is checked, and checksums verify
//! exactly the packets they should (the Internet checksum catches every single-bit error).
//!
//! CI runs a small budget; `scripts/fuzz.sh` sets `PROPTEST_CASES` for a long run.

use std::net::Ipv4Addr;

use netem::wire::{
    checksum, EthernetFrame, Ipv4Packet, TcpPacket, UdpPacket, ETHERNET_HEADER_LEN, ETHERTYPE_IPV4,
    IPV4_HEADER_LEN, PROTO_TCP, PROTO_UDP, TCP_HEADER_LEN, UDP_HEADER_LEN,
};
use proptest::prelude::*;

/// The budget of one property in a normal `cargo test`, unless `PROPTEST_CASES` says otherwise.
fn config(ci_cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = ci_cases;
    }
    c
}

/// Reads every field of every view that accepts `bytes` (as a frame and as each header alone).
/// Returns how many views accepted it, so callers can check that valid input is accepted.
fn read_everything(bytes: &[u8]) -> usize {
    let mut accepted = 0;
    if let Ok(eth) = EthernetFrame::new_checked(bytes) {
        accepted += 1;
        let _ = (
            eth.dst_addr(),
            eth.src_addr(),
            eth.ethertype(),
            eth.payload().len(),
        );
        accepted += read_ip(eth.payload());
    }
    accepted + read_ip(bytes)
}

fn read_ip(bytes: &[u8]) -> usize {
    let mut accepted = 0;
    if let Ok(ip) = Ipv4Packet::new_checked(bytes) {
        accepted += 1;
        let _ = (
            ip.version(),
            ip.header_len(),
            ip.total_len(),
            ip.ident(),
            ip.dont_frag(),
            ip.ttl(),
            ip.protocol(),
            ip.checksum(),
            ip.verify_checksum(),
            ip.packet().len(),
        );
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        accepted += read_transport(ip.payload(), src, dst);
    }
    accepted + read_transport(bytes, Ipv4Addr::LOCALHOST, Ipv4Addr::BROADCAST)
}

fn read_transport(bytes: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> usize {
    let mut accepted = 0;
    if let Ok(udp) = UdpPacket::new_checked(bytes) {
        accepted += 1;
        let _ = (
            udp.src_port(),
            udp.dst_port(),
            udp.len(),
            udp.checksum(),
            udp.payload().len(),
        );
        let _ = (
            udp.compute_checksum(src, dst),
            udp.verify_checksum(src, dst),
        );
    }
    if let Ok(tcp) = TcpPacket::new_checked(bytes) {
        accepted += 1;
        let _ = (
            tcp.src_port(),
            tcp.dst_port(),
            tcp.seq(),
            tcp.ack(),
            tcp.header_len(),
            tcp.flags(),
        );
        let _ = (
            tcp.window(),
            tcp.checksum(),
            tcp.options().len(),
            tcp.payload().len(),
        );
    }
    accepted
}

/// A well-formed Ethernet + IPv4 (+ options) + UDP or TCP (+ options) frame with correct
/// checksums, and trailing Ethernet padding.
#[derive(Debug, Clone)]
struct Spec {
    udp: bool,
    ip_options: usize,
    tcp_options: usize,
    payload: Vec<u8>,
    padding: usize,
    src: [u8; 4],
    dst: [u8; 4],
    ports: (u16, u16),
    seq: u32,
    flags: u8,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        0usize..=10,
        0usize..=10,
        prop::collection::vec(any::<u8>(), 0..1500),
        0usize..64,
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<(u16, u16)>(),
        any::<u32>(),
        any::<u8>(),
    )
        .prop_map(
            |(udp, ip_options, tcp_options, payload, padding, src, dst, ports, seq, flags)| Spec {
                udp,
                ip_options,
                tcp_options,
                payload,
                padding,
                src,
                dst,
                ports,
                seq,
                flags,
            },
        )
}

/// The TCP checksum over the pseudo-header, as a receiver computes it (0 = verifies).
fn tcp_sum(src: Ipv4Addr, dst: Ipv4Addr, segment: &[u8]) -> u16 {
    let len = u16::try_from(segment.len()).expect("a segment fits an IP packet");
    checksum::fold(
        u64::from(checksum::pseudo_header(src, dst, PROTO_TCP, len))
            + u64::from(checksum::sum(segment)),
    )
}

fn build(s: &Spec) -> Vec<u8> {
    let ip_header = IPV4_HEADER_LEN + 4 * s.ip_options;
    let transport_header = if s.udp {
        UDP_HEADER_LEN
    } else {
        TCP_HEADER_LEN + 4 * s.tcp_options
    };
    let total = ip_header + transport_header + s.payload.len();
    let mut f = vec![0u8; ETHERNET_HEADER_LEN + total + s.padding];
    f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let (src, dst) = (Ipv4Addr::from(s.src), Ipv4Addr::from(s.dst));
    {
        let mut ip = Ipv4Packet::new_unchecked(&mut f[ETHERNET_HEADER_LEN..]);
        ip.set_version_and_header_len(ip_header);
        ip.set_total_len(u16::try_from(total).expect("small"));
        ip.set_ttl(64);
        ip.set_protocol(if s.udp { PROTO_UDP } else { PROTO_TCP });
        ip.set_src_addr(src);
        ip.set_dst_addr(dst);
        ip.fill_checksum();
    }
    let start = ETHERNET_HEADER_LEN + ip_header;
    f[start + transport_header..start + transport_header + s.payload.len()]
        .copy_from_slice(&s.payload);
    let segment = &mut f[start..ETHERNET_HEADER_LEN + total];
    if s.udp {
        let mut udp = UdpPacket::new_unchecked(&mut *segment);
        udp.set_src_port(s.ports.0);
        udp.set_dst_port(s.ports.1);
        udp.set_len(u16::try_from(transport_header + s.payload.len()).expect("small"));
        udp.fill_checksum(src, dst);
    } else {
        let mut tcp = TcpPacket::new_unchecked(&mut *segment);
        tcp.set_src_port(s.ports.0);
        tcp.set_dst_port(s.ports.1);
        tcp.set_seq(s.seq);
        tcp.set_header_len(transport_header);
        tcp.set_flags(s.flags);
        tcp.set_window(65535);
        tcp.options_mut().fill(1); // NOP options
        let sum = tcp_sum(src, dst, &segment[..]);
        TcpPacket::new_unchecked(&mut *segment).set_checksum(sum);
    }
    f
}

/// Whether the transport checksum of a frame built by [`build`] verifies.
fn transport_ok(frame: &[u8]) -> Option<bool> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    match ip.protocol() {
        PROTO_UDP => UdpPacket::new_checked(ip.payload())
            .ok()
            .map(|u| u.verify_checksum(src, dst)),
        PROTO_TCP => Some(tcp_sum(src, dst, ip.payload()) == 0),
        _ => None,
    }
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        read_everything(&bytes);
    }

    #[test]
    fn valid_frames_parse_and_verify(s in spec()) {
        let f = build(&s);
        let eth = EthernetFrame::new_checked(&f[..]).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let ip = Ipv4Packet::new_checked(eth.payload()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(ip.verify_checksum());
        prop_assert_eq!(ip.header_len(), IPV4_HEADER_LEN + 4 * s.ip_options);
        prop_assert_eq!(ip.payload().len(), f.len() - ETHERNET_HEADER_LEN - s.padding - ip.header_len());
        prop_assert_eq!(transport_ok(&f), Some(true));
        if s.udp {
            let udp = UdpPacket::new_checked(ip.payload()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(udp.payload(), &s.payload[..]);
            prop_assert_ne!(udp.checksum(), 0, "a computed 0 is sent as 0xffff");
        } else {
            let tcp = TcpPacket::new_checked(ip.payload()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(tcp.payload(), &s.payload[..]);
            prop_assert_eq!(tcp.options().len(), 4 * s.tcp_options);
            prop_assert_eq!((tcp.seq(), tcp.flags()), (s.seq, s.flags));
        }
    }

    #[test]
    fn a_single_bit_error_fails_a_checksum(s in spec(), bit in any::<usize>()) {
        let mut f = build(&s);
        let ip_len = f.len() - ETHERNET_HEADER_LEN - s.padding;
        let header = IPV4_HEADER_LEN + 4 * s.ip_options;
        let bit = bit % (ip_len * 8);
        f[ETHERNET_HEADER_LEN + bit / 8] ^= 0x80 >> (bit % 8);
        if bit / 8 < header {
            // In the IP header: its checksum catches it (if the header still parses at all).
            if let Ok(ip) = Ipv4Packet::new_checked(&f[ETHERNET_HEADER_LEN..]) {
                if ip.header_len() == header {
                    prop_assert!(!ip.verify_checksum(), "bit {} of the IP header went unnoticed", bit);
                }
            }
        } else {
            // In the transport header or payload: the transport checksum catches it, except
            // that a UDP checksum field flipped to 0 means "no checksum" (IPv4 allows it), and
            // a mangled UDP length no longer parses (the kernel drops that too).
            let udp_zero = s.udp && UdpPacket::new_checked(&f[ETHERNET_HEADER_LEN + header..]).is_ok_and(|u| u.checksum() == 0);
            if !udp_zero {
                prop_assert_ne!(transport_ok(&f), Some(true), "bit {} of the segment went unnoticed", bit);
            }
        }
    }

    #[test]
    fn mutated_valid_frames_never_panic(s in spec(), edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let mut f = build(&s);
        for (at, byte) in edits {
            let i = at % f.len();
            f[i] = byte;
        }
        // Header-length and total-length fields are where a careless parser reads past the end.
        f.truncate(cut % (f.len() + 1));
        read_everything(&f);
    }

    #[test]
    fn checksum_sum_of_any_length_never_panics(len in 0usize..300_000, byte in any::<u8>()) {
        let data = vec![byte; len];
        // The one's-complement sum folded is the same however the words are grouped.
        let whole = checksum::data(&data);
        let split = len / 4 * 2;
        let parts = checksum::fold(u64::from(checksum::sum(&data[..split])) + u64::from(checksum::sum(&data[split..])));
        prop_assert_eq!(whole, parts);
    }
}

#[test]
fn checksum_of_a_large_buffer_of_ones_does_not_overflow() {
    // 65536 words of 0xffff sum past u32::MAX: a GSO/GRO-sized buffer of 0xff bytes.
    let data = vec![0xffu8; 1 << 18];
    assert_eq!(checksum::data(&data), 0);
}
