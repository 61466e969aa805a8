//! Property tests of the forwarder's frame handling (`emu::frame`: classify, destination MAC,
//! bit errors with UDP checksum repair) on arbitrary bytes and mutated valid frames.
//!
//! `frame` is crate-private, so its source is compiled into this test (it depends only on
//! `netem::wire`); its own unit tests run here once more as a side effect.
//! CI runs a small budget; `scripts/fuzz.sh` sets `PROPTEST_CASES` for a long run.

#[allow(dead_code)]
#[path = "../src/frame.rs"]
mod frame;

use std::net::Ipv4Addr;

use frame::{apply_bit_error, classify, dst_mac, BitError, FrameKind};
use netem::wire::{
    EthernetFrame, Ipv4Packet, UdpPacket, ETHERNET_HEADER_LEN, ETHERTYPE_IPV4, IPV4_HEADER_LEN,
    PROTO_TCP, PROTO_UDP, UDP_HEADER_LEN,
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

/// An Ethernet + IPv4 (+ options) + UDP frame with correct checksums and Ethernet padding.
fn udp_frame(
    payload: &[u8],
    ip_options: usize,
    padding: usize,
    src: [u8; 4],
    dst: [u8; 4],
) -> Vec<u8> {
    let ip_header = IPV4_HEADER_LEN + 4 * ip_options;
    let total = ip_header + UDP_HEADER_LEN + payload.len();
    let mut f = vec![0u8; ETHERNET_HEADER_LEN + total + padding];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let (src, dst) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
    {
        let mut ip = Ipv4Packet::new_unchecked(&mut f[ETHERNET_HEADER_LEN..]);
        ip.set_version_and_header_len(ip_header);
        ip.set_total_len(u16::try_from(total).expect("small"));
        ip.set_ttl(64);
        ip.set_protocol(PROTO_UDP);
        ip.set_src_addr(src);
        ip.set_dst_addr(dst);
        ip.fill_checksum();
    }
    let start = ETHERNET_HEADER_LEN + ip_header;
    f[start + UDP_HEADER_LEN..start + UDP_HEADER_LEN + payload.len()].copy_from_slice(payload);
    let mut udp = UdpPacket::new_unchecked(&mut f[start..ETHERNET_HEADER_LEN + total]);
    udp.set_src_port(4433);
    udp.set_dst_port(443);
    udp.set_len(u16::try_from(UDP_HEADER_LEN + payload.len()).expect("small"));
    udp.fill_checksum(src, dst);
    f
}

/// What a receiving kernel checks: the IP header checksum and, for UDP, the UDP checksum.
fn kernel_accepts(f: &[u8]) -> bool {
    let Ok(eth) = EthernetFrame::new_checked(f) else {
        return false;
    };
    let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else {
        return false;
    };
    if !ip.verify_checksum() {
        return false;
    }
    match ip.protocol() {
        PROTO_UDP => UdpPacket::new_checked(ip.payload())
            .is_ok_and(|u| u.verify_checksum(ip.src_addr(), ip.dst_addr())),
        _ => true,
    }
}

fn frame_strategy() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(any::<u8>(), 0..1400),
        0usize..=10,
        0usize..40,
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
    )
        .prop_map(|(p, o, pad, s, d)| udp_frame(&p, o, pad, s, d))
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..1600), bit in any::<u64>()) {
        let _ = classify(&bytes);
        let _ = dst_mac(&bytes);
        let _ = apply_bit_error(&mut bytes, bit);
    }

    #[test]
    fn mutated_frames_never_panic(f in frame_strategy(), edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>(), bit in any::<u64>()) {
        let mut f = f;
        for (at, b) in edits {
            let i = at % f.len();
            f[i] = b;
        }
        f.truncate(cut % (f.len() + 1));
        let _ = classify(&f);
        let _ = dst_mac(&f);
        let _ = apply_bit_error(&mut f, bit);
    }

    #[test]
    fn valid_frames_are_classified_by_their_ip_length(f in frame_strategy()) {
        let total = Ipv4Packet::new_checked(&f[ETHERNET_HEADER_LEN..]).map(|ip| ip.total_len()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(classify(&f), FrameKind::Ipv4 { ip_bytes: u32::from(total) });
        prop_assert_eq!(dst_mac(&f), Some([2, 0, 0, 0, 0, 1]));
        prop_assert!(kernel_accepts(&f));
    }

    /// A bit error in a UDP payload is repaired so the datagram reaches the application; one
    /// anywhere else leaves a checksum the receiving kernel rejects. Exactly one bit of the
    /// packet changes, besides the repaired UDP checksum field.
    #[test]
    fn bit_errors_reach_the_application_or_fail_a_checksum(f in frame_strategy(), bit in any::<u64>(), tcp in prop::bool::weighted(0.2)) {
        let mut f = f;
        if tcp {
            // Relabel as TCP (fixing the IP checksum): any bit error is then the kernel's to drop.
            let mut ip = Ipv4Packet::new_unchecked(&mut f[ETHERNET_HEADER_LEN..]);
            ip.set_protocol(PROTO_TCP);
            ip.fill_checksum();
        }
        let before = f.clone();
        let header = Ipv4Packet::new_checked(&f[ETHERNET_HEADER_LEN..]).map(|ip| ip.header_len()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let outcome = apply_bit_error(&mut f, bit);
        let checksum_field = ETHERNET_HEADER_LEN + header + 6..ETHERNET_HEADER_LEN + header + 8;
        let flipped: u32 = before.iter().zip(&f).enumerate()
            .filter(|(i, _)| outcome == BitError::DroppedByChecksum || !checksum_field.contains(i))
            .map(|(_, (a, b))| (a ^ b).count_ones()).sum();
        prop_assert_eq!(flipped, 1, "{:?}", outcome);
        match outcome {
            BitError::UdpPayloadDelivered => {
                prop_assert!(!tcp);
                prop_assert!(kernel_accepts(&f), "a repaired payload error must pass the kernel's checks");
            }
            BitError::DroppedByChecksum => {
                // A UDP checksum field flipped to 0 means "no checksum": IPv4 allows it.
                let zero_udp = !tcp && Ipv4Packet::new_checked(&f[ETHERNET_HEADER_LEN..]).ok()
                    .and_then(|ip| UdpPacket::new_checked(ip.payload()).ok().map(|u| u.checksum() == 0))
                    .unwrap_or(false);
                if !tcp && !zero_udp {
                    prop_assert!(!kernel_accepts(&f), "a header error must fail a checksum");
                }
            }
        }
    }
}
