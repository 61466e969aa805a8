//! QUIC knobs shared by server and client (mirroring the simulator's `QuicKnobs` where quinn
//! allows), and the quinn transport configuration and UDP sockets built from them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use cc::config::{CcConfig, CommonCcConfig, CubicProfile, RenoCounting};
use quinn::{MtuDiscoveryConfig, TransportConfig, VarInt};
use transport::cc_adapter::{CcChoice, CcProbe, Factory};
use transport::qlog::{QlogErrors, QlogFile};

use crate::sockopt;

/// The congestion controller of a QUIC endpoint: one of quiclab's (crate `cc`, through
/// [`transport::cc_adapter`], the same code the simulator runs) or one of quinn's built-ins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuicCc(pub CcChoice);

impl Default for QuicCc {
    /// quiclab's CUBIC with HyStart++ and the scenario format's default knobs.
    fn default() -> Self {
        QuicCc(ours("cubic").unwrap_or_default())
    }
}

/// Names accepted by `--quic-cc` (the scenario format's `flow.cc` values).
pub const QUIC_CC_NAMES: &[&str] = &[
    "newreno",
    "newreno-approx",
    "cubic",
    "quinn-newreno",
    "quinn-cubic",
    "quinn-bbr",
];

/// One of our controllers by scenario name, with the scenario's default knobs (initial window
/// 10, minimum window 2, β 0.7 for CUBIC and 0.5 for NewReno, HyStart++ on).
fn ours(name: &str) -> Option<CcChoice> {
    let common = |beta| CommonCcConfig {
        initial_window_packets: 10,
        loss_reduction_factor: beta,
        minimum_window_packets: 2,
    };
    Some(CcChoice::Ours(match name {
        "newreno" => CcConfig::NewReno {
            counting: RenoCounting::Exact,
            common: common(0.5),
        },
        "newreno-approx" => CcConfig::NewReno {
            counting: RenoCounting::Approximate,
            common: common(0.5),
        },
        // QUIC's default profile, as the scenario's (quinn, the reference, follows the RFC).
        "cubic" => CcConfig::Cubic {
            hystart: true,
            profile: CubicProfile::Rfc9438,
            common: common(0.7),
        },
        _ => return None,
    }))
}

impl FromStr for QuicCc {
    type Err = String;

    /// A scenario `flow.cc` name (`cubic` is quiclab's CUBIC, `quinn-cubic` quinn's), or a
    /// controller with every knob as JSON (what the emulator passes, so a scenario's knobs reach
    /// the endpoint unchanged).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim_start().starts_with('{') || s.trim_start().starts_with('"') {
            return serde_json::from_str::<CcChoice>(s)
                .map(QuicCc)
                .map_err(|e| format!("invalid congestion controller JSON {s:?}: {e}"));
        }
        let lower = s.to_ascii_lowercase();
        let name = match lower.as_str() {
            // Older spellings of this flag.
            "reno" | "new-reno" => "newreno",
            "bbr" => "quinn-bbr",
            other => other,
        };
        match name {
            "quinn-newreno" => Ok(QuicCc(CcChoice::QuinnNewReno)),
            "quinn-cubic" => Ok(QuicCc(CcChoice::QuinnCubic)),
            "quinn-bbr" => Ok(QuicCc(CcChoice::QuinnBbr)),
            other => ours(other).map(QuicCc).ok_or_else(|| {
                format!(
                    "unknown QUIC congestion controller {s:?} ({})",
                    QUIC_CC_NAMES.join(", ")
                )
            }),
        }
    }
}

impl QuicCc {
    /// The controller's scenario name (`cubic`, `quinn-cubic`, …).
    pub fn name(self) -> &'static str {
        transport::linux_config::cc_name(&self.0)
    }

    /// The argument of `--quic-cc` that selects exactly this controller and its knobs.
    pub fn to_arg(self) -> String {
        match self.0 {
            CcChoice::Ours(_) => serde_json::to_string(&self.0).unwrap_or_else(|_| "cubic".into()),
            _ => self.name().into(),
        }
    }
}

