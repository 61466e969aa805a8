//! The frame tap: quinn's packet keys wrapped so that every packet's plaintext is parsed into
//! qlog frames on its way through the AEAD, without changing a byte of it.
//!
//! quinn encrypts a packet right before it logs `packet_sent` and decrypts one right before it
//! logs `packet_received` (quinn-proto 0.11: `PacketBuilder::finish`,
//! `Connection::on_packet_authenticated`). A [`TapPacketKey`] parses the plaintext it is handed
//! (the payload before sealing; the payload after a successful opening) and leaves the frames
//! in the connection's [`FrameTap`], keyed by packet type and number; the qlog writer takes
//! them when quinn's record for that packet arrives ([`super::quinn`]). The keys forward every
//! call to the wrapped ones, so packets, timings and results are those of an untapped run.
//!
//! A connection's keys come from its TLS session ([`TapSession`]), except the key that opens a
//! server's very first Initial: quinn derives it from the endpoint's server config before the
//! connection exists. The endpoint's config is therefore wrapped too ([`TapServerConfig`]),
//! taking its tap from an [`AcceptSlot`] the server fills while it accepts the connection.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::BytesMut;
use quinn_proto::crypto::{
    self, CryptoError, ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey,
    UnsupportedVersion,
};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side, TransportError};

use super::frames;
use super::schema::{Frame, PacketType, RawInfo};

/// Packets kept per direction until quinn logs them: quinn logs a packet right after its key
/// handled it, so only a packet quinn drops after opening (a duplicate) waits longer, and is
/// pushed out.
const KEPT: usize = 32;

/// One packet's sizes and frames, waiting for quinn's record of it.
#[derive(Debug, Clone, PartialEq)]
pub struct TappedPacket {
    /// Its type.
    pub packet_type: PacketType,
    /// Its number.
    pub packet_number: u64,
    /// Packet and payload sizes.
    pub raw: RawInfo,
    /// Its frames.
    pub frames: Vec<Frame>,
}

/// Which way a packet went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sealed by this endpoint.
    Sent,
    /// Opened by this endpoint.
    Received,
}

/// The frames of one connection's packets, from its keys to its qlog writer.
#[derive(Debug, Clone, Default)]
pub struct FrameTap(Arc<Mutex<[VecDeque<TappedPacket>; 2]>>);

impl FrameTap {
    fn lock(&self) -> std::sync::MutexGuard<'_, [VecDeque<TappedPacket>; 2]> {
        // Queues of plain records stay consistent whatever panicked.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn record(&self, dir: Direction, p: TappedPacket) {
        let mut q = self.lock();
        let q = &mut q[dir as usize];
        if q.len() == KEPT {
            q.pop_front();
        }
        q.push_back(p);
    }

    /// Takes the newest packet of `packet_type` (its qlog name) and `number` that went `dir`.
    pub fn take(&self, dir: Direction, packet_type: &str, number: u64) -> Option<TappedPacket> {
        let mut q = self.lock();
        let q = &mut q[dir as usize];
        let i = q
            .iter()
            .rposition(|p| p.packet_number == number && p.packet_type.name() == packet_type)?;
        q.remove(i)
    }
}

/// Where a server accepting a connection puts that connection's tap, for the endpoint's keys
/// (which open the first Initial) and its TLS session to find.
#[derive(Debug, Clone, Default)]
pub struct AcceptSlot(Arc<Mutex<Option<FrameTap>>>);

impl AcceptSlot {
    /// The connection being accepted taps into `tap` (`None`: it is not tapped).
    pub fn set(&self, tap: Option<FrameTap>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = tap;
    }

    fn current(&self) -> Option<FrameTap> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Which tap a key feeds.
#[derive(Clone)]
enum Target {
    /// A connection's.
    Conn(FrameTap),
    /// Whichever connection is being accepted when the key is used.
    Accepting(AcceptSlot),
}

impl Target {
    fn tap(&self) -> Option<FrameTap> {
        match self {
            Target::Conn(t) => Some(t.clone()),
            Target::Accepting(s) => s.current(),
        }
    }
}

/// qlog's type of a packet from its first byte (header protection removed).
fn packet_type(first: u8) -> PacketType {
    if first & 0x80 == 0 {
        return PacketType::OneRtt;
    }
    match (first >> 4) & 3 {
        0 => PacketType::Initial,
        1 => PacketType::ZeroRtt,
        2 => PacketType::Handshake,
        _ => PacketType::Retry,
    }
}

/// A packet key that parses the plaintext it seals (a packet sent) or opens (a packet
/// received) into its target's tap.
pub struct TapPacketKey {
    inner: Box<dyn PacketKey>,
    target: Target,
}

impl TapPacketKey {
    fn wrap(inner: Box<dyn PacketKey>, target: &Target) -> Box<dyn PacketKey> {
        Box::new(TapPacketKey {
            inner,
            target: target.clone(),
        })
    }
}

impl PacketKey for TapPacketKey {
    fn encrypt(&self, packet: u64, buf: &mut [u8], header_len: usize) {
        if let Some(tap) = self.target.tap() {
            let end = buf.len().saturating_sub(self.inner.tag_len());
            if let (Some(&first), Some(payload)) = (buf.first(), buf.get(header_len..end)) {
                tap.record(
                    Direction::Sent,
                    TappedPacket {
                        packet_type: packet_type(first),
                        packet_number: packet,
                        raw: RawInfo {
                            length: buf.len() as u64,
                            payload_length: payload.len() as u64,
                        },
                        frames: frames::parse(payload),
                    },
                );
            }
        }
        self.inner.encrypt(packet, buf, header_len);
    }

