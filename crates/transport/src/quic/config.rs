//! QUIC knobs and the quinn-proto configurations built from them: transport parameters per
//! connection (qlog streams are per connection), the endpoint configs and TLS.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

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
use crate::qlog::{QlogErrors, QlogFile, QlogFlusher};
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

impl Default for QuicKnobs {
    /// A 1500-byte MTU, no MTU discovery, the real ciphers and the common defaults.
    fn default() -> Self {
        QuicKnobs {
            mtu: 1500,
            mtu_discovery: false,
            common: QuicCommonKnobs::default(),
            crypto: QuicCrypto::Tls,
        }
    }
}

impl QuicKnobs {
    /// Largest UDP payload: the IP MTU less the IPv4 and UDP headers.
    pub fn max_udp_payload(&self) -> u16 {
        self.mtu.saturating_sub(IPV4_UDP_OVERHEAD as u16)
    }
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
        let k = self.knobs;
        let payload = k.max_udp_payload();
        let varint = |v: u64, what: &str| {
            VarInt::from_u64(v)
                .map_err(|_| QuicFlowError::Invalid(format!("{what} too large: {v}")))
        };
        let mut t = TransportConfig::default();
        t.stream_receive_window(varint(k.common.stream_window, "stream window")?)
            .receive_window(varint(k.common.conn_window, "connection window")?)
            .send_window(k.common.send_window)
            .initial_rtt(k.common.initial_rtt)
            .initial_mtu(payload)
            .congestion_controller_factory(Factory::new(self.cc, probe));
        if k.mtu_discovery {
            let mut m = MtuDiscoveryConfig::default();
            m.upper_bound(payload.max(1452));
            t.mtu_discovery_config(Some(m)).min_mtu(1200);
        } else {
            // Pinned: with discovery off quinn would still fall back to 1200 on suspected black holes.
            t.mtu_discovery_config(None).min_mtu(payload);
        }
        if k.common.ack_ratio.is_some() || k.common.max_ack_delay.is_some() {
            let mut a = AckFrequencyConfig::default();
            if let Some(n) = k.common.ack_ratio {
                // Threshold n − 1 means "acknowledge every n-th ack-eliciting packet".
                a.ack_eliciting_threshold(VarInt::from_u32(n.saturating_sub(1)));
            }
            if let Some(d) = k.common.max_ack_delay {
                a.max_ack_delay(Some(d));
            }
            t.ack_frequency_config(Some(a));
        }
        if let Workload::Download { streams, .. } = self.workload {
            t.max_concurrent_bidi_streams(VarInt::from_u32(streams.max(100)));
        }
        t.qlog_stream(qlog);
        Ok(Arc::new(t))
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
    server_config.validation_token_config(validation_tokens(knobs.common.address_token));
    Ok(server_config)
}

/// The server's NEW_TOKEN policy: quinn's default (two tokens once the client's address is
/// validated, replay refused by a Bloom-filter token log keyed by the tokens' seeded nonces, so
/// deterministic) or none sent and every token ignored.
pub(crate) fn validation_tokens(on: bool) -> ValidationTokenConfig {
    let mut v = ValidationTokenConfig::default();
    if !on {
        v.sent(0).log(Arc::new(NoneTokenLog));
    }
    v
}

/// An endpoint config with a pinned reset key and seeded connection IDs.
pub(crate) fn endpoint_config(knobs: &QuicKnobs, root: &SharedRng) -> EndpointConfig {
    let reset_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &root.bytes32());
    let mut ep = EndpointConfig::new(Arc::new(reset_key));
    // quinn's default caps UDP payloads at 1472 bytes; jumbo-frame scenarios need more.
    let _ = ep.max_udp_payload_size(knobs.max_udp_payload().max(1472));
    let rng = root.clone();
    ep.cid_generator(move || Box::new(SeededCidGenerator::new(rng.bytes32(), CID_LEN)));
    ep
}

/// A qlog stream for the next connection of `side` (numbered by `host.qlog_count`), when qlogs
/// are wanted. A file that cannot be created or written is recorded in `errors`; `host` keeps a
/// flusher so the flow can flush the files still open before it reports.
pub(crate) fn qlog_stream(
    dir: Option<&Path>,
    flow: &str,
    side: Side,
    host: &mut Host,
    errors: &QlogErrors,
) -> Option<quinn_proto::QlogStream> {
    let dir = dir?;
    let n = host.qlog_count;
    host.qlog_count += 1;
    let role = match side {
        Side::Client => "client",
        Side::Server | Side::Middle => "server",
    };
    let file = QlogFile::create(dir.join(format!("{flow}-{role}-{n}.qlog")), errors)?;
    // Closed files flushed themselves when quinn dropped their connection.
    host.qlog_files.retain(QlogFlusher::is_open);
    host.qlog_files.push(file.flusher());
    file.into_stream(format!("quiclab {flow} {role}"), to_instant(Duration::ZERO))
}
