//! quiche's configurations built from a flow's knobs and controller: TLS (the simulated
//! server's Ed25519 identity, X25519 key exchange), transport parameters, congestion control.
//! Build them inside [`super::interpose::Virtual::enter`]: quiche reads the clock here too.

use ::quiche::CongestionControlAlgorithm;
use boring::pkey::PKey;
use boring::ssl::{SslContextBuilder, SslMethod, SslSignatureAlgorithm};
use boring::x509::X509;
use congestion::config::{CcConfig, CubicProfile, RenoCounting};

use super::knobs::QuicheKnobs;
use crate::cc_adapter::CcChoice;
use crate::tls;

/// Application protocol both ends offer (ALPN).
const ALPN: &[u8] = b"quiclab";
/// Idle timeout of both ends, as quinn's default.
const IDLE_TIMEOUT_MS: u64 = 30_000;
/// Concurrent bidirectional and unidirectional streams each end allows its peer.
const MAX_STREAMS: u64 = 1_000;

/// The controller quiche runs for a flow's `cc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuicheController {
    /// quiche's algorithm.
    pub algorithm: CongestionControlAlgorithm,
    /// HyStart++ (CUBIC only).
    pub hystart: bool,
    /// Initial congestion window in packets.
    pub initial_window: usize,
}

/// The names of `flow.cc` a quiche flow accepts.
pub const QUICHE_CC_NAMES: [&str; 3] = ["newreno", "cubic", "quiche-bbr2"];

/// quiche's controller for `cc`: `newreno` with RFC 9002's exact counting is quiche's Reno,
/// `cubic` with the RFC 9438 profile its CUBIC (with or without HyStart++), `quiche-bbr2` its
/// BBRv2 (gcongestion). Anything else has no counterpart in quiche.
pub fn controller(cc: &CcChoice) -> Result<QuicheController, String> {
    let refuse = || {
        format!(
            "cc = {:?} has no counterpart in quiche; quiche runs {}",
            cc.name(),
            QUICHE_CC_NAMES.join(", ")
        )
    };
    let (algorithm, hystart, initial_window) = match cc {
        CcChoice::Ours(CcConfig::NewReno {
            counting: RenoCounting::Exact,
            common,
        }) => (
            CongestionControlAlgorithm::Reno,
            false,
            common.initial_window_packets,
        ),
        CcChoice::Ours(CcConfig::Cubic {
            hystart,
            profile: CubicProfile::Rfc9438,
            common,
        }) => (
            CongestionControlAlgorithm::CUBIC,
            *hystart,
            common.initial_window_packets,
        ),
        CcChoice::QuicheBbr2 {
            initial_window_packets,
        } => (
            CongestionControlAlgorithm::Bbr2Gcongestion,
            false,
            *initial_window_packets,
        ),
        _ => return Err(refuse()),
    };
    Ok(QuicheController {
        algorithm,
        hystart,
        initial_window: usize::try_from(initial_window).unwrap_or(usize::MAX),
    })
}

/// Which end a configuration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Client,
    /// The server, with the key of its session tickets (reproducible 0-RTT).
    Server {
        ticket_key: [u8; 48],
    },
}

