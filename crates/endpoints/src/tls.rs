//! TLS material: the repository's test PKI (embedded) or files, and rustls configs for both sides.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The test CA certificate committed in `certs/ca.pem`.
pub const EMBEDDED_CA_PEM: &[u8] = include_bytes!("../../../certs/ca.pem");
/// The test server chain (leaf + CA) committed in `certs/server-chain.pem`.
pub const EMBEDDED_CHAIN_PEM: &[u8] = include_bytes!("../../../certs/server-chain.pem");
/// The test server key (PKCS#8) committed in `certs/server.key`.
pub const EMBEDDED_KEY_PEM: &[u8] = include_bytes!("../../../certs/server.key");

/// Errors loading certificates or building TLS configurations.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {path}: {cause}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// PEM content could not be parsed.
    #[error("{what}: {detail}")]
    Pem {
        /// What was being parsed (file name or "embedded ...").
        what: String,
        /// Why it failed.
        detail: String,
    },
    /// rustls rejected the configuration.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The key log file could not be opened.
    #[error("cannot open key log {path}: {cause}")]
    KeyLog {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        cause: std::io::Error,
    },
}

fn read_or_embedded(path: Option<&Path>, embedded: &[u8]) -> Result<(Vec<u8>, String), TlsError> {
    match path {
        Some(p) => std::fs::read(p)
            .map(|b| (b, p.display().to_string()))
            .map_err(|cause| TlsError::Read {
                path: p.to_path_buf(),
                cause,
            }),
        None => Ok((embedded.to_vec(), "embedded test PKI".to_string())),
    }
}

/// Loads a certificate chain (PEM) from `path`, or the embedded test chain.
pub fn load_chain(path: Option<&Path>) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let (pem, what) = read_or_embedded(path, EMBEDDED_CHAIN_PEM)?;
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&pem).collect();
    let certs = certs.map_err(|e| TlsError::Pem {
        what: what.clone(),
        detail: e.to_string(),
    })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            what,
            detail: "no CERTIFICATE block found".into(),
        });
    }
    Ok(certs)
}

/// Loads a private key (PEM, PKCS#8/PKCS#1/SEC1) from `path`, or the embedded test key.
pub fn load_key(path: Option<&Path>) -> Result<PrivateKeyDer<'static>, TlsError> {
    let (pem, what) = read_or_embedded(path, EMBEDDED_KEY_PEM)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::Pem {
        what,
        detail: format!("no usable private key: {e}"),
    })
}

/// Loads the trust anchors from `path`, or the embedded test CA.
pub fn load_roots(path: Option<&Path>) -> Result<RootCertStore, TlsError> {
    let (pem, what) = read_or_embedded(path, EMBEDDED_CA_PEM)?;
    let mut roots = RootCertStore::empty();
    let mut n = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| TlsError::Pem {
            what: what.clone(),
            detail: e.to_string(),
        })?;
        roots.add(cert)?;
        n += 1;
    }
    if n == 0 {
        return Err(TlsError::Pem {
            what,
            detail: "no CERTIFICATE block found".into(),
        });
    }
    Ok(roots)
}

/// The process-wide crypto provider (ring), so no global default has to be installed, with
/// AES-128-GCM preferred as the simulator does ([`transport::tls::prefer_aes128`]), so both
/// engines negotiate the same suite.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites = transport::tls::prefer_aes128(p.cipher_suites);
    Arc::new(p)
}

/// A rustls `KeyLog` writing NSS key-log lines to a file of our choice (not `$SSLKEYLOGFILE`).
#[derive(Debug)]
pub struct FileKeyLog {
    file: Mutex<File>,
}

impl FileKeyLog {
    /// Opens (appends to) the key log file, readable by its owner only (it holds secrets); a
    /// link or a special file there is refused.
    pub fn open(path: &Path) -> Result<Arc<Self>, TlsError> {
        let file = fsutil::open_append(path, 0o600).map_err(|cause| TlsError::KeyLog {
            path: path.to_path_buf(),
            cause,
        })?;
        Ok(Arc::new(Self {
            file: Mutex::new(file),
        }))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl rustls::KeyLog for FileKeyLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let line = format!("{label} {} {}\n", hex(client_random), hex(secret));
        if let Ok(mut f) = self.file.lock() {
            // A lost key-log line only hurts later decryption; never fail the connection for it.
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// Builds the server-side rustls config with the given ALPN list (early data allowed for QUIC 0-RTT).
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    alpn: &[&[u8]],
    keylog: Option<Arc<FileKeyLog>>,
    early_data: bool,
) -> Result<rustls::ServerConfig, TlsError> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    if early_data {
        // quinn requires exactly u32::MAX (QUIC has its own flow control for 0-RTT data).
        cfg.max_early_data_size = u32::MAX;
    }
    if let Some(k) = keylog {
        cfg.key_log = k;
    }
    Ok(cfg)
}

/// How the client decides whether to trust the server.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Verify against these roots.
    Roots(Arc<RootCertStore>),
    /// Accept any certificate (measurement against third-party peers with unknown PKI).
    Insecure,
}

/// Builds the client-side rustls config with the given ALPN list; `tls12_only` offers TLS 1.2
/// alone (two round trips of handshake), otherwise TLS 1.3 is preferred.
pub fn client_config(
    trust: &Trust,
    alpn: &[&[u8]],
    keylog: Option<Arc<FileKeyLog>>,
    early_data: bool,
    tls12_only: bool,
) -> Result<rustls::ClientConfig, TlsError> {
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12_only {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let builder =
        rustls::ClientConfig::builder_with_provider(provider()).with_protocol_versions(versions)?;
    let mut cfg = match trust {
        Trust::Roots(roots) => builder
            .with_root_certificates(roots.clone())
            .with_no_client_auth(),
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider())))
            .with_no_client_auth(),
    };
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    cfg.enable_early_data = early_data;
    if let Some(k) = keylog {
        cfg.key_log = k;
    }
    Ok(cfg)
}

/// Certificate verifier for `--insecure`: checks signatures, trusts any certificate.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