    fn decrypt(
        &self,
        packet: u64,
        header: &[u8],
        payload: &mut BytesMut,
    ) -> Result<(), CryptoError> {
        self.inner.decrypt(packet, header, payload)?;
        if let (Some(tap), Some(&first)) = (self.target.tap(), header.first()) {
            tap.record(
                Direction::Received,
                TappedPacket {
                    packet_type: packet_type(first),
                    packet_number: packet,
                    raw: RawInfo {
                        length: (header.len() + payload.len() + self.inner.tag_len()) as u64,
                        payload_length: payload.len() as u64,
                    },
                    frames: frames::parse(payload),
                },
            );
        }
        Ok(())
    }

    fn tag_len(&self) -> usize {
        self.inner.tag_len()
    }

    fn confidentiality_limit(&self) -> u64 {
        self.inner.confidentiality_limit()
    }

    fn integrity_limit(&self) -> u64 {
        self.inner.integrity_limit()
    }
}

fn tap_pair(keys: KeyPair<Box<dyn PacketKey>>, t: &Target) -> KeyPair<Box<dyn PacketKey>> {
    KeyPair {
        local: TapPacketKey::wrap(keys.local, t),
        remote: TapPacketKey::wrap(keys.remote, t),
    }
}

fn tap_keys(keys: Keys, t: &Target) -> Keys {
    Keys {
        header: keys.header,
        packet: tap_pair(keys.packet, t),
    }
}

/// A TLS session whose packet keys feed a tap; the handshake is the wrapped session's.
struct TapSession(Box<dyn crypto::Session>, Target);

impl crypto::Session for TapSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        tap_keys(self.0.initial_keys(dst_cid, side), &self.1)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.0.handshake_data()
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.0.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        // One key: the client seals 0-RTT packets with it, the server opens them.
        let (header, packet) = self.0.early_crypto()?;
        Some((header, TapPacketKey::wrap(packet, &self.1)))
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
        self.0.write_handshake(buf).map(|k| tap_keys(k, &self.1))
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.0.next_1rtt_keys().map(|k| tap_pair(k, &self.1))
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

/// A client crypto config whose connections feed one tap (make one per connection).
pub struct TapClientConfig(Arc<dyn crypto::ClientConfig>, FrameTap);

impl TapClientConfig {
    /// `inner`'s handshakes, with the packets of the connection it starts parsed into `tap`.
    pub fn new(inner: Arc<dyn crypto::ClientConfig>, tap: FrameTap) -> Arc<Self> {
        Arc::new(TapClientConfig(inner, tap))
    }
}

impl crypto::ClientConfig for TapClientConfig {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn crypto::Session>, ConnectError> {
        let inner = self.0.clone().start_session(version, server_name, params)?;
        Ok(Box::new(TapSession(inner, Target::Conn(self.1.clone()))))
    }
}

/// A server's crypto config whose connections feed the tap in its [`AcceptSlot`] at the time
/// they are accepted (untapped when the slot is empty).
pub struct TapServerConfig(Arc<dyn crypto::ServerConfig>, AcceptSlot);

impl TapServerConfig {
    /// `inner`'s handshakes, tapped through `slot`.
    pub fn new(inner: Arc<dyn crypto::ServerConfig>, slot: AcceptSlot) -> Arc<Self> {
        Arc::new(TapServerConfig(inner, slot))
    }
}

impl crypto::ServerConfig for TapServerConfig {
    fn initial_keys(
        &self,
        version: u32,
        dst_cid: &ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        let keys = self.0.initial_keys(version, dst_cid)?;
        Ok(tap_keys(keys, &Target::Accepting(self.1.clone())))
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.0.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(
        self: Arc<Self>,
        version: u32,
        params: &TransportParameters,
    ) -> Box<dyn crypto::Session> {
        let inner = self.0.clone().start_session(version, params);
        match self.1.current() {
            Some(tap) => Box::new(TapSession(inner, Target::Conn(tap))),
            None => inner,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_types_come_from_the_first_byte() {
        assert_eq!(packet_type(0xc0), PacketType::Initial);
        assert_eq!(packet_type(0xd3), PacketType::ZeroRtt);
        assert_eq!(packet_type(0xe1), PacketType::Handshake);
        assert_eq!(packet_type(0x41), PacketType::OneRtt);
    }

    #[test]
    fn a_tap_hands_out_each_packet_once_and_forgets_old_ones() {
        let tap = FrameTap::default();
        let p = |n| TappedPacket {
            packet_type: PacketType::OneRtt,
            packet_number: n,
            raw: RawInfo {
                length: 40,
                payload_length: 1,
            },
            frames: vec![Frame::Ping],
        };
        for n in 0..100 {
            tap.record(Direction::Received, p(n));
        }
        assert_eq!(tap.take(Direction::Received, "1RTT", 99), Some(p(99)));
        assert_eq!(tap.take(Direction::Received, "1RTT", 99), None, "taken");
        assert_eq!(
            tap.take(Direction::Sent, "1RTT", 98),
            None,
            "other direction"
        );
        assert_eq!(
            tap.take(Direction::Received, "handshake", 98),
            None,
            "other type"
        );
        assert_eq!(tap.take(Direction::Received, "1RTT", 3), None, "pushed out");
    }
}
