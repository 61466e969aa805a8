//! Opening connections: TCP connect + TLS + HTTP/1.1 or HTTP/2 handshake, or QUIC + HTTP/3.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper_util::rt::TokioIo;
use quinn::crypto::rustls::QuicClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpSocket;
use tokio_rustls::TlsConnector;
use transport::qlog::{TapClientConfig, Vantage};

use super::conn::{Conn, Handle, ReqBody};
use super::{ClientConfig, ClientError, HttpVersion, RequestOutcome};
use crate::quic::{self, QuicConfig};
use crate::sockopt;
use crate::tls::{self, FileKeyLog, Trust};

/// Bytes read from a client TCP socket per system call at most (the buffer under TLS): room
/// for two full TLS records. One buffer per open connection, so a client's memory for them is
/// bounded by its pool (the load tester's default of 64 HTTP/1.1 connections: 2 MB).
const READ_BUFFER: usize = 32 * 1024;

/// Where a request goes: the resolved address and the TLS name.
#[derive(Debug, Clone)]
pub struct Target {
    /// Resolved socket address (the first of `addrs`; QUIC uses only this one).
    pub addr: SocketAddr,
    /// Every resolved address, in resolver order (TCP tries them in turn).
    pub addrs: Vec<SocketAddr>,
    /// Name for SNI and certificate verification.
    pub server_name: String,
    /// `host[:port]` for the Host header / :authority.
    pub authority: String,
}

/// A host's addresses, looked up once.
type Resolution = tokio::sync::OnceCell<Vec<SocketAddr>>;

/// The QUIC client's configuration, and its parts for a connection that gets its own.
struct QuicClient {
    /// For connections without a qlog.
    base: quinn::ClientConfig,
    /// The TLS side, shared by every connection (session tickets for 0-RTT).
    crypto: Arc<dyn quinn::crypto::ClientConfig>,
    /// The address-validation tokens, shared by every connection.
    tokens: Arc<dyn quinn_proto::TokenStore>,
}

/// Shared, expensive-to-build state: TLS configs, the QUIC endpoints, a resolver cache.
pub(crate) struct Connector {
    http: HttpVersion,
    tcp_tls: Option<TlsConnector>,
    quic_client: Option<QuicClient>,
    quic_config: QuicConfig,
    zero_rtt: bool,
    tcp_cc: Option<String>,
    h2_stream_window: u32,
    h2_conn_window: u32,
    server_name: Option<String>,
    /// One endpoint per address family, opened on first use (needs a runtime).
    endpoints: Mutex<[Option<quinn::Endpoint>; 2]>,
    /// One resolution per authority, shared by every caller, including those that ask while it
    /// runs: a burst of connections (a 256-connection HTTP/1.1 pool) must not start a
    /// resolver thread each (each new thread cost a 2 MB page clear in the allocator: a quarter
    /// of the generator's CPU at 10k req/s).
    resolved: Mutex<HashMap<String, Arc<Resolution>>>,
    next_id: AtomicU64,
}

impl Connector {
    pub(crate) fn new(cfg: &ClientConfig) -> Result<Self, ClientError> {
        let trust = if cfg.tls.insecure {
            Trust::Insecure
        } else {
            Trust::Roots(Arc::new(tls::load_roots(cfg.tls.ca.as_deref())?))
        };
        let keylog = cfg
            .tls
            .keylog
            .as_deref()
            .map(FileKeyLog::open)
            .transpose()?;
        let (tcp_tls, quic_client) = match cfg.http {
            HttpVersion::H1 | HttpVersion::H2 => {
                let alpn: &[&[u8]] = if cfg.http == HttpVersion::H2 {
                    &[b"h2"]
                } else {
                    &[b"http/1.1"]
                };
                let c = tls::client_config(&trust, alpn, keylog, false, cfg.tls12_only)?;
                (Some(TlsConnector::from(Arc::new(c))), None)
            }
            HttpVersion::H3 => {
                let c = tls::client_config(&trust, &[b"h3"], keylog, cfg.zero_rtt, false)?;
                let crypto = QuicClientConfig::try_from(c)
                    .map_err(|e| ClientError::Invalid(format!("QUIC TLS config: {e}")))?;
                let crypto: Arc<dyn quinn::crypto::ClientConfig> = Arc::new(crypto);
                let tokens = cfg.quic.knobs.token_store();
                let mut base = quinn::ClientConfig::new(crypto.clone());
                base.transport_config(Arc::new(cfg.quic.transport_config(None)));
                base.token_store(tokens.clone());
                (
                    None,
                    Some(QuicClient {
                        base,
                        crypto,
                        tokens,
                    }),
                )
            }
        };
        Ok(Self {
            http: cfg.http,
            tcp_tls,
            quic_client,
            quic_config: cfg.quic.clone(),
            zero_rtt: cfg.zero_rtt,
            tcp_cc: cfg.tcp_cc.clone(),
            h2_stream_window: cfg.h2_stream_window,
            h2_conn_window: cfg.h2_conn_window,
            server_name: cfg.tls.server_name.clone(),
            endpoints: Mutex::new([None, None]),
            resolved: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        })
    }

