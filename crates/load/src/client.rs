//! The real client: `endpoints::client::Client` behind the [`Requester`] trait, and a blocking
//! entry point that owns the tokio runtime (so the CLI needs no async code).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use endpoints::client::{Client, ClientConfig, ClientError, RequestSpec};

use crate::attack::{attack, AttackError, AttackPlan, Sink};
use crate::live::LiveStats;
use crate::metrics::Summary;
use crate::requester::{Outcome, Requester};
use crate::targets::Target;

/// An attack against real servers that could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The client configuration was rejected.
    #[error("client: {0}")]
    Client(#[from] ClientError),
    /// The attack failed.
    #[error(transparent)]
    Attack(#[from] AttackError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// `endpoints::client::Client` as a [`Requester`].
#[derive(Debug, Clone)]
pub struct EndpointsRequester {
    client: Client,
}

impl EndpointsRequester {
    /// Wraps a client.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

impl Requester for EndpointsRequester {
    async fn send(&self, target: Target) -> Outcome {
        let called = Instant::now();
        let spec = RequestSpec {
            method: target.method,
            url: target.url,
            headers: target.headers,
            body: target.body,
        };
        let out = self.client.send(spec).await;
        // The client times TTFB from when it got a pool slot; the record wants it from the send,
        // so add the pool wait back.
        let pool_wait = out.started.saturating_duration_since(called);
        Outcome {
            connect: out.connect,
            tls: out.tls,
            quic_handshake: out.quic_handshake,
            ttfb: out.ttfb.map(|t| t + pool_wait),
            bytes_in: out.bytes_in,
            bytes_out: out.bytes_out,
            status: out.status,
            error: out.error,
            reused_connection: out.reused_connection,
        }
    }
}

/// Worker threads for request tasks: the machine's cores, at least 2 (the timing and collector
/// threads are separate OS threads).
fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// Runs one attack with a fresh client built from `config` on a runtime of its own, blocking
/// until every request has finished and been written. Closes the client's connections after.
pub fn run_blocking(
    plan: AttackPlan,
    config: ClientConfig,
    sink: Sink,
    live: Arc<LiveStats>,
    stop: Arc<AtomicBool>,
) -> Result<Summary, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    runtime.block_on(async move {
        let client = Client::new(config)?;
        let requester = Arc::new(EndpointsRequester::new(client.clone()));
        let result = attack(plan, requester, sink, live, stop).await;
        client.close().await;
        Ok(result?)
    })
}
