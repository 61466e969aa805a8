//! QUIC knobs and the quinn-proto configurations built from them: transport parameters per
//! connection (qlog streams are per connection), the endpoint configs and TLS.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use quinn_proto::congestion::ControllerFactory;
use quinn_proto::{
    AckFrequencyConfig, EndpointConfig, MtuDiscoveryConfig, NoneTokenLog, ServerConfig,
    TransportConfig, ValidationTokenConfig, VarInt,
};
use serde::{Deserialize, Serialize};

use super::QuicFlowError;
use crate::agent::Side;
use crate::cc_adapter::{CcChoice, CcProbe, Factory};
use netem::wire::IPV4_UDP_OVERHEAD;

use super::endpoint::Host;
use crate::clock::{to_instant, VirtualClock};
use crate::null_crypto::{NullServerConfig, NullTag};
use crate::qlog::{FrameTap, QlogErrors, QlogFile, QlogFlusher, QuinnTrace, Vantage};
use crate::quic_common::QuicCommonKnobs;
use crate::seeded::{SeededCidGenerator, SharedRng};
use crate::tls;
use crate::workload::Workload;

/// Connection-ID length of simulated endpoints.
pub(crate) const CID_LEN: usize = 8;

/// QUIC transport knobs. Serialized field names are the scenario keys (`flow.<field>`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicKnobs {
    /// IP MTU of the path; the max UDP payload is `mtu - 28` (IPv4 + UDP headers).
    pub mtu: u16,
    /// Let quinn probe for a larger MTU (DPLPMTUD). Off by default so the MTU is what you set.
    pub mtu_discovery: bool,
    /// The knobs quinn shares with the research model (`flow.initial_rtt`, the windows, ACK
    /// frequency, 0-RTT, address tokens).
    #[serde(flatten)]
    pub common: QuicCommonKnobs,
    /// Send a PING after this long without sending anything (`None`: never, quinn's default), so
    /// a quiet connection (a blackout, an idle pause) neither reaches the idle timeout nor has
    /// its path forgotten by middleboxes.
    #[serde(default)]
    pub keep_alive: Option<Duration>,
    /// Packet protection: the real TLS ciphers, or a null AEAD with identical sizes (faster).
    pub crypto: QuicCrypto,
}

/// How QUIC packets are protected (`flow.crypto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuicCrypto {
    /// The negotiated TLS 1.3 suite (AES-128-GCM: see [`crate::tls::prefer_aes128`]).
    #[default]
    Tls,
    /// The TLS handshake runs, but packets carry their payload in clear with a 16-byte checksum
    /// as the tag and unprotected headers ([`crate::null_crypto`]): the same sizes and the
    /// same simulated results, at less CPU; pcaps are no longer decryptable.
    None,
}

choice::names!(QuicCrypto { Tls = "tls", None = "none" });

impl Default for QuicKnobs {
    /// A 1500-byte MTU, no MTU discovery, the real ciphers and the common defaults.
    fn default() -> Self {
        QuicKnobs {
            mtu: 1500,
            mtu_discovery: false,
            common: QuicCommonKnobs::default(),
            keep_alive: None,
            crypto: QuicCrypto::Tls,
        }
    }
}

/// Smallest IP MTU quinn runs with: 1200 B of UDP payload (RFC 9000 §14) plus 28 B of IPv4 and
/// UDP headers.
pub const MIN_MTU: u16 = 1228;
/// Largest IP MTU quinn runs with: quinn reserves two bytes for the Length field of a
/// long-header packet (Initial, Handshake, 0-RTT), a varint below 2^14, and asserts the packet
/// fits (a larger MTU panics inside quinn). With at most 16383 B of UDP payload no packet of the
/// datagram can exceed that, whatever the connection-ID lengths: 16383 + 28 = 16411.
pub const MAX_MTU: u16 = 16_383 + 28;

/// A knob value quinn cannot run with. The message names the knob by its scenario key
/// (`flow.<field>`), so the scenario file, `quiclab serve` and `quiclab get` refuse a value
/// with the same words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("flow.{field}: {message}")]
pub struct KnobError {
    /// The knob's field (its scenario key without `flow.`).
    pub field: &'static str,
    /// Why the value is refused.
    pub message: String,
}

/// Checks an IP MTU against quinn's limits ([`MIN_MTU`], [`MAX_MTU`]); takes any integer so a
/// reader can check a value before it narrows it.
pub fn check_mtu(mtu: u64) -> Result<u16, KnobError> {
    u16::try_from(mtu)
        .ok()
        .filter(|m| (MIN_MTU..=MAX_MTU).contains(m))
        .ok_or_else(|| KnobError {
            field: "mtu",
            message: format!(
                "{mtu} is not within {MIN_MTU} and {MAX_MTU} (QUIC needs 1200-byte UDP payloads; quinn's long-header Length field caps a datagram at 16383 B)"
            ),
        })
}

