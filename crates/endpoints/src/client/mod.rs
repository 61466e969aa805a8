//! The timing HTTP client used by `quiclab get` and the load tester.
//!
//! One [`Client`] holds everything expensive (rustls configs, the shared QUIC endpoint, the
//! connection pool), so [`Client::send`] only opens connections when the policy says so.

mod conn;
mod connect;
mod pool;
mod request;
mod unreachable;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::quic::{QuicConfig, QuicSetupError};
use crate::stats::TransportSnapshot;
use crate::tls::TlsError;

pub use connect::Target;

/// The HTTP version a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1 over TCP + TLS.
    H1,
    /// HTTP/2 over TCP + TLS.
    H2,
    /// HTTP/3 over QUIC.
    H3,
}

impl HttpVersion {
    /// "1.1", "2" or "3".
    pub fn label(self) -> &'static str {
        match self {
            Self::H1 => "1.1",
            Self::H2 => "2",
            Self::H3 => "3",
        }
    }

    /// Parses "1.1", "1", "h1", "2", "h2", "3", "h3".
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "1.1" | "1" | "h1" | "http/1.1" => Ok(Self::H1),
            "2" | "h2" => Ok(Self::H2),
            "3" | "h3" => Ok(Self::H3),
            other => Err(format!("unknown HTTP version {other:?} (1.1, 2, 3)")),
        }
    }
}

/// How the client verifies the server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsOptions {
    /// CA certificate file (PEM); `None`: the embedded test CA (`certs/ca.pem`).
    pub ca: Option<PathBuf>,
    /// Accept any server certificate.
    pub insecure: bool,
    /// Write TLS secrets (NSS key-log format) to this file.
    pub keylog: Option<PathBuf>,
    /// SNI / name to verify; `None`: the URL's host.
    pub server_name: Option<String>,
}

/// When the client opens connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConnPolicy {
    /// A fresh connection (and handshake) for every request, closed afterwards.
    PerRequest,
    /// Keep connections open and reuse them.
    Pool {
        /// Most connections open at once (per client).
        max_connections: usize,
        /// Most concurrent requests per connection (HTTP/1.1 always uses 1).
        max_streams_per_connection: usize,
    },
}

/// When a pool that has connections, all busy, opens another one (up to its limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PoolGrowth {
    /// At once, as browsers do: every request that finds no free connection opens one.
    #[default]
    Eager,
    /// Only when the requests waiting would likely wait longer for the busy connections than
    /// an opening takes (see `pool.rs`), at most doubling the pool per opening: the pool grows
    /// to what the load needs instead of opening a connection per request due during the
    /// first handshakes.
    Patient,
}

/// Everything a [`Client`] is built from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientConfig {
    /// HTTP version.
    pub http: HttpVersion,
    /// Server verification and key logging.
    pub tls: TlsOptions,
    /// Connection policy.
    pub policy: ConnPolicy,
    /// When a pool opens another connection.
    pub pool_growth: PoolGrowth,
    /// Limit for one `send` from call to last byte (pool wait included).
    pub timeout: Duration,
    /// `TCP_CONGESTION` of client sockets (HTTP/1.1, HTTP/2).
    pub tcp_cc: Option<String>,
    /// QUIC knobs (HTTP/3).
    pub quic: QuicConfig,
    /// Try 0-RTT on QUIC connections when a session ticket is cached.
    pub zero_rtt: bool,
    /// HTTP/2 per-stream receive window (downloads).
    pub h2_stream_window: u32,
    /// HTTP/2 connection receive window (downloads).
    pub h2_conn_window: u32,
    /// Take a transport statistics snapshot after every request (one getsockopt or lock).
    pub collect_transport_stats: bool,
    /// Offer TLS 1.2 only on TCP (HTTP/1.1, HTTP/2), as a scenario's `flow.tls = "1.2"` asks;
    /// HTTP/3 always runs TLS 1.3 (QUIC requires it).
    pub tls12_only: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            http: HttpVersion::H2,
            tls: TlsOptions::default(),
            policy: ConnPolicy::Pool {
                max_connections: 1,
                max_streams_per_connection: 100,
            },
            pool_growth: PoolGrowth::Eager,
            timeout: Duration::from_secs(30),
            tcp_cc: None,
            quic: QuicConfig::default(),
            zero_rtt: false,
            h2_stream_window: 16_000_000,
            h2_conn_window: 24_000_000,
            collect_transport_stats: false,
            tls12_only: false,
        }
    }
}

