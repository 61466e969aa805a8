//! A transparent split-connection TCP proxy (a PEP in the manner of PEPsal, RFC 3135 §2.2):
//! the kernel hands it the client's TCP connections (netfilter TPROXY delivers them to a
//! listener bound with `IP_TRANSPARENT`), the kernel's own TCP answers the client at once (leg
//! A), and the relay opens its own kernel TCP connection to the original destination (leg B),
//! keeping the client's address and port, then copies the byte stream both ways.
//!
//! TLS stays end to end: the relay sees TCP payload bytes only. Every connection of the PEP
//! runs with the congestion controller given here (`TCP_CONGESTION` on the listener, which
//! accepted sockets inherit, and on each leg B before it connects); windows, buffers and the
//! initial window come from the namespace's sysctls and route attributes, set by whoever
//! starts the relay.
//!
//! Bounded: per direction the relay holds at most `buffer` bytes that it has read from the
//! incoming leg and the outgoing leg's peer has not acknowledged yet (the outgoing socket's
//! queue, `SIOCOUTQ`, plus one chunk in hand), as the simulator's PEP does; a full buffer stops
//! the reads, so the incoming leg's receive window closes instead of the PEP growing. At most
//! `max_connections` relayed connections exist at once; more are reset and counted.
//!
//! Without a fixed `upstream`, the relay needs `CAP_NET_ADMIN` (root) for `IP_TRANSPARENT`.
//! With one, it is a plain (non-transparent) relay to that address, usable on loopback.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Semaphore;

use crate::sockopt;
use crate::stats::{unix_now, TcpInfoSnapshot};

/// Default for [`PepConfig::max_connections`]: PEPsal's default is of this order (it
/// preallocates a connection table); an emulated flow opens a handful.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// Bytes read from a leg in one go: the relay's own memory per direction and connection.
const CHUNK: usize = 64 * 1024;

/// How long a direction waits before looking again when its buffer is full. The kernel gives no
/// readiness event for "the peer acknowledged bytes"; 1 ms is far below any emulated RTT.
const FULL_RETRY: Duration = Duration::from_millis(1);

/// How long leg B may take to connect: SYN retransmissions over a lossy GEO path (1 s, 3 s,
/// 7 s, 15 s, 31 s after the first) fit in it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(63);

/// What the relay runs with; serialized, what the emulator hands `quiclab pep --config`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PepConfig {
    /// Where the listener binds: TPROXY's target (e.g. `0.0.0.0:4480`) or, with `upstream`, any
    /// address the clients connect to.
    pub listen: SocketAddr,
    /// Fixed destination of leg B; `None` = the client's original destination, connected from
    /// the client's own address and port (transparent, needs `IP_TRANSPARENT`).
    pub upstream: Option<SocketAddr>,
    /// Kernel congestion controller of both legs (`TCP_CONGESTION`: `cubic`, `reno`, …);
    /// `None` = the namespace's default.
    pub cc: Option<String>,
    /// Bytes held per direction (read from one leg, not yet acknowledged on the other).
    pub buffer: u64,
    /// Relayed connections open at once; more are reset.
    pub max_connections: usize,
}

impl Default for PepConfig {
    /// Transparent, on port 4480, with the simulator's default 4 MiB buffer per direction.
    fn default() -> Self {
        PepConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 4480)),
            upstream: None,
            cc: None,
            buffer: 4 << 20,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// One relayed connection, as the relay logs it when the connection ends (one JSON line).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PepConnectionRecord {
    /// The client's address (leg A's peer; also leg B's local address when transparent).
    pub client: Option<SocketAddr>,
    /// The original destination (leg B's peer).
    pub server: Option<SocketAddr>,
    /// When leg A was accepted, s since the Unix epoch.
    pub accepted_unix_s: f64,
    /// When the relay finished, s since the Unix epoch.
    pub ended_unix_s: f64,
    /// Client → server bytes relayed.
    pub upstream_bytes: u64,
    /// Server → client bytes relayed.
    pub downstream_bytes: u64,
    /// Most client → server bytes held at once (read from leg A, not yet acknowledged on B).
    pub max_held_upstream_bytes: u64,
    /// Most server → client bytes held at once.
    pub max_held_downstream_bytes: u64,
    /// `TCP_INFO` of leg A (the PEP's end of the client's connection) at the end.
    pub client_leg: Option<TcpInfoSnapshot>,
    /// `TCP_INFO` of leg B (the PEP's own connection to the server) at the end.
    pub server_leg: Option<TcpInfoSnapshot>,
    /// Why the connection ended early (refused, connect failure, reset); `None` when clean.
    pub error: Option<String>,
    /// The relay stopped while the connection was still open (HTTP/2 keeps connections open
    /// until the emulator tears the run down): the record is its state at that moment.
    #[serde(default)]
    pub open_at_stop: bool,
}