impl QuicKnobs {
    /// Largest UDP payload: the IP MTU less the IPv4 and UDP headers.
    pub fn max_udp_payload(&self) -> u16 {
        self.mtu.saturating_sub(IPV4_UDP_OVERHEAD as u16)
    }

    /// The bounds of every knob, for both engines: the scenario resolver refuses a quinn flow
    /// with this, and the real endpoints refuse their configuration with it, so a value is
    /// valid in both or in neither. Checked once, building a transport config cannot fail.
    pub fn validate(&self) -> Result<(), KnobError> {
        check_mtu(u64::from(self.mtu))?;
        for (field, v) in [
            ("stream_window", self.common.stream_window),
            ("conn_window", self.common.conn_window),
        ] {
            if VarInt::from_u64(v).is_err() {
                return Err(KnobError {
                    field,
                    message: format!(
                        "{v} B is above {} B (2^62 − 1, the largest QUIC varint)",
                        VarInt::MAX
                    ),
                });
            }
        }
        if self.common.initial_rtt.is_zero() {
            return Err(KnobError {
                field: "initial_rtt",
                message: "must be greater than zero".into(),
            });
        }
        if self.common.ack_ratio == Some(0) {
            return Err(KnobError {
                field: "ack_ratio",
                message: "0 is not within 1 and 4294967295".into(),
            });
        }
        Ok(())
    }

    /// quinn's transport config for one connection: the knobs, plus what the engine adds
    /// (`parts`). The one translation of knobs into quinn's terms, for the simulator's
    /// virtual-time endpoints and the emulator's real ones alike. Knobs should have passed
    /// [`QuicKnobs::validate`]; a window beyond a varint is clamped rather than a panic.
    pub fn transport_config(&self, parts: EngineParts) -> TransportConfig {
        let payload = self.max_udp_payload();
        let varint = |v: u64| VarInt::from_u64(v).unwrap_or(VarInt::MAX);
        let mut t = TransportConfig::default();
        t.stream_receive_window(varint(self.common.stream_window))
            .receive_window(varint(self.common.conn_window))
            .send_window(self.common.send_window)
            .initial_rtt(self.common.initial_rtt)
            .initial_mtu(payload)
            .keep_alive_interval(self.keep_alive)
            .congestion_controller_factory(parts.controller);
        if self.mtu_discovery {
            let mut m = MtuDiscoveryConfig::default();
            m.upper_bound(payload.max(1452));
            t.mtu_discovery_config(Some(m)).min_mtu(1200);
        } else {
            // Pinned: with discovery off quinn would still fall back to 1200 on suspected black holes.
            t.mtu_discovery_config(None).min_mtu(payload);
        }
        if self.common.ack_ratio.is_some() || self.common.max_ack_delay.is_some() {
            let mut a = AckFrequencyConfig::default();
            if let Some(n) = self.common.ack_ratio {
                // Threshold n − 1 means "acknowledge every n-th ack-eliciting packet".
                a.ack_eliciting_threshold(VarInt::from_u32(n.saturating_sub(1)));
            }
            if let Some(d) = self.common.max_ack_delay {
                a.max_ack_delay(Some(d));
            }
            t.ack_frequency_config(Some(a));
        }
        if let Some(n) = parts.max_bidi_streams {
            t.max_concurrent_bidi_streams(VarInt::from_u32(n));
        }
        t.qlog_stream(parts.qlog);
        t
    }

    /// The largest UDP payload an endpoint accepts: quinn's default caps it at 1472 bytes,
    /// which jumbo-frame paths exceed.
    pub fn endpoint_max_udp_payload(&self) -> u16 {
        self.max_udp_payload().max(1472)
    }
}

/// What an engine adds to the knobs in one connection's transport config.
pub struct EngineParts {
    /// The congestion controller (in virtual or in real time: see [`Factory`]).
    pub controller: Arc<dyn ControllerFactory + Send + Sync>,
    /// Concurrent bidirectional streams the peer may open (`None`: quinn's default, 100).
    pub max_bidi_streams: Option<u32>,
    /// The connection's qlog stream (streams are per connection).
    pub qlog: Option<quinn_proto::QlogStream>,
}

/// The flow-wide inputs of every connection's transport config.
pub(crate) struct Transport<'a> {
    pub knobs: &'a QuicKnobs,
    pub workload: Workload,
    pub cc: CcChoice,
}

