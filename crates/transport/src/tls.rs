//! TLS 1.3 configurations for simulated QUIC endpoints: seeded, virtual-timed, key-logged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{VerifierBuilderError, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::clock::VirtualClock;
use crate::seeded::{seeded_provider, SharedRng};

/// DER of the simulated server's self-signed Ed25519 certificate (see certs/README.md).
const SERVER_CERT_DER: &[u8] = include_bytes!("../certs/server.cert.der");
/// PKCS#8 DER of its private key.
const SERVER_KEY_DER: &[u8] = include_bytes!("../certs/server.key.der");
/// Name the simulated client asks for (in the certificate's subjectAltName).
pub const SERVER_NAME: &str = "server.quiclab";

/// The simulated server's certificate and PKCS#8 private key (DER), for stacks that load them
/// themselves (quiche).
pub(crate) fn server_identity_der() -> (&'static [u8], &'static [u8]) {
    (SERVER_CERT_DER, SERVER_KEY_DER)
}

/// Collects NSS key-log lines (SSLKEYLOGFILE format) so Wireshark can decrypt the pcap.
#[derive(Debug, Default, Clone)]
pub struct KeyLogBuffer(Arc<Mutex<String>>);

impl KeyLogBuffer {
    /// All lines logged so far.
    pub fn contents(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl KeyLogBuffer {
    /// Appends key-log text as it is (already in NSS format, e.g. from BoringSSL).
    pub(crate) fn push_lines(&self, text: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_str(text);
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
/// preference of browsers, which servers honour (rustls, like most TLS 1.3 servers,
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
/// a large share of a 1,000-flow run's set-up. Signing is deterministic (Ed25519),
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

/// The simulated client's verifier, built once per process and shared by every flow's client,
/// like [`server_identity`]; it draws no randomness and takes the time from each config's
/// (virtual) clock.
fn server_verifier() -> Result<Arc<SimServerVerifier>, TlsError> {
    static VERIFIER: OnceLock<Arc<SimServerVerifier>> = OnceLock::new();
    if let Some(v) = VERIFIER.get() {
        return Ok(v.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(SERVER_CERT_DER))?;
    let webpki = WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()?;
    Ok(VERIFIER
        .get_or_init(|| Arc::new(SimServerVerifier::new(webpki)))
        .clone())
}

/// Most certificate chains [`SimServerVerifier`] remembers. The simulator's server presents one
/// chain; the bound only keeps a process that saw other chains from growing without limit
/// (beyond it, chains are verified in full every time, as without the cache).
const VERIFIED_CHAINS_MAX: usize = 8;

/// How far past a first verification the cache probes the chain's validity (one year of
/// virtual time: far beyond any simulated run, well inside the test certificate's validity).
const VALIDITY_PROBE: Duration = Duration::from_secs(365 * 24 * 3600);

/// The simulated client's certificate verifier: webpki's, with two savings that change no
/// byte on the wire and no result (at 1,000 flows, Ed25519 verification was a sixth
/// of the run's instructions, two per handshake).
///
/// * **The chain is verified once per process**, not per handshake: every flow's server
///   presents the same compiled-in certificate. A verification depends on its time only
///   through the certificates' validity periods (no revocation lists are configured), and the
///   intersection of those periods is an interval, so a chain verified at two instants is
///   valid at every instant between them. The cache keeps, per (chain, server name, OCSP
///   response), the interval whose end points were both verified in full: a first miss
///   verifies at `now` and at `now` + [`VALIDITY_PROBE`]; a time outside the interval is
///   verified in full and widens it. A chain that fails is never cached.
/// * **CertificateVerify's signature is not checked.** It proves that the peer holds the
///   certificate's private key. In the simulator both ends are ours: the server signs with the
///   compiled-in key that belongs to the compiled-in certificate (tested:
///   `tests::server_signatures_verify`), and no adversary sits on the path. A handshake
///   packet damaged by a link's bit errors fails the packet's AEAD (or the null cipher's
///   checksum tag) and is dropped before TLS sees it, so the check could never fail and its
///   outcome cannot change a run. The server still signs every handshake, so the signature
///   on the wire (and in a decrypted pcap) is a valid one. The emulator's real clients
///   (`endpoints`) verify in full.
#[derive(Debug)]
pub struct SimServerVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    verified: Mutex<Vec<VerifiedChain>>,
    /// Full chain verifications run (for tests and the bench's accounting).
    full_verifications: AtomicU64,
}

/// A chain [`SimServerVerifier`] verified in full at both ends of `valid`.
#[derive(Debug)]
struct VerifiedChain {
    /// The end-entity certificate, the intermediates, the server name and the OCSP response,
    /// each length-prefixed.
    key: Vec<u8>,
    /// Unix seconds (inclusive) at both ends of which the chain verified.
    valid: (u64, u64),
}

fn chain_key(
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    server_name: &ServerName<'_>,
    ocsp_response: &[u8],
) -> Vec<u8> {
    let name = server_name.to_str();
    let parts = std::iter::once(end_entity.as_ref())
        .chain(intermediates.iter().map(|c| c.as_ref()))
        .chain([name.as_bytes(), ocsp_response]);
    let mut key = Vec::new();
    for part in parts {
        key.extend_from_slice(&(part.len() as u64).to_le_bytes());
        key.extend_from_slice(part);
    }
    // The number of intermediates, so that no two different inputs share a key.
    key.extend_from_slice(&(intermediates.len() as u64).to_le_bytes());
    key
}

impl SimServerVerifier {
    fn new(webpki: Arc<WebPkiServerVerifier>) -> Self {
        SimServerVerifier {
            webpki,
            verified: Mutex::new(Vec::new()),
            full_verifications: AtomicU64::new(0),
        }
    }

    /// Number of full chain verifications so far (the rest were answered from the cache).
    pub fn full_verifications(&self) -> u64 {
        self.full_verifications.load(Ordering::Relaxed)
    }

    fn verify_full(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        at: u64,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.full_verifications.fetch_add(1, Ordering::Relaxed);
        self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            UnixTime::since_unix_epoch(Duration::from_secs(at)),
        )
    }
}

impl ServerCertVerifier for SimServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let at = now.as_secs();
        let key = chain_key(end_entity, intermediates, server_name, ocsp_response);
        let known = {
            let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
            verified.iter().find(|c| c.key == key).map(|c| c.valid)
        };
        if let Some((from, until)) = known {
            if (from..=until).contains(&at) {
                return Ok(ServerCertVerified::assertion());
            }
        }
        // A miss: verify in full (an error goes back to rustls as webpki's), then find how far
        // the validity reaches.
        let ok = self.verify_full(end_entity, intermediates, server_name, ocsp_response, at)?;
        let probe = at.saturating_add(VALIDITY_PROBE.as_secs());
        let reach = match known {
            // Widen the known interval to `at`: both ends stay verified points.
            Some((from, until)) => (from.min(at), until.max(at)),
            None if self
                .verify_full(end_entity, intermediates, server_name, ocsp_response, probe)
                .is_ok() =>
            {
                (at, probe)
            }
            None => (at, at),
        };
        let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = verified.iter_mut().find(|c| c.key == key) {
            // Another thread may have verified meanwhile: the hull of verified points.
            c.valid = (c.valid.0.min(reach.0), c.valid.1.max(reach.1));
        } else if verified.len() < VERIFIED_CHAINS_MAX {
            verified.push(VerifiedChain { key, valid: reach });
        }
        Ok(ok)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // The simulated client speaks TLS 1.3 only; kept in full for completeness.
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Not checked: see the type's documentation. The scheme must still be one we offered.
        if self.webpki.supported_verify_schemes().contains(&dss.scheme) {
            Ok(HandshakeSignatureValid::assertion())
        } else {
            Err(rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme.into())
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.webpki.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.webpki.root_hint_subjects()
    }
}

/// Sessions rustls's default caches would hold per flow: 256 server-side sessions and the
/// tickets of 256 / 8 = 32 server names. Each flow has its own caches (its connections resume
/// each other's sessions, never another flow's), so the bounds are kept as they were.
const SESSION_CACHE: usize = 256;

/// A flow's server-side session store: rustls's in-memory cache semantics (a put replaces the
/// value of a known id without refreshing its age; beyond [`SESSION_CACHE`] ids the oldest is
/// dropped; `take` removes) without its up-front allocation. rustls's cache reserves room for
/// all 256 sessions when built (~31 kB per flow, a fifth of a 1,000-flow run's heap)
/// while a flow stores about one session per connection it opens.
#[derive(Debug, Default)]
struct FlowSessions(Mutex<Vec<(Vec<u8>, Vec<u8>)>>);

impl FlowSessions {
    fn sessions(&self) -> std::sync::MutexGuard<'_, Vec<(Vec<u8>, Vec<u8>)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl rustls::server::StoresServerSessions for FlowSessions {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        // Oldest first: the order ids were first stored in.
        let mut s = self.sessions();
        match s.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => {
                s.push((key, value));
                if s.len() > SESSION_CACHE {
                    s.remove(0);
                }
            }
        }
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.sessions()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut s = self.sessions();
        let i = s.iter().position(|(k, _)| k == key)?;
        Some(s.remove(i).1)
    }