/// Counters of a relay's life, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PepSummary {
    /// Connections accepted and relayed.
    pub relayed: u64,
    /// Connections reset because `max_connections` were open.
    pub refused: u64,
    /// Relayed connections that ended with an error.
    pub failed: u64,
}

/// Why the relay could not run.
#[derive(Debug, thiserror::Error)]
pub enum PepError {
    /// Socket set-up (bind, `IP_TRANSPARENT`, `TCP_CONGESTION`) failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// A configuration value is unusable.
    #[error("invalid PEP configuration: {0}")]
    Invalid(String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> PepError {
    let what = what.into();
    move |source| PepError::Io { what, source }
}

/// Shared by the accept loop and the connection tasks.
struct Shared {
    cfg: PepConfig,
    log: Option<Mutex<File>>,
    summary: Mutex<PepSummary>,
    /// Connections being relayed, by a running number. A task removes its entry (under the
    /// lock) before its sockets close, so an entry's descriptors are always open ones.
    live: Mutex<BTreeMap<u64, Arc<Live>>>,
    /// Source of the running numbers.
    ids: AtomicU64,
}

/// A connection being relayed: what its record needs while it is still open.
struct Live {
    /// Addresses and acceptance time.
    start: PepConnectionRecord,
    /// Per direction (upstream, downstream): bytes relayed.
    bytes: [AtomicU64; 2],
    /// Per direction: most bytes held at once.
    held: [AtomicU64; 2],
    /// Leg A's and leg B's descriptors.
    fds: [RawFd; 2],
}

impl Live {
    /// The record as of now: counters and both legs' `TCP_INFO`.
    fn record(&self) -> PepConnectionRecord {
        PepConnectionRecord {
            upstream_bytes: self.bytes[0].load(Ordering::Relaxed),
            downstream_bytes: self.bytes[1].load(Ordering::Relaxed),
            max_held_upstream_bytes: self.held[0].load(Ordering::Relaxed),
            max_held_downstream_bytes: self.held[1].load(Ordering::Relaxed),
            client_leg: sockopt::tcp_info(&self.fds[0]).ok(),
            server_leg: sockopt::tcp_info(&self.fds[1]).ok(),
            ended_unix_s: unix_now(),
            ..self.start.clone()
        }
    }
}

impl Shared {
    fn record(&self, rec: &PepConnectionRecord) {
        let Some(log) = &self.log else { return };
        if let Ok(mut line) = serde_json::to_string(rec) {
            line.push('\n');
            // One write per line (append mode): a reader never sees half a record, and a lost
            // record only loses statistics, never the relay.
            let _ = log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .write_all(line.as_bytes());
        }
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Live>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn count(&self, f: impl FnOnce(&mut PepSummary)) {
        f(&mut self.summary.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// Binds the listener: `SO_REUSEADDR`, `IP_TRANSPARENT` when transparent, the controller.
fn listener(cfg: &PepConfig) -> Result<TcpListener, PepError> {
    let domain = socket2::Domain::for_address(cfg.listen);
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))
        .map_err(io_err("socket"))?;
    s.set_reuse_address(true).map_err(io_err("SO_REUSEADDR"))?;
    if cfg.upstream.is_none() {
        s.set_ip_transparent(true)
            .map_err(io_err("IP_TRANSPARENT on the listener (needs root)"))?;
    }
    if let Some(cc) = &cfg.cc {
        sockopt::set_tcp_congestion(&s, cc)
            .map_err(io_err(format!("TCP_CONGESTION {cc} on the listener")))?;
    }
    s.bind(&cfg.listen.into())
        .map_err(io_err(format!("bind {}", cfg.listen)))?;
    s.listen(1024).map_err(io_err("listen"))?;
    s.set_nonblocking(true).map_err(io_err("O_NONBLOCK"))?;
    TcpListener::from_std(s.into()).map_err(io_err("register the listener"))
}

/// Opens leg B toward `server`, from `client` when transparent.
async fn connect_upstream(
    cfg: &PepConfig,
    client: SocketAddr,
    server: SocketAddr,
) -> io::Result<TcpStream> {
    let domain = socket2::Domain::for_address(server);
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    if cfg.upstream.is_none() {
        // The server sees the client's address and port, as with PEPsal's TPROXY mode.
        s.set_ip_transparent(true)?;
        s.set_reuse_address(true)?;
        s.bind(&client.into())?;
    }
    if let Some(cc) = &cfg.cc {
        sockopt::set_tcp_congestion(&s, cc)?;
    }
    s.set_nonblocking(true)?;
    let socket = TcpSocket::from_std_stream(std::net::TcpStream::from(s));
    tokio::time::timeout(CONNECT_TIMEOUT, socket.connect(server))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))?
}

/// Bytes the kernel still holds on a TCP socket: sent and unacknowledged, or not sent yet.
fn unacked(fd: RawFd) -> u64 {
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (= TIOCOUTQ) writes one int to the pointer.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    if rc == 0 {
        n.max(0) as u64
    } else {
        0
    }
}

/// Copies one direction until the incoming leg's FIN (then passes it on with `shutdown`),
/// holding at most `buffer` unacknowledged bytes; counts into `bytes` and `max_held`.
async fn pump(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    buffer: u64,
    bytes: &AtomicU64,
    max_held: &AtomicU64,
) -> io::Result<()> {
    let fd = to.as_ref().as_raw_fd();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let held = unacked(fd);
        max_held.fetch_max(held, Ordering::Relaxed);
        let room = buffer.saturating_sub(held);
        if room == 0 {
            tokio::time::sleep(FULL_RETRY).await;
            continue;
        }
        let want = usize::try_from(room).unwrap_or(CHUNK).min(CHUNK);
        let n = from.read(&mut chunk[..want]).await?;
        if n == 0 {
            // The FIN follows every relayed byte, as in the simulator's PEP.
            return to.shutdown().await;
        }
        to.write_all(&chunk[..n]).await?;
        bytes.fetch_add(n as u64, Ordering::Relaxed);
        max_held.fetch_max(unacked(fd), Ordering::Relaxed);
    }
}

/// Relays one accepted connection to its end and logs it.
async fn relay(shared: Arc<Shared>, leg_a: TcpStream, client: SocketAddr) {
    let mut rec = PepConnectionRecord {
        client: Some(client),
        accepted_unix_s: unix_now(),
        ..PepConnectionRecord::default()
    };
    let _ = leg_a.set_nodelay(true);
    // With TPROXY the accepted socket's local address is the client's original destination.
    let server = shared
        .cfg
        .upstream
        .or_else(|| leg_a.local_addr().ok())
        .unwrap_or(client);
    rec.server = Some(server);
    let leg_b = match connect_upstream(&shared.cfg, client, server).await {
        Ok(s) => s,
        Err(e) => {
            // Nobody to relay to: reset the client's connection, as a failed leg would.
            let _ = socket2::SockRef::from(&leg_a).set_linger(Some(Duration::ZERO));
            rec.client_leg = sockopt::tcp_info(&leg_a).ok();
            rec.error = Some(format!("connect to {server}: {e}"));
            rec.ended_unix_s = unix_now();
            shared.count(|s| s.failed += 1);
            shared.record(&rec);
            return;
        }
    };
    let _ = leg_b.set_nodelay(true);
    let live = Arc::new(Live {
        start: rec,
        bytes: [AtomicU64::new(0), AtomicU64::new(0)],
        held: [AtomicU64::new(0), AtomicU64::new(0)],
        fds: [leg_a.as_raw_fd(), leg_b.as_raw_fd()],
    });
    let id = shared.next_id();
    shared.lock_live().insert(id, live.clone());
    let (mut a_read, mut a_write) = leg_a.into_split();
    let (mut b_read, mut b_write) = leg_b.into_split();
    let buffer = shared.cfg.buffer;
    let (mut up_res, mut down_res) = (None, None);
    {
        let up = pump(
            &mut a_read,
            &mut b_write,
            buffer,
            &live.bytes[0],
            &live.held[0],
        );
        let down = pump(
            &mut b_read,
            &mut a_write,
            buffer,
            &live.bytes[1],
            &live.held[1],
        );
        tokio::pin!(up, down);
        // Until both directions have passed their FIN on, or either fails: a leg that fails
        // leaves nobody to talk to, so the other direction is abandoned too.
        while up_res.is_none() || down_res.is_none() {
            tokio::select! {
                r = &mut up, if up_res.is_none() => up_res = Some(r),
                r = &mut down, if down_res.is_none() => down_res = Some(r),
            }
            if matches!(up_res, Some(Err(_))) || matches!(down_res, Some(Err(_))) {
                break;
            }
        }
    }
    // Deregistered first: the sockets (still held by the halves) close when this returns.
    shared.lock_live().remove(&id);
    let mut rec = live.record();
    if let Some(e) = [up_res, down_res]
        .into_iter()
        .find_map(|r| r.and_then(Result::err))
    {
        rec.error = Some(e.to_string());
        // A reset on one leg resets the other (RST on close), as in the simulator's PEP.
        for half in [a_write.as_ref(), b_write.as_ref()] {
            let _ = socket2::SockRef::from(half).set_linger(Some(Duration::ZERO));
        }
        shared.count(|s| s.failed += 1);
    }
    shared.record(&rec);
}

/// Runs the relay until `stop` resolves; logs one [`PepConnectionRecord`] per connection to
/// `log` (JSON lines) and calls `on_ready` with the bound address once it accepts.
pub async fn run(
    cfg: PepConfig,
    log: Option<File>,
    on_ready: impl FnOnce(SocketAddr) -> io::Result<()>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<PepSummary, PepError> {
    if cfg.buffer == 0 {
        return Err(PepError::Invalid("buffer must be positive".into()));
    }
    if cfg.max_connections == 0 {
        return Err(PepError::Invalid("max_connections must be positive".into()));
    }
    let listener = listener(&cfg)?;
    let bound = listener.local_addr().map_err(io_err("local address"))?;
    on_ready(bound).map_err(io_err("ready file"))?;
    let slots = Arc::new(Semaphore::new(cfg.max_connections));
    let shared = Arc::new(Shared {
        cfg,
        log: log.map(Mutex::new),
        summary: Mutex::new(PepSummary::default()),
        live: Mutex::new(BTreeMap::new()),
        ids: AtomicU64::new(0),
    });
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => break,
            a = listener.accept() => a,
        };
        let (leg_a, client) = match accepted {
            Ok(a) => a,
            // A connection that died in the accept queue (or a transient fd shortage) is that
            // connection's problem, not the relay's.
            Err(_) => continue,
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            let _ = socket2::SockRef::from(&leg_a).set_linger(Some(Duration::ZERO));
            shared.count(|s| s.refused += 1);
            shared.record(&PepConnectionRecord {
                client: Some(client),
                accepted_unix_s: unix_now(),
                ended_unix_s: unix_now(),
                error: Some("refused: max connections open".into()),
                ..PepConnectionRecord::default()
            });
            continue;
        };
        shared.count(|s| s.relayed += 1);
        let shared = shared.clone();
        tokio::spawn(async move {
            relay(shared, leg_a, client).await;
            drop(permit);
        });
    }
    // Connections still open (their tasks are parked while the lock is held) are logged as
    // they stand: the run that stops the relay still wants their statistics.
    for live in shared.lock_live().values() {
        let mut rec = live.record();
        rec.open_at_stop = true;
        shared.record(&rec);
    }
    let summary = shared
        .summary
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(summary)
}

/// Runs the relay on its own single-threaded runtime until SIGINT or SIGTERM (what `quiclab
/// pep` does). A relay at emulated link rates is far from needing a second core.
pub fn run_until_signal(
    cfg: PepConfig,
    log: Option<File>,
    on_ready: impl FnOnce(SocketAddr) -> io::Result<()>,
) -> Result<PepSummary, PepError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io_err("tokio runtime"))?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut int = signal(SignalKind::interrupt()).map_err(io_err("SIGINT handler"))?;
        let mut term = signal(SignalKind::terminate()).map_err(io_err("SIGTERM handler"))?;
        let stop = async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        };
        run(cfg, log, on_ready, stop).await
    })
}
