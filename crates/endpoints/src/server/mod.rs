//! The HTTP server: HTTP/1.1 + HTTP/2 over TCP + TLS and HTTP/3 over QUIC, on one port number.

mod h3;
pub mod routes;
pub mod stats_log;
mod tcp;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::quic::{QuicConfig, QuicSetupError};
use crate::tls::{self, FileKeyLog, TlsError};
use stats_log::StatsLog;

/// Which HTTP versions the server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocols {
    /// HTTP/1.1 over TCP + TLS.
    pub h1: bool,
    /// HTTP/2 over TCP + TLS.
    pub h2: bool,
    /// HTTP/3 over QUIC.
    pub h3: bool,
}

impl Default for Protocols {
    fn default() -> Self {
        Self {
            h1: true,
            h2: true,
            h3: true,
        }
    }
}

impl Protocols {
    /// Parses a comma-separated subset of `1.1`, `2`, `3` (also `h1`, `h2`, `h3`, `http/1.1`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut p = Self {
            h1: false,
            h2: false,
            h3: false,
        };
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item.to_ascii_lowercase().as_str() {
                "1.1" | "1" | "h1" | "http/1.1" => p.h1 = true,
                "2" | "h2" => p.h2 = true,
                "3" | "h3" => p.h3 = true,
                other => return Err(format!("unknown HTTP version {other:?} (1.1, 2, 3)")),
            }
        }
        if !(p.h1 || p.h2 || p.h3) {
            return Err("no HTTP version selected".into());
        }
        Ok(p)
    }

    fn tcp(&self) -> bool {
        self.h1 || self.h2
    }
}

/// Everything `quiclab serve` can set; serialized, what the emulator hands `quiclab serve
/// --config`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address for both the TCP and the UDP listener (port 0: an ephemeral port shared by both).
    pub listen: SocketAddr,
    /// HTTP versions offered.
    pub protocols: Protocols,
    /// Certificate chain PEM (`None`: the embedded test chain).
    pub cert: Option<PathBuf>,
    /// Private key PEM (`None`: the embedded test key).
    pub key: Option<PathBuf>,
    /// `TCP_CONGESTION` of the listener (inherited by accepted sockets).
    pub tcp_cc: Option<String>,
    /// QUIC transport knobs (qlog directory included).
    pub quic: QuicConfig,
    /// HTTP/2 per-stream receive window (uploads).
    pub h2_stream_window: u32,
    /// HTTP/2 connection receive window (uploads).
    pub h2_conn_window: u32,
    /// TLS key log file.
    pub keylog: Option<PathBuf>,
    /// Append one JSON line per finished connection here.
    pub stats_file: Option<PathBuf>,
    /// How long a client may take for the TLS handshake or the request headers.
    pub handshake_timeout: Duration,
    /// A connection that moves no bytes for this long is closed (HTTP/1.1 and HTTP/2: GOAWAY
    /// or close; HTTP/3: the QUIC idle timeout). Idle connections otherwise hold descriptors
    /// forever and a few hundred exhaust `ulimit -n`.
    pub idle_timeout: Duration,
    /// Most connections open at once (TCP and QUIC together); more are closed (TCP) or refused
    /// (QUIC) at once.
    pub max_connections: usize,
    /// Most concurrent requests (streams) per HTTP/2 or HTTP/3 connection.
    pub max_streams: u32,
    /// Largest body `GET /<n>` generates (`None`: no cap); larger requests get 400.
    pub max_response_size: Option<u64>,
}