    fn can_cache(&self) -> bool {
        true
    }
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
            .dangerous()
            .with_custom_certificate_verifier(server_verifier()?)
            .with_no_client_auth();
    cfg.enable_early_data = early_data;
    // Every connection of the flow asks for the one name SERVER_NAME, so a cache bounded to one
    // server name holds exactly what the default (32 names, reserved up front: ~15 kB per
    // flow) would: the same tickets, taken in the same order.
    cfg.resumption = rustls::client::Resumption::in_memory_sessions(1);
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
    cfg.session_storage = Arc::new(FlowSessions::default());
    if let Some(k) = keylog {
        cfg.key_log = Arc::new(k);
    }
    Ok(Arc::new(
        quinn_proto::crypto::rustls::QuicServerConfig::try_from(cfg)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VIRTUAL_EPOCH_UNIX_SECS;

    fn verifier() -> SimServerVerifier {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(SERVER_CERT_DER)).unwrap();
        SimServerVerifier::new(
            WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                Arc::new(rustls::crypto::ring::default_provider()),
            )
            .build()
            .unwrap(),
        )
    }

    fn verify_at(v: &SimServerVerifier, name: &str, unix_secs: u64) -> bool {
        v.verify_server_cert(
            &CertificateDer::from(SERVER_CERT_DER),
            &[],
            &ServerName::try_from(name.to_string()).unwrap(),
            &[],
            UnixTime::since_unix_epoch(Duration::from_secs(unix_secs)),
        )
        .is_ok()
    }

