//! One open client connection of any HTTP version, shareable between request tasks.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::sockopt;
use crate::stats::{QuicStatsSnapshot, TransportSnapshot};

/// Request body type for hyper (HTTP/1.1).
pub(crate) type ReqBody = crate::body::UploadBody;

/// The h3 request sender over quinn.
pub(crate) type H3Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// The protocol handle of a connection.
pub(crate) enum Handle {
    /// HTTP/1.1: one request at a time; the sender is taken out while a request runs (and
    /// never put back if the exchange failed, which marks the connection closed).
    H1(Mutex<Option<hyper::client::conn::http1::SendRequest<ReqBody>>>),
    /// HTTP/2, on the `h2` crate directly: hyper's HTTP/2 client hands every request through a
    /// channel to its connection task and spawns a task per request to await the response,
    /// which a load generator pays for on every request. The sender is cloned per request;
    /// `closed` is set when the connection task ends.
    H2 {
        sender: Mutex<h2::client::SendRequest<Bytes>>,
        closed: Arc<AtomicBool>,
    },
    /// HTTP/3: the sender is cloned per request; the quinn connection gives stats and close.
    H3 {
        sender: Mutex<H3Sender>,
        quic: quinn::Connection,
    },
}

/// An open connection with what was learnt while opening it.
pub(crate) struct Conn {
    /// Unique within a client.
    pub id: u64,
    /// The protocol handle.
    pub handle: Handle,
    /// A duplicate of the TCP socket, to read `TCP_INFO` at any time.
    pub tcp_fd: Option<OwnedFd>,
}

/// The last reference gone (a request timed out, the pool dropped the connection): close the
/// socket. Otherwise hyper's connection task keeps a TCP connection whose exchange was abandoned
/// open while it waits for a response that may never come, and the pool, which no longer counts
/// it, opens more: a silent server would collect connections far beyond the pool bound.
impl Drop for Conn {
    fn drop(&mut self) {
        self.close();
    }
}

impl Conn {
    /// The connection can no longer carry requests.
    pub fn is_closed(&self) -> bool {
        match &self.handle {
            Handle::H1(s) => s
                .lock()
                .map(|g| g.as_ref().is_none_or(|s| s.is_closed()))
                .unwrap_or(true),
            Handle::H2 { closed, .. } => closed.load(Ordering::Acquire),
            Handle::H3 { quic, .. } => quic.close_reason().is_some(),
        }
    }

    /// A transport statistics snapshot.
    pub fn snapshot(&self) -> Option<TransportSnapshot> {
        match &self.handle {
            Handle::H3 { quic, .. } => Some(TransportSnapshot::Quic(QuicStatsSnapshot::of(quic))),
            _ => self
                .tcp_fd
                .as_ref()
                .and_then(|fd| sockopt::tcp_info(fd).ok())
                .map(TransportSnapshot::Tcp),
        }
    }

    /// Closes the connection now (QUIC: CONNECTION_CLOSE with H3_NO_ERROR; TCP: shutdown).
    pub fn close(&self) {
        match &self.handle {
            Handle::H3 { quic, .. } => quic.close(0x100u32.into(), b""),
            _ => {
                if let Some(fd) = &self.tcp_fd {
                    // The connection task owns the stream; shutting the socket down ends it
                    // promptly.
                    let _ = socket2::SockRef::from(fd).shutdown(std::net::Shutdown::Both);
                }
            }
        }
    }
}
