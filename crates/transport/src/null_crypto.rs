//! `flow.crypto = "none"`: quinn with a null AEAD, for large sweeps that need no decryptable traces.
//!
//! The TLS handshake still runs (rustls, the same messages and sizes), but every packet key it
//! yields is replaced by a [`NullPacketKey`] and every header key by an identity
//! [`NullHeaderKey`]. Packet sizes stay exactly those of the real cipher: the null AEAD appends a
//! 16-byte tag like AES-GCM, and the header key keeps AES's 16-byte sample so quinn pads short
//! packets the same way. The tag is a keyless checksum over the packet number, header and
//! payload, so a bit the link flips (`link.corrupt`, `link.ber`) still makes the packet fail
//! "decryption" and be dropped, as with the real cipher. Results are therefore identical to the
//! default mode; only the pcap's payloads are no longer encrypted (and the key log cannot
//! decrypt them).
//!
//! When no link of the flow's path can flip a bit ([`NullTag::Fixed`]), no packet can arrive
//! altered, so the checksum could never fail: the tag is then 16 fixed bytes, which costs
//! nothing to write or check (the checksum was 6% of a null-cipher run). Either way the results
//! are those of the real cipher.

use std::any::Any;
use std::sync::Arc;

use bytes::BytesMut;
use quinn_proto::crypto::{
    self, CryptoError, ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey,
    UnsupportedVersion,
};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side, TransportError};

/// Length of the null AEAD's tag: AES-GCM's and ChaCha20-Poly1305's, so datagram sizes match.
pub const TAG_LEN: usize = 16;
/// Header-protection sample size of the AES and ChaCha suites (RFC 9001 §5.4.2): quinn pads
/// packets so that this much ciphertext follows the packet number.
const SAMPLE_LEN: usize = 16;

/// The tag the null AEAD appends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullTag {
    /// A keyless checksum of (packet number, header, payload): a flipped bit fails the packet
    /// as it fails the real AEAD. Needed when a link on the path corrupts packets.
    Checksum,
    /// 16 fixed bytes: nothing on the path alters packets, so nothing could fail the check.
    Fixed,
}

impl NullTag {
    /// The tag a flow needs: a checksum if a link on its path may flip bits (`link.corrupt`,
    /// `link.ber`), fixed bytes otherwise.
    pub fn for_path(bit_errors: bool) -> NullTag {
        if bit_errors {
            NullTag::Checksum
        } else {
            NullTag::Fixed
        }
    }
}

/// The bytes of a [`NullTag::Fixed`] tag.
const FIXED_TAG: [u8; TAG_LEN] = [0; TAG_LEN];

/// A packet key whose "encryption" leaves the payload in clear and writes a 16-byte tag
/// ([`NullTag`]); decryption verifies the tag like an AEAD verifies its own.
pub struct NullPacketKey {
    /// The replaced key's limits, so key updates and integrity failures count as with it.
    confidentiality_limit: u64,
    integrity_limit: u64,
    tag: NullTag,
}

impl NullPacketKey {
    fn replacing(real: &dyn PacketKey, tag: NullTag) -> Box<dyn PacketKey> {
        Box::new(NullPacketKey {
            confidentiality_limit: real.confidentiality_limit(),
            integrity_limit: real.integrity_limit(),
            tag,
        })
    }

    /// The tag of one packet.
    fn tag(&self, packet: u64, header: &[u8], payload: &[u8]) -> [u8; TAG_LEN] {
        match self.tag {
            NullTag::Checksum => tag(packet, header, payload),
            NullTag::Fixed => FIXED_TAG,
        }
    }
}