    /// Many handshakes across a run's virtual times cost two full verifications (`now` and the
    /// probe a year later); a time outside that interval is verified in full and widens it.
    #[test]
    fn chain_is_verified_once_per_process_and_time_range() {
        let v = verifier();
        for i in 0..100 {
            assert!(verify_at(&v, SERVER_NAME, VIRTUAL_EPOCH_UNIX_SECS + i));
        }
        assert_eq!(v.full_verifications(), 2);
        // Later than the probe: verified in full, once.
        let later = VIRTUAL_EPOCH_UNIX_SECS + 2 * VALIDITY_PROBE.as_secs();
        assert!(verify_at(&v, SERVER_NAME, later));
        assert!(verify_at(&v, SERVER_NAME, later - 1));
        assert_eq!(v.full_verifications(), 3);
    }

    /// The cache answers only what webpki would: a name not in the certificate and instants
    /// outside its validity (2026-11-22 to 2126) fail, before and after a success was cached.
    #[test]
    fn cache_never_accepts_what_webpki_refuses() {
        let v = verifier();
        assert!(!verify_at(&v, "other.example", VIRTUAL_EPOCH_UNIX_SECS));
        assert!(verify_at(&v, SERVER_NAME, VIRTUAL_EPOCH_UNIX_SECS));
        assert!(!verify_at(&v, "other.example", VIRTUAL_EPOCH_UNIX_SECS));
        // 2020-01-01 (before notBefore) and 2200-01-01 (after notAfter).
        assert!(!verify_at(&v, SERVER_NAME, 1_577_836_800));
        assert!(!verify_at(&v, SERVER_NAME, 7_258_118_400));
        // A chain that failed is not cached: the same failure is verified again in full.
        let n = v.full_verifications();
        assert!(!verify_at(&v, SERVER_NAME, 7_258_118_400));
        assert_eq!(v.full_verifications(), n + 1);
    }

    /// The premise of not checking CertificateVerify: the simulated server's signatures are
    /// valid under the public key in the certificate the client verified (taken from the
    /// certificate's SubjectPublicKeyInfo, not from the private key).
    #[test]
    fn server_signatures_verify() {
        // DER SubjectPublicKeyInfo prefix of an Ed25519 key (RFC 8410 §4), then 32 key bytes.
        const SPKI_ED25519: [u8; 12] = [
            0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
        ];
        let at = SERVER_CERT_DER
            .windows(SPKI_ED25519.len())
            .position(|w| w == SPKI_ED25519)
            .expect("an Ed25519 key in the certificate")
            + SPKI_ED25519.len();
        let public = &SERVER_CERT_DER[at..at + 32];
        let identity = CertifiedKey::from_der(
            vec![CertificateDer::from(SERVER_CERT_DER.to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(SERVER_KEY_DER.to_vec())),
            &rustls::crypto::ring::default_provider(),
        )
        .unwrap();
        let signer = identity
            .key
            .choose_scheme(&[SignatureScheme::ED25519])
            .expect("the server signs with Ed25519");
        for message in [&b"transcript"[..], &[0u8; 130][..]] {
            let sig = signer.sign(message).unwrap();
            ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, public)
                .verify(message, &sig)
                .expect("the server's signature verifies under the certificate's key");
        }
    }
}
