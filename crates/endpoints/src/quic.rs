//! The QUIC configuration of server and client: the simulator's knobs (`QuicKnobs`) and its
//! builder of quinn's transport config, plus the settings only a real endpoint has, and the
//! UDP sockets.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use choice::Choice;
use congestion::config::{CcConfig, CommonCcConfig, CubicProfile, RenoCounting};
use quinn::{TransportConfig, VarInt};
use serde::{Deserialize, Serialize};
use transport::cc_adapter::{CcChoice, CcProbe, Factory, OurCc, QuinnCc, CC_NAMES};
use transport::qlog::{FrameTap, QlogErrors, QlogFile, QuinnTrace, Vantage};
use transport::quic::config::EngineParts;
pub use transport::quic::config::KnobError;
pub use transport::quic::{QuicCrypto, QuicKnobs};
pub use transport::quic_common::QuicCommonKnobs;

use crate::sockopt;

/// The congestion controller of a QUIC endpoint: one of quiclab's (crate `congestion`, through
/// [`transport::cc_adapter`], the same code the simulator runs) or one of quinn's built-ins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuicCc(pub CcChoice);

impl Default for QuicCc {
    /// quiclab's CUBIC with HyStart++ and the scenario format's default knobs.
    fn default() -> Self {
        QuicCc(ours(OurCc::Cubic).unwrap_or_default())
    }
}

/// One of our controllers with the scenario's default knobs (initial window 10, minimum
/// window 2, β 0.7 for CUBIC and 0.5 for NewReno, HyStart++ on). A real endpoint always runs
/// a controller: `none` has no window limit, so it is not offered here.
fn ours(cc: OurCc) -> Option<CcChoice> {
    let common = |beta| CommonCcConfig {
        initial_window_packets: 10,
        loss_reduction_factor: beta,
        minimum_window_packets: 2,
    };
    Some(CcChoice::Ours(match cc {
        OurCc::NewReno => CcConfig::NewReno {
            counting: RenoCounting::Exact,
            common: common(0.5),
        },
        OurCc::NewRenoApprox => CcConfig::NewReno {
            counting: RenoCounting::Approximate,
            common: common(0.5),
        },
        // QUIC's default profile, as the scenario's (quinn, the reference, follows the RFC).
        OurCc::Cubic => CcConfig::Cubic {
            hystart: true,
            profile: CubicProfile::Rfc9438,
            common: common(0.7),
        },
        // quinn passes no per-ACK ECN counts to a controller, which DCTCP and Prague need,
        // nor delivery-rate samples, which BBR and BBRv3 need (quinn's own is quinn-bbr).
        OurCc::None | OurCc::Dctcp | OurCc::Prague | OurCc::Bbr | OurCc::Bbr3 => return None,
    }))
}

fn ours_on_quinn(name: &str) -> bool {
    !matches!(
        OurCc::from_name(name),
        Some(OurCc::None | OurCc::Dctcp | OurCc::Prague | OurCc::Bbr | OurCc::Bbr3)
    )
}

/// Names accepted by `--quic-cc`: the scenario's `flow.cc` values a real endpoint runs.
pub fn quic_cc_names() -> Vec<&'static str> {
    CC_NAMES
        .iter()
        .copied()
        .filter(|n| ours_on_quinn(n))
        .collect()
}

impl FromStr for QuicCc {
    type Err = String;

    /// A scenario `flow.cc` name (`cubic` is quiclab's CUBIC, `quinn-cubic` quinn's), or a
    /// controller with every knob as JSON (as in a serialized [`QuicConfig`]).
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
        let chosen = match (QuinnCc::from_name(name), OurCc::from_name(name)) {
            (Some(q), _) => Some(CcChoice::quinn(q)),
            (None, Some(o)) => ours(o),
            (None, None) => None,
        };
        chosen.map(QuicCc).ok_or_else(|| {
            format!(
                "unknown QUIC congestion controller {s:?} ({})",
                quic_cc_names().join(", ")
            )
        })
    }
}