/// Default of [`ServerConfig::idle_timeout`] (QUIC's default idle timeout too).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`ServerConfig::max_connections`]: a TCP connection takes two descriptors (the
/// socket and a duplicate for `TCP_INFO`), so 400 stay below the common soft `ulimit -n` of 1024
/// with room for the rest of the process, and above the load tool's default pool of 256.
pub const DEFAULT_MAX_CONNECTIONS: usize = 400;
/// Default of [`ServerConfig::max_streams`] (HTTP/2 servers commonly allow 100–256).
pub const DEFAULT_MAX_STREAMS: u32 = 256;
/// Default of [`ServerConfig::max_response_size`]: 1 GB, a few seconds on loopback; a single
/// `GET /1000G` would otherwise stream a terabyte.
pub const DEFAULT_MAX_RESPONSE_SIZE: u64 = 1_000_000_000;

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            // Loopback unless asked: the server answers anyone who can reach it.
            listen: SocketAddr::from(([127, 0, 0, 1], 4433)),
            protocols: Protocols::default(),
            cert: None,
            key: None,
            tcp_cc: None,
            quic: QuicConfig::default(),
            h2_stream_window: 16_000_000,
            h2_conn_window: 24_000_000,
            keylog: None,
            stats_file: None,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_streams: DEFAULT_MAX_STREAMS,
            max_response_size: Some(DEFAULT_MAX_RESPONSE_SIZE),
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Certificates, keys or the TLS configuration.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// QUIC knobs or the UDP socket.
    #[error(transparent)]
    Quic(#[from] QuicSetupError),
    /// The TCP listener.
    #[error("TCP listener on {addr}: {cause}")]
    Tcp {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// `--tcp-cc` was refused by the kernel.
    #[error("TCP congestion control {name:?}: {cause}")]
    TcpCc {
        /// The algorithm name.
        name: String,
        /// The kernel's answer.
        cause: std::io::Error,
    },
    /// The stats file.
    #[error("stats file {path}: {cause}")]
    StatsFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// The QUIC endpoint could not be created.
    #[error("QUIC endpoint: {0}")]
    Endpoint(String),
}

/// Per-connection counters (shared by the request tasks of one connection).
#[derive(Debug, Default)]
pub(crate) struct ConnCounters {
    pub requests: AtomicU64,
    pub body_sent: AtomicU64,
    pub body_received: AtomicU64,
}

impl ConnCounters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// What every connection task needs.
#[derive(Debug)]
pub(crate) struct Shared {
    pub stats: Option<StatsLog>,
    pub handshake_timeout: Duration,
    pub shutdown: watch::Receiver<bool>,
    pub idle_timeout: Duration,
    /// One permit per open connection ([`ServerConfig::max_connections`]).
    pub connections: Arc<tokio::sync::Semaphore>,
    pub max_response_size: Option<u64>,
    /// Answer 0-RTT requests before the handshake completes ([`QuicConfig::early_response`]).
    pub early_response: bool,
}

/// A server whose listeners are bound and whose accept loops run on the current tokio runtime.
/// Dropping it without [`RunningServer::shutdown`] stops it too, abruptly.
#[derive(Debug)]
pub struct RunningServer {
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    quic: Option<quinn::Endpoint>,
}

impl RunningServer {
    /// Binds the listeners and starts serving (must be called inside a tokio runtime).
    pub async fn start(mut cfg: ServerConfig) -> Result<Self, ServerError> {
        if cfg.max_connections == 0 || cfg.max_streams == 0 || cfg.idle_timeout.is_zero() {
            return Err(ServerError::Endpoint(
                "max connections, max streams and the idle timeout must be > 0".into(),
            ));
        }
        // One stream cap and one idle timeout for every HTTP version.
        cfg.quic.max_streams = cfg.max_streams;
        cfg.quic.idle_timeout = cfg.idle_timeout;
        cfg.quic.validate()?;
        let chain = tls::load_chain(cfg.cert.as_deref())?;
        let key = tls::load_key(cfg.key.as_deref())?;
        let keylog = cfg.keylog.as_deref().map(FileKeyLog::open).transpose()?;
        let stats = match &cfg.stats_file {
            Some(p) => Some(StatsLog::open(p).map_err(|cause| ServerError::StatsFile {
                path: p.clone(),
                cause,
            })?),
            None => None,
        };
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            stats,
            handshake_timeout: cfg.handshake_timeout,
            shutdown: shutdown_rx,
            idle_timeout: cfg.idle_timeout,
            connections: Arc::new(tokio::sync::Semaphore::new(cfg.max_connections)),
            max_response_size: cfg.max_response_size,
            early_response: cfg.quic.early_response,
        });

        let mut tasks = Vec::new();
        let mut local_addr = cfg.listen;
        if cfg.protocols.tcp() {
            let listener = tcp::bind(&cfg)?;
            local_addr = listener.local_addr().map_err(|cause| ServerError::Tcp {
                addr: cfg.listen,
                cause,
            })?;
            let mut alpn: Vec<&[u8]> = Vec::new();
            if cfg.protocols.h2 {
                alpn.push(b"h2");
            }
            if cfg.protocols.h1 {
                alpn.push(b"http/1.1");
            }
            let tls_cfg =
                tls::server_config(chain.clone(), key.clone_key(), &alpn, keylog.clone(), false)?;
            let server = tcp::TcpServer::new(&cfg, Arc::new(tls_cfg), shared.clone());
            tasks.push(tokio::spawn(server.accept_loop(listener)));
        }
        let mut quic = None;
        if cfg.protocols.h3 {
            // Same port number as TCP (which may have been ephemeral).
            let udp = crate::quic::bind_udp(local_addr)?;
            local_addr = udp.local_addr().map_err(|cause| {
                ServerError::Quic(QuicSetupError::Socket {
                    addr: local_addr,
                    cause,
                })
            })?;
            let tls_cfg = tls::server_config(chain, key, &[b"h3"], keylog, true)?;
            let (endpoint, base) = h3::endpoint(udp, tls_cfg, &cfg.quic)?;
            quic = Some(endpoint.clone());
            tasks.push(tokio::spawn(h3::accept_loop(
                endpoint,
                base,
                cfg.quic.clone(),
                shared.clone(),
            )));
        }
        Ok(Self {
            local_addr,
            shutdown: shutdown_tx,
            tasks,
            quic,
        })
    }

    /// The bound address (TCP and UDP share the port).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, lets open connections finish for a moment, then closes everything.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        if let Some(ep) = &self.quic {
            ep.close(0u32.into(), b"server shutdown");
        }
        for t in self.tasks {
            if tokio::time::timeout(Duration::from_secs(3), t)
                .await
                .is_err()
            {
                tracing::warn!("an accept loop did not stop in time");
            }
        }
        if let Some(ep) = self.quic {
            let _ = tokio::time::timeout(Duration::from_secs(1), ep.wait_idle()).await;
        }
    }
}

/// Runs the server on its own multi-threaded runtime (one worker per core) until SIGINT or
/// SIGTERM. Once both listeners are bound, `on_ready` is called with the bound address (write a
/// ready file, print the address …).
pub fn serve_until_signal(
    cfg: ServerConfig,
    on_ready: impl FnOnce(SocketAddr) -> std::io::Result<()>,
) -> Result<(), ServerError> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| ServerError::Endpoint(format!("tokio runtime: {e}")))?;
    runtime.block_on(async move {
        let server = RunningServer::start(cfg).await?;
        let addr = server.local_addr();
        let ready = on_ready(addr);
        if ready.is_ok() {
            wait_for_signal().await;
        }
        server.shutdown().await;
        ready.map_err(|e| ServerError::Endpoint(format!("readiness hook: {e}")))
    })
}

/// Resolves on SIGINT or SIGTERM.
async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