impl Transport<'_> {
    /// A fresh transport config for one connection (qlog streams are per connection).
    pub(crate) fn config(
        &self,
        probe: Arc<CcProbe>,
        qlog: Option<quinn_proto::QlogStream>,
    ) -> Result<Arc<TransportConfig>, QuicFlowError> {
        self.knobs
            .validate()
            .map_err(|e| QuicFlowError::Invalid(e.to_string()))?;
        let max_bidi_streams = match self.workload {
            Workload::Download { streams, .. } => Some(streams.max(100)),
            _ => None,
        };
        Ok(Arc::new(self.knobs.transport_config(EngineParts {
            controller: Factory::new(self.cc, probe),
            max_bidi_streams,
            qlog,
        })))
    }
}

/// The server's config (TLS, pinned token key, virtual time; `null_tag` for `crypto = "none"`);
/// transport parameters are set per connection.
pub(crate) fn server_config(
    seed_rng: SharedRng,
    token_key: [u8; 32],
    clock: &VirtualClock,
    keylog: Option<tls::KeyLogBuffer>,
    knobs: &QuicKnobs,
    null_tag: NullTag,
) -> Result<ServerConfig, QuicFlowError> {
    let crypto = knobs.crypto;
    let server_tls: Arc<dyn quinn_proto::crypto::ServerConfig> =
        match (tls::server_config(seed_rng, clock, keylog)?, crypto) {
            (t, QuicCrypto::Tls) => t,
            (t, QuicCrypto::None) => Arc::new(NullServerConfig(t, null_tag)),
        };
    // Pinned token key: the default would draw from the OS RNG.
    let token_key = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&token_key);
    let mut server_config = ServerConfig::new(server_tls, Arc::new(token_key));
    server_config.time_source(Arc::new(clock.clone()));
    server_config.validation_token_config(knobs.validation_tokens());
    Ok(server_config)
}

impl QuicKnobs {
    /// The server's NEW_TOKEN policy (`address_token`): quinn's default (two tokens once the
    /// client's address is validated, replay refused by a Bloom-filter token log; keyed by the
    /// tokens' nonces, seeded in the simulator) or none sent and every token ignored.
    pub fn validation_tokens(&self) -> ValidationTokenConfig {
        let mut v = ValidationTokenConfig::default();
        if !self.common.address_token {
            v.sent(0).log(Arc::new(NoneTokenLog));
        }
        v
    }

    /// The client's token store (`address_token`): quinn's in-memory cache, shared by every
    /// connection of the client (config), or none.
    pub fn token_store(&self) -> Arc<dyn quinn_proto::TokenStore> {
        if self.common.address_token {
            Arc::new(quinn_proto::TokenMemoryCache::default())
        } else {
            Arc::new(quinn_proto::NoneTokenStore)
        }
    }
}

/// An endpoint config with a pinned reset key and seeded connection IDs.
pub(crate) fn endpoint_config(knobs: &QuicKnobs, root: &SharedRng) -> EndpointConfig {
    let reset_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &root.bytes32());
    let mut ep = EndpointConfig::new(Arc::new(reset_key));
    let _ = ep.max_udp_payload_size(knobs.endpoint_max_udp_payload());
    let rng = root.clone();
    ep.cid_generator(move || Box::new(SeededCidGenerator::new(rng.bytes32(), CID_LEN)));
    ep
}

/// A qlog stream for the next connection of `side` (numbered by `host.qlog_count`) and the
/// frame tap its keys must feed, when qlogs are wanted. A file that cannot be created or written
/// is recorded in `errors`; `host` keeps a flusher so the flow can flush the files still open
/// before it reports.
pub(crate) fn qlog_stream(
    dir: Option<&Path>,
    flow: &str,
    side: Side,
    host: &mut Host,
    errors: &QlogErrors,
    clock: &VirtualClock,
) -> Option<(quinn_proto::QlogStream, FrameTap)> {
    let dir = dir?;
    let n = host.qlog_count;
    host.qlog_count += 1;
    let vantage = match side {
        Side::Client => Vantage::Client,
        Side::Server | Side::Middle => Vantage::Server,
    };
    let role = vantage.name();
    let file = QlogFile::create(dir.join(format!("{flow}-{role}-{n}.sqlog")), errors)?;
    // Closed files flushed themselves when quinn dropped their connection.
    host.qlog_files.retain(QlogFlusher::is_open);
    host.qlog_files.push(file.flusher());
    let tap = FrameTap::default();
    let trace = QuinnTrace {
        title: format!("quiclab {flow} {role} {n}"),
        description: "quinn-proto 0.11.19 in the quiclab simulator (virtual time)".into(),
        vantage,
        reference_time: crate::qlog::schema::VIRTUAL_REFERENCE_TIME_MS,
        tap: Some(tap.clone()),
        clock: Some(clock.clone()),
    };
    let stream = file.into_stream(trace, to_instant(Duration::ZERO))?;
    Some((stream, tap))
}