    pub(crate) fn http(&self) -> HttpVersion {
        self.http
    }

    /// Resolves the URL's host (cached per authority).
    pub(crate) async fn target(&self, url: &http::Uri) -> Result<Target, String> {
        match url.scheme_str() {
            Some("https") => {}
            other => return Err(format!("only https URLs are supported (got {other:?})")),
        }
        let host = url.host().ok_or("URL has no host")?;
        let port = url.port_u16().unwrap_or(443);
        let bare_host = host.trim_start_matches('[').trim_end_matches(']');
        let authority = url
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_else(|| host.to_string());
        let server_name = self
            .server_name
            .clone()
            .unwrap_or_else(|| bare_host.to_string());
        let resolution = self
            .resolved
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(authority.clone())
            .or_default()
            .clone();
        // A failed lookup leaves the cell empty, so the next caller tries again.
        let addrs = resolution
            .get_or_try_init(|| async {
                tokio::net::lookup_host((bare_host, port))
                    .await
                    .map(|found| found.collect::<Vec<_>>())
                    .map_err(|e| format!("cannot resolve {bare_host}: {e}"))
            })
            .await?
            .clone();
        let addr = *addrs
            .first()
            .ok_or_else(|| format!("{bare_host} has no address"))?;
        Ok(Target {
            addr,
            addrs,
            server_name,
            authority,
        })
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Opens a connection, recording the set-up phases in `out`.
    pub(crate) async fn open(
        &self,
        target: &Target,
        out: &mut RequestOutcome,
    ) -> Result<Conn, String> {
        match self.http {
            HttpVersion::H1 | HttpVersion::H2 => self.open_tcp(target, out).await,
            HttpVersion::H3 => self.open_quic(target, out).await,
        }
    }

    async fn open_tcp(&self, target: &Target, out: &mut RequestOutcome) -> Result<Conn, String> {
        let tls = self.tcp_tls.as_ref().ok_or("no TLS configuration")?;
        let name = ServerName::try_from(target.server_name.clone())
            .map_err(|e| format!("invalid server name {:?}: {e}", target.server_name))?;
        let t0 = Instant::now();
        let mut last_error = String::from("no address");
        let mut connected = None;
        for &addr in &target.addrs {
            match self.connect_one(addr).await {
                Ok(s) => {
                    connected = Some(s);
                    break;
                }
                Err(e) => last_error = e,
            }
        }
        let stream = connected.ok_or(last_error)?;
        let _ = stream.set_nodelay(true);
        let t1 = Instant::now();
        out.connect = Some(t1 - t0);
        let tcp_fd = stream.as_fd().try_clone_to_owned().ok();
        // rustls reads the socket 4 kB at a time (three `recvfrom` calls and a reallocation of
        // its buffer for an 11 kB response); a read buffer under it takes what the socket holds
        // in one call, up to READ_BUFFER, and rustls then copies from memory.
        let stream = tokio::io::BufReader::with_capacity(READ_BUFFER, stream);
        let tls_stream = tls
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS handshake with {}: {e}", target.server_name))?;
        out.tls = Some(t1.elapsed());
        out.tls_resumed =
            tls_stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        let handle = if self.http == HttpVersion::H2 {
            // hyper's client settings (hyper 1.x `proto::h2::client`): no server push, 100
            // streams before the server's SETTINGS arrive, 16 kB header lists and frames, a 1 MB
            // send buffer per stream; windows and reset-stream bound as before.
            let (sender, conn) = h2::client::Builder::new()
                .enable_push(false)
                .initial_max_send_streams(100)
                .max_header_list_size(16 * 1024)
                .max_frame_size(16 * 1024)
                .max_send_buffer_size(1024 * 1024)
                .initial_window_size(self.h2_stream_window)
                .initial_connection_window_size(self.h2_conn_window)
                .max_concurrent_reset_streams(1024)
                .max_local_error_reset_streams(Some(1024))
                .handshake::<_, Bytes>(tls_stream)
                .await
                .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
            let closed = Arc::new(AtomicBool::new(false));
            let ended = closed.clone();
            tokio::spawn(async move {
                let _ = conn.await;
                ended.store(true, Ordering::Release);
            });
            Handle::H2 {
                sender: std::sync::Mutex::new(sender),
                closed,
            }
        } else {
            let (sender, conn) = hyper::client::conn::http1::Builder::new()
                .handshake::<_, ReqBody>(TokioIo::new(tls_stream))
                .await
                .map_err(|e| format!("HTTP/1.1 handshake: {e}"))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Handle::H1(std::sync::Mutex::new(Some(sender)))
        };
        Ok(Conn {
            id: self.next_id(),
            handle,
            tcp_fd,
        })
    }

    async fn connect_one(&self, addr: SocketAddr) -> Result<tokio::net::TcpStream, String> {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(|e| format!("socket: {e}"))?;
        if let Some(cc) = &self.tcp_cc {
            sockopt::set_tcp_congestion(&socket, cc)
                .map_err(|e| format!("TCP congestion control {cc:?}: {e}"))?;
        }
        socket
            .connect(addr)
            .await
            .map_err(|e| format!("TCP connect to {addr}: {e}"))
    }

    fn endpoint(&self, addr: SocketAddr) -> Result<quinn::Endpoint, String> {
        let family = usize::from(addr.is_ipv6());
        let mut eps = self
            .endpoints
            .lock()
            .map_err(|_| "endpoint lock poisoned")?;
        if let Some(ep) = &eps[family] {
            return Ok(ep.clone());
        }
        let bind: SocketAddr = if addr.is_ipv6() {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        };
        let udp = quic::bind_udp(bind).map_err(|e| e.to_string())?;
        let ep = self
            .quic_config
            .endpoint(udp, None)
            .map_err(|e| format!("QUIC endpoint: {e}"))?;
        eps[family] = Some(ep.clone());
        Ok(ep)
    }

    async fn open_quic(&self, target: &Target, out: &mut RequestOutcome) -> Result<Conn, String> {
        let client = self.quic_client.as_ref().ok_or("no QUIC configuration")?;
        let endpoint = self.endpoint(target.addr)?;
        let cfg = match self.quic_config.qlog_stream(Vantage::Client) {
            // The connection's own qlog, and its keys parse each packet's frames for it.
            Some((qlog, tap)) => {
                let mut c =
                    quinn::ClientConfig::new(TapClientConfig::new(client.crypto.clone(), tap));
                c.transport_config(Arc::new(self.quic_config.transport_config(Some(qlog))));
                c.token_store(client.tokens.clone());
                c
            }
            None => client.base.clone(),
        };
        let t0 = Instant::now();
        let connecting = endpoint
            .connect_with(cfg, target.addr, &target.server_name)
            .map_err(|e| format!("QUIC connect to {}: {e}", target.addr))?;
        // quinn's shared socket never hears ICMP errors: race a probe that does.
        let handshake = async {
            let conn = if self.zero_rtt {
                match connecting.into_0rtt() {
                    Ok((conn, _accepted)) => {
                        // A session ticket was cached: the request goes out as 0-RTT data. (If the
                        // server rejects it, quinn retransmits it as 1-RTT data transparently.)
                        out.zero_rtt = true;
                        conn
                    }
                    Err(connecting) => connecting
                        .await
                        .map_err(|e| format!("QUIC handshake with {}: {e}", target.addr))?,
                }
            } else {
                connecting
                    .await
                    .map_err(|e| format!("QUIC handshake with {}: {e}", target.addr))?
            };
            Ok::<_, String>(conn)
        };
        let quic_conn = tokio::select! {
            conn = handshake => conn?,
            why = super::unreachable::unreachable(target.addr) => {
                return Err(format!("QUIC handshake with {}: {why}", target.addr));
            }
        };
        out.quic_handshake = Some(t0.elapsed());
        let (mut driver, sender) = h3::client::builder()
            .build::<_, _, bytes::Bytes>(h3_quinn::Connection::new(quic_conn.clone()))
            .await
            .map_err(|e| format!("HTTP/3 set-up: {e}"))?;
        tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        Ok(Conn {
            id: self.next_id(),
            handle: Handle::H3 {
                sender: std::sync::Mutex::new(sender),
                quic: quic_conn,
            },
            tcp_fd: None,
        })
    }

    /// Closes the QUIC endpoints and waits briefly for the closes to go out.
    pub(crate) async fn close(&self) {
        let eps: Vec<quinn::Endpoint> = match self.endpoints.lock() {
            Ok(mut g) => g.iter_mut().filter_map(Option::take).collect(),
            Err(_) => Vec::new(),
        };
        for ep in eps {
            ep.close(0x100u32.into(), b"");
            let _ = tokio::time::timeout(Duration::from_millis(500), ep.wait_idle()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst of connections to one host name (a pool opening) resolves it once. Before, every
    /// caller that found the cache empty started its own lookup, and the runtime a resolver
    /// thread for each: 64 callers here made dozens of threads.
    #[test]
    fn a_burst_of_connections_resolves_the_host_once() {
        const NAME: &str = "resolve-burst"; // the runtime's blocking (resolver) threads
        let connector = Connector::new(&ClientConfig::default()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name(NAME)
            .build()
            .unwrap();
        let url: http::Uri = "https://localhost:4433/".parse().unwrap();
        let targets = runtime.block_on(futures_util::future::join_all(
            (0..64).map(|_| connector.target(&url)),
        ));
        for target in &targets {
            let target = target.as_ref().expect("localhost resolves");
            assert_eq!(target.addr.port(), 4433);
        }
        let resolver_threads = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim() == NAME)
            .count();
        assert_eq!(resolver_threads, 1, "one lookup, one resolver thread");
    }
}