/// A keyless 128-bit checksum of (packet number, header, payload).
///
/// Four lanes each fold every fourth 8-byte word with an xor and a multiply by an odd
/// constant: each step is a bijection of the lane for a fixed word, so changing any one word
/// (one or many bits of it) always changes that lane and so the result; the lanes are
/// independent so the CPU overlaps their multiplies (two lanes left the run waiting on their
/// latency: the tag was 6% of a null-cipher run).
fn tag(packet: u64, header: &[u8], payload: &[u8]) -> [u8; TAG_LEN] {
    const K: [u64; 4] = [
        0x9E37_79B9_7F4A_7C15,
        0xC2B2_AE3D_27D4_EB4F,
        0x1656_67B1_9E37_79F9,
        0x85EB_CA77_C2B2_AE63,
    ];
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
    let mut lanes = [
        packet ^ K[1],
        (header.len() as u64) << 32 ^ payload.len() as u64 ^ K[0],
        K[2],
        K[3],
    ];
    for part in [header, payload] {
        let mut blocks = part.chunks_exact(32);
        for b in &mut blocks {
            for (i, lane) in lanes.iter_mut().enumerate() {
                *lane = (*lane ^ word(&b[8 * i..8 * i + 8])).wrapping_mul(K[i]);
            }
        }
        // The tail (under 32 bytes): whole words, then the last partial word zero-padded
        // (built without a copy); the lengths folded in above tell padding from real zeros.
        for (i, w) in blocks.remainder().chunks(8).enumerate() {
            let v = if w.len() == 8 {
                word(w)
            } else {
                w.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x))
            };
            lanes[i] = (lanes[i] ^ v).wrapping_mul(K[i]);
        }
    }
    let [a, b, c, d] = lanes;
    let mut out = [0u8; TAG_LEN];
    out[..8].copy_from_slice(&((a ^ a >> 29) ^ (c ^ c >> 31).rotate_left(17)).to_le_bytes());
    out[8..].copy_from_slice(&((b ^ b >> 31) ^ (d ^ d >> 29).rotate_left(23)).to_le_bytes());
    out
}

impl PacketKey for NullPacketKey {
    fn encrypt(&self, packet: u64, buf: &mut [u8], header_len: usize) {
        let sealed = buf.len() - TAG_LEN;
        let (header, rest) = buf.split_at_mut(header_len);
        let (payload, tag_out) = rest.split_at_mut(sealed - header_len);
        tag_out.copy_from_slice(&self.tag(packet, header, payload));
    }

    fn decrypt(
        &self,
        packet: u64,
        header: &[u8],
        payload: &mut BytesMut,
    ) -> Result<(), CryptoError> {
        let Some(plain) = payload.len().checked_sub(TAG_LEN) else {
            return Err(CryptoError);
        };
        if self.tag(packet, header, &payload[..plain]) != payload[plain..] {
            return Err(CryptoError);
        }
        payload.truncate(plain);
        Ok(())
    }

    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn confidentiality_limit(&self) -> u64 {
        self.confidentiality_limit
    }

    fn integrity_limit(&self) -> u64 {
        self.integrity_limit
    }
}

/// Header protection as the identity, with the AES suites' sample size.
pub struct NullHeaderKey;

impl HeaderKey for NullHeaderKey {
    fn decrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn encrypt(&self, _pn_offset: usize, _packet: &mut [u8]) {}

    fn sample_size(&self) -> usize {
        SAMPLE_LEN
    }
}

fn null_pair(real: KeyPair<Box<dyn PacketKey>>, tag: NullTag) -> KeyPair<Box<dyn PacketKey>> {
    KeyPair {
        local: NullPacketKey::replacing(real.local.as_ref(), tag),
        remote: NullPacketKey::replacing(real.remote.as_ref(), tag),
    }
}

fn null_keys(real: Keys, tag: NullTag) -> Keys {
    Keys {
        header: KeyPair {
            local: Box::new(NullHeaderKey),
            remote: Box::new(NullHeaderKey),
        },
        packet: null_pair(real.packet, tag),
    }
}

/// A TLS session whose packet and header keys are replaced by null ones; the handshake itself
/// is the wrapped session's.
struct NullSession(Box<dyn crypto::Session>, NullTag);

impl crypto::Session for NullSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        null_keys(self.0.initial_keys(dst_cid, side), self.1)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.0.handshake_data()
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.0.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        let (_, packet) = self.0.early_crypto()?;
        Some((
            Box::new(NullHeaderKey),
            NullPacketKey::replacing(packet.as_ref(), self.1),
        ))
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.0.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        self.0.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.0.read_handshake(buf)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.0.transport_parameters()
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        self.0.write_handshake(buf).map(|k| null_keys(k, self.1))
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.0.next_1rtt_keys().map(|k| null_pair(k, self.1))
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.0.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.0.export_keying_material(output, label, context)
    }
}

/// A client crypto config that runs the wrapped TLS handshake with null packet protection.
pub struct NullClientConfig(pub Arc<dyn crypto::ClientConfig>, pub NullTag);