impl QuicCc {
    /// The controller's scenario name (`cubic`, `quinn-cubic`, …).
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

/// The QUIC configuration of a real endpoint: the scenario's knobs ([`QuicKnobs`], with the
/// scenario's defaults and bounds, built into quinn's config by the simulator's builder) plus
/// what only a real endpoint has. Serialized, it is what the emulator hands `quiclab serve`
/// and `quiclab get` (`--config`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuicConfig {
    /// The transport knobs, as a scenario's `flow.*` keys set them.
    pub knobs: QuicKnobs,
    /// Congestion controller with its knobs (the scenario's `flow.cc`).
    pub cc: CcChoice,
    /// Let quinn hand batches to the kernel as one GSO super-datagram.
    pub gso: bool,
    /// Maximum concurrent bidirectional streams the peer may open.
    pub max_streams: u32,
    /// Idle timeout after which a silent connection is closed.
    pub idle_timeout: Duration,
    /// Directory for one qlog file per connection.
    pub qlog_dir: Option<PathBuf>,
    /// Server only: answer requests that arrive as 0-RTT data before the handshake completes
    /// (0.5-RTT), as the simulator's quinn server does; the server's HTTP/3 set-up goes out in
    /// 0.5-RTT too, once the whole ClientHello is read (quinn does not wake the stream opening
    /// earlier, and clients with a two-packet ClientHello, quic-go and Chromium, would stall).
    /// Off by default: a request that is not 0-RTT arrives with the client's Finished and
    /// gains nothing, and the conservative server sends nothing before the handshake is
    /// confirmed; the emulator turns it on for flows with `zero_rtt = true`, where it is what
    /// 0-RTT saves.
    pub early_response: bool,
}

impl Default for QuicConfig {
    /// The scenario's default knobs with quiclab's CUBIC, GSO, 1024 streams, a 30 s idle timeout.
    fn default() -> Self {
        Self {
            knobs: QuicKnobs::default(),
            cc: QuicCc::default().0,
            gso: true,
            max_streams: 1024,
            idle_timeout: Duration::from_secs(30),
            qlog_dir: None,
            early_response: false,
        }
    }
}

/// Errors from invalid QUIC knobs or socket set-up.
#[derive(Debug, thiserror::Error)]
pub enum QuicSetupError {
    /// A knob is out of the bounds both engines share.
    #[error("invalid QUIC configuration: {0}")]
    Knob(#[from] KnobError),
    /// Binding or configuring the UDP socket failed.
    #[error("UDP socket {addr}: {cause}")]
    Socket {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        cause: std::io::Error,
    },
}

impl QuicConfig {
    /// Checks the knobs once (the bounds the scenario resolver checks, [`QuicKnobs::validate`]),
    /// so building per-connection configs later cannot fail.
    pub fn validate(&self) -> Result<(), QuicSetupError> {
        self.knobs.validate()?;
        if self.knobs.crypto != QuicCrypto::Tls {
            return Err(KnobError {
                field: "crypto",
                message:
                    "\"none\" (a null AEAD) exists only in the simulator: real endpoints speak TLS"
                        .into(),
            }
            .into());
        }
        Ok(())
    }

    /// A quinn transport config for one connection (`qlog` is per connection): the knobs
    /// through the simulator's builder, with quiclab's controller in real time.
    pub fn transport_config(&self, qlog: Option<quinn_proto::QlogStream>) -> TransportConfig {
        let mut t = self.knobs.transport_config(EngineParts {
            controller: Factory::real_time(self.cc, Arc::new(CcProbe::default())),
            max_bidi_streams: Some(self.max_streams),
            qlog,
        });
        t.enable_segmentation_offload(self.gso).max_idle_timeout(
            VarInt::try_from(self.idle_timeout.as_millis() as u64)
                .ok()
                .map(Into::into),
        );
        t
    }