/// Errors building a client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Certificates or the TLS configuration.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// QUIC knobs.
    #[error(transparent)]
    Quic(#[from] QuicSetupError),
    /// Some other invalid setting.
    #[error("invalid client configuration: {0}")]
    Invalid(String),
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// Method (GET, POST …).
    pub method: http::Method,
    /// Absolute `https://host:port/path` URL.
    pub url: http::Uri,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Request body (empty for GET).
    pub body: Bytes,
}

impl RequestSpec {
    /// A GET of `url`.
    pub fn get(url: http::Uri) -> Self {
        Self {
            method: http::Method::GET,
            url,
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    /// A POST of `body` to `url`.
    pub fn post(url: http::Uri, body: Bytes) -> Self {
        Self {
            method: http::Method::POST,
            url,
            headers: Vec::new(),
            body,
        }
    }
}

/// What happened to one request, with every phase timed.
#[derive(Debug, Clone)]
pub struct RequestOutcome {
    /// When the client began working on the request: after a pool slot was obtained, before
    /// any connection set-up (the caller's intended time minus this is the queueing delay).
    pub started: Instant,
    /// TCP connect (`None` when a pooled connection was reused, or for HTTP/3).
    pub connect: Option<Duration>,
    /// TLS handshake over TCP.
    pub tls: Option<Duration>,
    /// QUIC handshake (HTTP/3; near zero when 0-RTT was used).
    pub quic_handshake: Option<Duration>,
    /// From `started` to the response headers (the first response bytes).
    pub ttfb: Option<Duration>,
    /// From `started` to the last body byte (or to the failure).
    pub total: Duration,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// Request body bytes handed to the transport (may exceed what the peer got when the
    /// request failed mid-upload: up to a socket buffer / QUIC send window more).
    pub bytes_out: u64,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Why the request failed (`None`: success, i.e. a complete response was received).
    pub error: Option<String>,
    /// The request went over an already open connection.
    pub reused_connection: bool,
    /// Identifies the connection within this client (grouping requests per connection).
    pub connection_id: u64,
    /// The TCP connection was set up with TLS session resumption.
    pub tls_resumed: bool,
    /// The QUIC connection was opened with 0-RTT (a session ticket was cached; the request went early).
    pub zero_rtt: bool,
    /// Transport statistics right after the request (with `collect_transport_stats`).
    pub transport: Option<TransportSnapshot>,
}

impl RequestOutcome {
    /// An outcome that has not progressed yet.
    fn new(started: Instant) -> Self {
        Self {
            started,
            connect: None,
            tls: None,
            quic_handshake: None,
            ttfb: None,
            total: Duration::ZERO,
            bytes_in: 0,
            bytes_out: 0,
            status: None,
            error: None,
            reused_connection: false,
            connection_id: 0,
            tls_resumed: false,
            zero_rtt: false,
            transport: None,
        }
    }

    /// True when a complete response arrived (any status).
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// True when a complete response with a 2xx status arrived.
    pub fn success(&self) -> bool {
        self.ok() && self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// Connection set-up time: TCP connect + TLS, or the QUIC handshake.
    pub fn handshake(&self) -> Option<Duration> {
        match (self.connect, self.tls, self.quic_handshake) {
            (_, _, Some(q)) => Some(q),
            (Some(c), Some(t), None) => Some(c + t),
            (Some(c), None, None) => Some(c),
            _ => None,
        }
    }
}

/// A timing HTTP client (cheap to clone: everything is shared).
#[derive(Clone)]
pub struct Client {
    inner: Arc<connect::Connector>,
    pool: Option<Arc<pool::Pool>>,
    timeout: Duration,
    collect_stats: bool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("http", &self.inner.http())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Builds the TLS configurations once; the QUIC endpoint is opened on first use.
    pub fn new(cfg: ClientConfig) -> Result<Self, ClientError> {
        cfg.quic.validate()?;
        let pool = match cfg.policy {
            ConnPolicy::PerRequest => None,
            ConnPolicy::Pool {
                max_connections,
                max_streams_per_connection,
            } => {
                if max_connections == 0 || max_streams_per_connection == 0 {
                    return Err(ClientError::Invalid(
                        "pool needs at least one connection and one stream".into(),
                    ));
                }
                let streams = if cfg.http == HttpVersion::H1 {
                    1
                } else {
                    max_streams_per_connection
                };
                Some(Arc::new(pool::Pool::new(
                    max_connections,
                    streams,
                    cfg.pool_growth,
                )))
            }
        };
        Ok(Self {
            inner: Arc::new(connect::Connector::new(&cfg)?),
            pool,
            timeout: cfg.timeout,
            collect_stats: cfg.collect_transport_stats,
        })
    }

    /// Sends one request and times it; never panics, failures are in the outcome.
    pub async fn send(&self, req: RequestSpec) -> RequestOutcome {
        self.send_with_generated_body(req, 0).await
    }

    /// Like [`Client::send`], with `generated` bytes from the shared chunk appended to the
    /// request body (bulk uploads of any size without allocating them). `bytes_out` counts
    /// what was handed to the transport, also when the request times out mid-upload.
    pub async fn send_with_generated_body(
        &self,
        req: RequestSpec,
        generated: u64,
    ) -> RequestOutcome {
        self.send_inner(req, generated, Some(self.timeout)).await
    }

    /// Like [`Client::send`] without the client's own timeout, for a caller that bounds every
    /// request itself (the load generator enforces its per-request limit for all requests of a
    /// thread at once): a timer per request costs a timer-wheel registration and, often, a
    /// wake-up of the runtime's event loop (an `eventfd` write), which profiled as a visible
    /// share of the load generator's CPU per request. Never use it unbounded.
    pub async fn send_untimed(&self, req: RequestSpec) -> RequestOutcome {
        self.send_inner(req, 0, None).await
    }

    async fn send_inner(
        &self,
        req: RequestSpec,
        generated: u64,
        timeout: Option<Duration>,
    ) -> RequestOutcome {
        let called = Instant::now();
        let mut out = RequestOutcome::new(called);
        let upload = request::Upload {
            spec: &req,
            generated,
            handed_over: Arc::new(AtomicU64::new(0)),
            used: std::sync::Mutex::new(None),
        };
        let work = request::execute(self, &upload, &mut out);
        match timeout {
            Some(limit) => {
                if tokio::time::timeout(limit, work).await.is_err() {
                    out.error = Some(format!("timed out after {limit:?}"));
                }
            }
            None => work.await,
        }
        out.bytes_out = upload.handed_over.load(Ordering::Relaxed);
        // A timed-out request (a bulk transfer's normal end) still reports its transport state.
        let used = upload.used_connection();
        if self.collect_stats && out.transport.is_none() {
            out.transport = used.and_then(|c| c.snapshot());
        }
        out.total = out.started.elapsed();
        out
    }

    /// Closes every pooled connection (the next request opens a new one; TLS session tickets
    /// stay cached, so it may resume).
    pub fn close_idle(&self) {
        if let Some(p) = &self.pool {
            p.clear();
        }
    }

    /// Closes all connections and the QUIC endpoint, waiting briefly so peers see the close.
    pub async fn close(&self) {
        self.close_idle();
        self.inner.close().await;
    }
}