/// One end's quiche configuration.
pub(crate) fn build(
    end: End,
    knobs: &QuicheKnobs,
    cc: &QuicheController,
    keylog: bool,
) -> Result<::quiche::Config, String> {
    let tls_err = |e: boring::error::ErrorStack| format!("quiche TLS context: {e}");
    let mut ctx = SslContextBuilder::new(SslMethod::tls()).map_err(tls_err)?;
    match end {
        // BoringSSL clients do not offer Ed25519 signatures by default; the simulated
        // server's identity is Ed25519 (deterministic signatures keep datagrams identical).
        End::Client => ctx
            .set_verify_algorithm_prefs(&[
                SslSignatureAlgorithm::ED25519,
                SslSignatureAlgorithm::ECDSA_SECP256R1_SHA256,
                SslSignatureAlgorithm::RSA_PSS_RSAE_SHA256,
            ])
            .map_err(tls_err)?,
        End::Server { .. } => {
            let (cert, key) = tls::server_identity_der();
            let cert = X509::from_der(cert).map_err(tls_err)?;
            let key = PKey::private_key_from_der(key).map_err(tls_err)?;
            ctx.set_certificate(&cert).map_err(tls_err)?;
            ctx.set_private_key(&key).map_err(tls_err)?;
        }
    }
    let q = |e: ::quiche::Error| format!("quiche configuration: {e}");
    let mut c = ::quiche::Config::with_boring_ssl_ctx_builder(::quiche::PROTOCOL_VERSION, ctx)
        .map_err(q)?;
    // X25519 only: BoringSSL's default hybrid X25519MLKEM768 draws from its own generator,
    // past the seeded RAND_bytes, and datagram bytes would differ between runs.
    c.set_curves_list("X25519").map_err(q)?;
    c.set_application_protos(&[ALPN]).map_err(q)?;
    // Both ends are ours (the simulated server's identity is fixed); quinn's simulated client
    // verifies that chain once per process, quiche's does not.
    c.verify_peer(false);
    c.set_max_idle_timeout(IDLE_TIMEOUT_MS);
    let payload = knobs.max_udp_payload();
    c.set_max_recv_udp_payload_size(payload);
    c.set_max_send_udp_payload_size(payload);
    c.discover_pmtu(knobs.mtu_discovery);
    c.set_initial_rtt(knobs.initial_rtt);
    c.set_initial_max_data(knobs.conn_window);
    c.set_max_connection_window(knobs.conn_window);
    c.set_initial_max_stream_data_bidi_local(knobs.stream_window);
    c.set_initial_max_stream_data_bidi_remote(knobs.stream_window);
    c.set_initial_max_stream_data_uni(knobs.stream_window);
    c.set_max_stream_window(knobs.stream_window);
    c.set_initial_max_streams_bidi(MAX_STREAMS);
    c.set_initial_max_streams_uni(MAX_STREAMS);
    c.set_disable_active_migration(true);
    if let Some(d) = knobs.max_ack_delay {
        c.set_max_ack_delay(d.as_millis() as u64);
    }
    c.set_cc_algorithm(cc.algorithm);
    c.enable_hystart(cc.hystart);
    c.set_initial_congestion_window_packets(cc.initial_window);
    // quiche paces only under BBRv2: Reno and CUBIC release every packet at once.
    c.enable_pacing(true);
    if knobs.zero_rtt {
        c.enable_early_data();
    }
    if let End::Server { ticket_key } = end {
        c.set_ticket_key(&ticket_key).map_err(q)?;
    }
    if keylog {
        c.log_keys();
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Both ends built from the knobs complete a handshake (in memory, on the real clock: no
    /// simulation here) and advertise the knobs' transport parameters.
    #[test]
    fn both_ends_advertise_the_knobs_transport_parameters() {
        let knobs = QuicheKnobs {
            max_ack_delay: Some(Duration::from_millis(7)),
            stream_window: 100_000,
            conn_window: 300_000,
            ..QuicheKnobs::default()
        };
        let cc = controller(&CcChoice::default()).unwrap();
        let mut client_cfg = build(End::Client, &knobs, &cc, false).unwrap();
        let mut server_cfg = build(
            End::Server {
                ticket_key: [1; 48],
            },
            &knobs,
            &cc,
            false,
        )
        .unwrap();
        let (ca, sa) = (
            "10.0.0.1:1000".parse().unwrap(),
            "10.0.1.1:443".parse().unwrap(),
        );
        let (cid_c, cid_s) = ([1u8; 8], [2u8; 8]);
        let mut client = ::quiche::connect(
            Some(tls::SERVER_NAME),
            &::quiche::ConnectionId::from_ref(&cid_c),
            ca,
            sa,
            &mut client_cfg,
        )
        .unwrap();
        let mut server = ::quiche::accept(
            &::quiche::ConnectionId::from_ref(&cid_s),
            None,
            sa,
            ca,
            &mut server_cfg,
        )
        .unwrap();
        let mut buf = [0u8; 65_535];
        for _ in 0..20 {
            while let Ok((n, _)) = client.send(&mut buf) {
                let info = ::quiche::RecvInfo { from: ca, to: sa };
                let _ = server.recv(&mut buf[..n], info);
            }
            while let Ok((n, _)) = server.send(&mut buf) {
                let info = ::quiche::RecvInfo { from: sa, to: ca };
                let _ = client.recv(&mut buf[..n], info);
            }
        }
        assert!(client.is_established() && server.is_established());
        for end in [&client, &server] {
            let p = end.peer_transport_params().expect("the peer's parameters");
            assert_eq!(p.max_ack_delay, 7);
            assert_eq!(p.initial_max_data, 300_000);
            assert_eq!(p.initial_max_stream_data_bidi_local, 100_000);
        }
    }
}