    /// A quinn endpoint on `udp` (a server when `server` is set). With `flow.ecn` off, the
    /// socket hides ECN from quinn ([`NoEcnSocket`]), as the simulator's quinn without ECN;
    /// with it on, quinn sends ECT(0) and reads the codepoints, as it does by default wherever
    /// the socket reports them.
    pub fn endpoint(
        &self,
        udp: std::net::UdpSocket,
        server: Option<quinn::ServerConfig>,
    ) -> std::io::Result<quinn::Endpoint> {
        let runtime =
            quinn::default_runtime().ok_or_else(|| std::io::Error::other("no async runtime"))?;
        let socket = runtime.wrap_udp_socket(udp)?;
        let socket: Arc<dyn quinn::AsyncUdpSocket> = if self.knobs.common.ecn {
            socket
        } else {
            Arc::new(NoEcnSocket(socket))
        };
        quinn::Endpoint::new_with_abstract_socket(self.endpoint_config(), server, socket, runtime)
    }

    /// The endpoint config: quinn's, accepting the UDP payloads the MTU allows.
    pub fn endpoint_config(&self) -> quinn::EndpointConfig {
        let mut ep = quinn::EndpointConfig::default();
        // The knobs passed validation: the payload is within quinn's bounds.
        let _ = ep.max_udp_payload_size(self.knobs.endpoint_max_udp_payload());
        ep
    }

    /// Opens a qlog stream for the next connection of `vantage`, when a qlog directory is set,
    /// with the frame tap the connection's keys must feed.
    pub fn qlog_stream(&self, vantage: Vantage) -> Option<(quinn_proto::QlogStream, FrameTap)> {
        let dir = self.qlog_dir.as_ref()?;
        qlog_stream_in(dir, vantage)
    }
}

fn qlog_stream_in(dir: &Path, vantage: Vantage) -> Option<(quinn_proto::QlogStream, FrameTap)> {
    // pid + counter keep names unique across processes and connections.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let role = vantage.name();
    let path = dir.join(format!("{role}-{}-{n}.sqlog", std::process::id()));
    let file = QlogFile::create(path, &QLOG_ERRORS)?;
    let start = Instant::now();
    // The events' time zero on the wall clock, so tools can line up client and server traces.
    let reference_time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    let tap = FrameTap::default();
    let trace = QuinnTrace {
        title: format!("quiclab {role} {n}"),
        description: "quinn 0.11 (quinn-proto 0.11.19), a quiclab endpoint".into(),
        vantage,
        reference_time,
        tap: Some(tap.clone()),
        clock: None,
    };
    Some((file.into_stream(trace, start)?, tap))
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
/// A UDP socket that hides ECN from quinn: datagrams leave Not-ECT whatever quinn asks for,
/// and quinn learns no received codepoint (as on a socket without `IP_RECVTOS`), so its ACKs
/// carry no ECN counts and its peer's validation turns ECN off too.
#[derive(Debug)]
struct NoEcnSocket(Arc<dyn quinn::AsyncUdpSocket>);

impl quinn::AsyncUdpSocket for NoEcnSocket {
    fn create_io_poller(self: Arc<Self>) -> std::pin::Pin<Box<dyn quinn::UdpPoller>> {
        self.0.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &quinn::udp::Transmit<'_>) -> std::io::Result<()> {
        self.0.try_send(&quinn::udp::Transmit {
            ecn: None,
            ..*transmit
        })
    }

    fn poll_recv(
        &self,
        cx: &mut std::task::Context<'_>,
        bufs: &mut [std::io::IoSliceMut<'_>],
        meta: &mut [quinn::udp::RecvMeta],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = self.0.poll_recv(cx, bufs, meta);
        if let std::task::Poll::Ready(Ok(n)) = polled {
            for m in meta.iter_mut().take(n) {
                m.ecn = None;
            }
        }
        polled
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.0.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.0.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.0.may_fragment()
    }
}

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
        assert!(qlog_stream_in(&dir, Vantage::Client).is_none());
        tmp.remove().expect("clean up");
        let errs: Vec<String> = take_qlog_errors()
            .into_iter()
            .filter(|e| e.contains(&dir.display().to_string()))
            .collect();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("cannot create qlog"), "{errs:?}");
    }
}