/// QUIC transport knobs for quinn (defaults match the simulator's scenario defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct QuicOptions {
    /// Congestion controller.
    pub cc: QuicCc,
    /// IP MTU of the path; quinn's initial max UDP payload is `mtu - 28` like in the simulator.
    pub mtu: u16,
    /// Let quinn probe for a larger MTU (off by default so the MTU is what you set).
    pub mtu_discovery: bool,
    /// Per-stream receive window (bytes).
    pub stream_window: u64,
    /// Connection receive window (bytes).
    pub conn_window: u64,
    /// Send buffer limit (bytes).
    pub send_window: u64,
    /// RTT estimate before the first sample.
    pub initial_rtt: Duration,
    /// Let quinn hand batches to the kernel as one GSO super-datagram.
    pub gso: bool,
    /// Maximum concurrent bidirectional streams the peer may open.
    pub max_streams: u32,
    /// Idle timeout after which a silent connection is closed.
    pub idle_timeout: Duration,
    /// Directory for one qlog file per connection.
    pub qlog_dir: Option<PathBuf>,
    /// Address-validation tokens (the scenario's `flow.address_token`): the server sends
    /// NEW_TOKEN frames and accepts them back once (quinn's default token log); the client keeps
    /// them across its connections and presents one in the next Initial. Off: none sent, stored
    /// or accepted.
    pub address_token: bool,
    /// Server only: answer requests that arrive as 0-RTT data before the handshake completes
    /// (0.5-RTT), as the simulator's quinn server does; the server's HTTP/3 set-up goes out in
    /// 0.5-RTT too, once the whole ClientHello is read (earlier, quinn never woke the stream
    /// opening and clients with a two-packet ClientHello, quic-go and Chromium, stalled). Off by
    /// default: a request that is not 0-RTT arrives with the client's Finished and gains
    /// nothing, and the conservative server sends nothing before the handshake is confirmed;
    /// the emulator turns it on for flows with `zero_rtt = true`, where it is what 0-RTT saves.
    pub early_response: bool,
}

impl Default for QuicOptions {
    fn default() -> Self {
        Self {
            cc: QuicCc::default(),
            mtu: 1500,
            mtu_discovery: false,
            stream_window: 16_000_000,
            conn_window: 24_000_000,
            send_window: 32_000_000,
            initial_rtt: Duration::from_millis(333),
            gso: true,
            max_streams: 1024,
            idle_timeout: Duration::from_secs(30),
            qlog_dir: None,
            address_token: true,
            early_response: false,
        }
    }
}

/// Errors from invalid QUIC knobs or socket set-up.
#[derive(Debug, thiserror::Error)]
pub enum QuicSetupError {
    /// A knob is out of range.
    #[error("invalid QUIC option: {0}")]
    Invalid(String),
    /// Binding or configuring the UDP socket failed.
    #[error("UDP socket {addr}: {cause}")]
    Socket {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        cause: std::io::Error,
    },
}

impl QuicOptions {
    /// Checks the knobs once, so building per-connection configs later cannot fail.
    pub fn validate(&self) -> Result<(), QuicSetupError> {
        if !(1228..=65_535).contains(&self.mtu) {
            return Err(QuicSetupError::Invalid(format!(
                "mtu {} outside 1228..=65535 (QUIC needs 1200-byte UDP payloads)",
                self.mtu
            )));
        }
        for (v, what) in [
            (self.stream_window, "stream window"),
            (self.conn_window, "connection window"),
        ] {
            if VarInt::from_u64(v).is_err() {
                return Err(QuicSetupError::Invalid(format!("{what} too large: {v}")));
            }
        }
        Ok(())
    }

    /// Max UDP payload implied by the IP MTU (IPv4 + UDP headers).
    pub fn max_udp_payload(&self) -> u16 {
        self.mtu
            .saturating_sub(netem::wire::IPV4_UDP_OVERHEAD as u16)
            .max(1200)
    }

