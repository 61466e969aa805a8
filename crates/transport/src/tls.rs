//! TLS 1.3 configurations for simulated QUIC endpoints: seeded, virtual-timed, key-logged.

use std::sync::{Arc, Mutex, OnceLock};

use rustls::client::{VerifierBuilderError, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};

use crate::clock::VirtualClock;
use crate::seeded::{seeded_provider, SharedRng};

/// DER of the simulated server's self-signed Ed25519 certificate (see certs/README.md).
const SERVER_CERT_DER: &[u8] = include_bytes!("../certs/server.cert.der");
/// PKCS#8 DER of its private key.
const SERVER_KEY_DER: &[u8] = include_bytes!("../certs/server.key.der");
/// Name the simulated client asks for (in the certificate's subjectAltName).
pub const SERVER_NAME: &str = "server.quiclab";

/// Collects NSS key-log lines (SSLKEYLOGFILE format) so Wireshark can decrypt the pcap.
#[derive(Debug, Default, Clone)]
pub struct KeyLogBuffer(Arc<Mutex<String>>);

impl KeyLogBuffer {
    /// All lines logged so far.
    pub fn contents(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl rustls::KeyLog for KeyLogBuffer {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let mut line =
            String::with_capacity(label.len() + 2 * (client_random.len() + secret.len()) + 3);
        line.push_str(label);
        line.push(' ');
        push_hex(&mut line, client_random);
        line.push(' ');
        push_hex(&mut line, secret);
        line.push('\n');
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_str(&line);
    }
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
}

/// The AES-128-GCM suites: TLS 1.3's and TLS 1.2's ECDHE ones.
const AES128_GCM: [rustls::CipherSuite; 3] = [
    rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
    rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
];

/// `suites` with the AES-128-GCM suites moved to the front, the rest in their order: the
/// preference of browsers (issue 16), which servers honour (rustls, like most TLS 1.3 servers,
/// follows the client's order by default). Both engines use it, so the simulator and the
/// emulator negotiate the same suite (TLS_AES_128_GCM_SHA256).
pub fn prefer_aes128(
    mut suites: Vec<rustls::SupportedCipherSuite>,
) -> Vec<rustls::SupportedCipherSuite> {
    // A stable sort keeps each group's own order.
    suites.sort_by_key(|s| !AES128_GCM.contains(&s.suite()));
    suites
}

/// Errors building TLS configurations (only on a broken build: the identity is compiled in).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rustls rejected a configuration.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The provider lacks the QUIC initial cipher suite.
    #[error("TLS configuration: {0}")]
    Suite(#[from] quinn_proto::crypto::rustls::NoInitialCipherSuite),
    /// The certificate verifier could not be built.
    #[error("TLS configuration: {0}")]
    Verifier(#[from] VerifierBuilderError),
}

/// The simulated server's certificate and signing key, parsed and checked once per process and
/// shared by every flow's server: parsing the key and checking it against the certificate was
/// a large share of a 1,000-flow run's set-up (issue 16). Signing is deterministic (Ed25519),
/// so sharing draws no randomness.
fn server_identity() -> Result<Arc<SingleCertAndKey>, TlsError> {
    static IDENTITY: OnceLock<Arc<SingleCertAndKey>> = OnceLock::new();
    if let Some(id) = IDENTITY.get() {
        return Ok(id.clone());
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(SERVER_KEY_DER.to_vec()));
    let certified = CertifiedKey::from_der(
        vec![CertificateDer::from(SERVER_CERT_DER.to_vec())],
        key,
        &rustls::crypto::ring::default_provider(),
    )?;
    Ok(IDENTITY
        .get_or_init(|| Arc::new(SingleCertAndKey::from(certified)))
        .clone())
}

/// The simulated client's verifier (the server's self-signed certificate as the only root),
/// built once per process and shared by every flow's client, like [`server_identity`]; it
/// draws no randomness and takes the time from each config's (virtual) clock.
fn server_verifier() -> Result<Arc<WebPkiServerVerifier>, TlsError> {
    static VERIFIER: OnceLock<Arc<WebPkiServerVerifier>> = OnceLock::new();
    if let Some(v) = VERIFIER.get() {
        return Ok(v.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(SERVER_CERT_DER))?;
    let verifier = WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()?;
    Ok(VERIFIER.get_or_init(|| verifier).clone())
}

/// A QUIC client TLS config. Clients of one flow share it so the session cache enables 0-RTT on
/// their second connection.
pub fn client_config(
    rng: SharedRng,
    clock: &VirtualClock,
    keylog: Option<KeyLogBuffer>,
    early_data: bool,
) -> Result<Arc<quinn_proto::crypto::rustls::QuicClientConfig>, TlsError> {
    let mut cfg =
        rustls::ClientConfig::builder_with_details(seeded_provider(rng), Arc::new(clock.clone()))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_webpki_verifier(server_verifier()?)
            .with_no_client_auth();
    cfg.enable_early_data = early_data;
    if let Some(k) = keylog {
        cfg.key_log = Arc::new(k);
    }
    Ok(Arc::new(
        quinn_proto::crypto::rustls::QuicClientConfig::try_from(cfg)?,
    ))
}

/// A QUIC server TLS config accepting 0-RTT.
pub fn server_config(
    rng: SharedRng,
    clock: &VirtualClock,
    keylog: Option<KeyLogBuffer>,
) -> Result<Arc<quinn_proto::crypto::rustls::QuicServerConfig>, TlsError> {
    let mut cfg =
        rustls::ServerConfig::builder_with_details(seeded_provider(rng), Arc::new(clock.clone()))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_cert_resolver(server_identity()?);
    // QUIC requires this exact value to enable 0-RTT (RFC 9001 §4.6.1).
    cfg.max_early_data_size = u32::MAX;
    if let Some(k) = keylog {
        cfg.key_log = Arc::new(k);
    }
    Ok(Arc::new(
        quinn_proto::crypto::rustls::QuicServerConfig::try_from(cfg)?,
    ))
}