impl crypto::ClientConfig for NullClientConfig {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn crypto::Session>, ConnectError> {
        let inner = self.0.clone().start_session(version, server_name, params)?;
        Ok(Box::new(NullSession(inner, self.1)))
    }
}

/// A server crypto config that runs the wrapped TLS handshake with null packet protection.
pub struct NullServerConfig(pub Arc<dyn crypto::ServerConfig>, pub NullTag);

impl crypto::ServerConfig for NullServerConfig {
    fn initial_keys(
        &self,
        version: u32,
        dst_cid: &ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        self.0
            .initial_keys(version, dst_cid)
            .map(|k| null_keys(k, self.1))
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.0.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(
        self: Arc<Self>,
        version: u32,
        params: &TransportParameters,
    ) -> Box<dyn crypto::Session> {
        Box::new(NullSession(
            self.0.clone().start_session(version, params),
            self.1,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(tag: NullTag) -> NullPacketKey {
        NullPacketKey {
            confidentiality_limit: 1,
            integrity_limit: 1,
            tag,
        }
    }

    fn sealed(pn: u64, header: &[u8], payload: &[u8]) -> Vec<u8> {
        sealed_with(NullTag::Checksum, pn, header, payload)
    }

    fn sealed_with(tag: NullTag, pn: u64, header: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut buf = [header, payload, &[0xffu8; TAG_LEN]].concat();
        key(tag).encrypt(pn, &mut buf, header.len());
        buf
    }

    fn opens(pn: u64, header_len: usize, buf: &[u8]) -> Option<Vec<u8>> {
        opens_with(NullTag::Checksum, pn, header_len, buf)
    }

    fn opens_with(tag: NullTag, pn: u64, header_len: usize, buf: &[u8]) -> Option<Vec<u8>> {
        let key = key(tag);
        let mut payload = BytesMut::from(&buf[header_len..]);
        key.decrypt(pn, &buf[..header_len], &mut payload).ok()?;
        Some(payload.to_vec())
    }

    #[test]
    fn round_trip_keeps_the_payload_and_adds_sixteen_bytes() {
        let payload: Vec<u8> = (0..1200u32).map(|i| (i * 7) as u8).collect();
        let buf = sealed(42, &[0x40, 1, 2, 3, 4, 5, 6, 7, 8, 9], &payload);
        assert_eq!(buf.len(), 10 + 1200 + TAG_LEN);
        assert_eq!(opens(42, 10, &buf), Some(payload));
    }

    /// Like an AEAD, any flipped bit (header, payload or tag) or a wrong packet number fails.
    #[test]
    fn every_single_bit_flip_fails() {
        let payload: Vec<u8> = (0..61u32).map(|i| (i * 13) as u8).collect();
        let buf = sealed(7, &[0x41, 9, 9, 9, 9, 0xaa], &payload);
        assert!(opens(8, 6, &buf).is_none(), "packet number is covered");
        for bit in 0..buf.len() * 8 {
            let mut b = buf.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(
                opens(7, 6, &b).is_none(),
                "bit {bit} flipped went unnoticed"
            );
        }
    }

    /// The fixed tag keeps the 16 bytes (so sizes match the real cipher), round-trips, and
    /// refuses a datagram too short to hold it or a tag that is not its bytes.
    #[test]
    fn fixed_tag_keeps_the_size_and_round_trips() {
        let payload: Vec<u8> = (0..1200u32).map(|i| (i * 7) as u8).collect();
        let header = [0x40, 1, 2, 3, 4];
        let buf = sealed_with(NullTag::Fixed, 9, &header, &payload);
        assert_eq!(buf.len(), header.len() + payload.len() + TAG_LEN);
        assert_eq!(buf[buf.len() - TAG_LEN..], FIXED_TAG);
        assert_eq!(
            opens_with(NullTag::Fixed, 9, header.len(), &buf),
            Some(payload)
        );
        let mut bad = buf.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(opens_with(NullTag::Fixed, 9, header.len(), &bad).is_none());
        assert!(opens_with(NullTag::Fixed, 9, 0, &buf[..TAG_LEN - 1]).is_none());
    }

    #[test]
    fn a_path_with_bit_errors_gets_the_checksum() {
        assert_eq!(NullTag::for_path(true), NullTag::Checksum);
        assert_eq!(NullTag::for_path(false), NullTag::Fixed);
    }
}