    /// A quinn transport config for one connection (`qlog` is per connection).
    pub fn transport_config(&self, qlog: Option<quinn_proto::QlogStream>) -> TransportConfig {
        let mut t = TransportConfig::default();
        // validate() guarantees these fit; clamp rather than panic if a caller skipped it.
        let varint = |v: u64| VarInt::from_u64(v).unwrap_or(VarInt::MAX);
        t.stream_receive_window(varint(self.stream_window))
            .receive_window(varint(self.conn_window))
            .send_window(self.send_window)
            .initial_rtt(self.initial_rtt)
            .initial_mtu(self.max_udp_payload())
            .max_concurrent_bidi_streams(VarInt::from_u32(self.max_streams))
            .enable_segmentation_offload(self.gso)
            .max_idle_timeout(
                VarInt::try_from(self.idle_timeout.as_millis() as u64)
                    .ok()
                    .map(Into::into),
            );
        if self.mtu_discovery {
            let mut m = MtuDiscoveryConfig::default();
            m.upper_bound(self.max_udp_payload().max(1452));
            t.mtu_discovery_config(Some(m)).min_mtu(1200);
        } else {
            // With discovery off quinn would still fall back to 1200 on suspected black holes.
            t.mtu_discovery_config(None).min_mtu(self.max_udp_payload());
        }
        // The simulator's factory: our controllers (clock adapted to real instants) or quinn's.
        t.congestion_controller_factory(Factory::real_time(
            self.cc.0,
            Arc::new(CcProbe::default()),
        ));
        t.qlog_stream(qlog);
        t
    }

    /// The server's NEW_TOKEN policy: quinn's default (two tokens per validated client, a
    /// Bloom-filter log refusing a token's second use) or none sent and every token ignored.
    pub fn validation_tokens(&self) -> quinn::ValidationTokenConfig {
        let mut v = quinn::ValidationTokenConfig::default();
        if !self.address_token {
            v.sent(0).log(Arc::new(quinn_proto::NoneTokenLog));
        }
        v
    }

    /// The client's token store: quinn's in-memory cache (kept by the client config, so shared
    /// by every connection the client makes) or none.
    pub fn token_store(&self) -> Arc<dyn quinn_proto::TokenStore> {
        if self.address_token {
            Arc::new(quinn_proto::TokenMemoryCache::default())
        } else {
            Arc::new(quinn_proto::NoneTokenStore)
        }
    }

    /// Opens a qlog stream for the next connection of `role`, when a qlog directory is set.
    pub fn qlog_stream(&self, role: &str) -> Option<quinn_proto::QlogStream> {
        let dir = self.qlog_dir.as_ref()?;
        qlog_stream_in(dir, role)
    }
}

fn qlog_stream_in(dir: &Path, role: &str) -> Option<quinn_proto::QlogStream> {
    // pid + counter keep names unique across processes and connections.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{role}-{}-{n}.qlog", std::process::id()));
    QlogFile::create(path, &QLOG_ERRORS)?.into_stream(format!("quiclab {role} {n}"), Instant::now())
}

/// qlog problems of this process not yet taken by [`take_qlog_errors`]: one sink per process,
/// as each endpoint process reports for itself.
static QLOG_ERRORS: LazyLock<QlogErrors> = LazyLock::new(QlogErrors::default);

/// Takes the qlog problems (files that could not be created or written) recorded in this process
/// since the previous call: quinn only logs a failed qlog write, so the endpoints collect them
/// here and put them in their reports instead of losing them.
pub fn take_qlog_errors() -> Vec<String> {
    QLOG_ERRORS.take()
}

/// Binds a UDP socket for quinn with raised buffers (dual-stack when bound to `[::]`).
pub fn bind_udp(addr: SocketAddr) -> Result<std::net::UdpSocket, QuicSetupError> {
    let err = |cause| QuicSetupError::Socket { addr, cause };
    let domain = socket2::Domain::for_address(addr);
    let sock = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))
        .map_err(err)?;
    if addr.is_ipv6() {
        // Accept IPv4 too on `[::]`, like the TCP listener does.
        let _ = sock.set_only_v6(false);
    }
    sockopt::raise_udp_buffers(&sock, sockopt::UDP_BUFFER_BYTES);
    sock.bind(&addr.into()).map_err(err)?;
    Ok(sock.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The writer itself is tested in `transport::qlog`; this checks the process-wide sink.
    #[test]
    fn an_uncreatable_qlog_is_recorded_for_the_report() {
        let tmp = fsutil::PrivateDir::new("qlog-not-a-dir-").expect("temp dir");
        let dir = tmp.path().join("file");
        std::fs::write(&dir, b"a file, not a directory").expect("write");
        assert!(qlog_stream_in(&dir, "client").is_none());
        tmp.remove().expect("clean up");
        let errs: Vec<String> = take_qlog_errors()
            .into_iter()
            .filter(|e| e.contains(&dir.display().to_string()))
            .collect();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("cannot create qlog"), "{errs:?}");
    }
}
