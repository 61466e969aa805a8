//! What the attack needs from an HTTP client: send one request, report how it went.
//!
//! Keeping this a small trait lets the scheduler and the results pipeline be tested with a fake
//! client, and keeps the real client (`endpoints::client`) behind one adapter.

use std::future::Future;
use std::time::Duration;

use crate::targets::Target;

/// How one request went, as told by the client. Service time is measured by the attack itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// TCP or UDP connect time, when this request opened a connection.
    pub connect: Option<Duration>,
    /// TLS handshake time over TCP.
    pub tls: Option<Duration>,
    /// QUIC handshake time.
    pub quic_handshake: Option<Duration>,
    /// Time to the first response byte, from the send.
    pub ttfb: Option<Duration>,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// Whether an existing connection carried the request.
    pub reused_connection: bool,
}

impl Outcome {
    /// An outcome that is only an error.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            ..Self::default()
        }
    }
}

/// An HTTP client the attack can drive: one per lane, used only by the attack thread that owns
/// the lane; `send` is called for many requests in flight at once (their futures run
/// concurrently inside that thread's attack task).
pub trait Requester: Send + Sync + 'static {
    /// Sends one request and reports its outcome; never panics on network input.
    fn send(&self, target: &Target) -> impl Future<Output = Outcome> + Send;

    /// Called once after the attack, on the lane's thread: close connections gracefully.
    fn close(&self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
}
