//! The real client: `endpoints::client::Client` behind the [`Requester`] trait, and a blocking
//! entry point that owns the tokio runtime (so the CLI needs no async code).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use endpoints::client::{Client, ClientConfig, ClientError, ConnPolicy, HttpVersion, RequestSpec};

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

/// Worker threads for request lanes: the machine's cores, at least 2 (the timing and collector
/// threads are separate OS threads).
fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// The clients that carry an attack, one per lane.
///
/// HTTP/2 and HTTP/3 with a pool of `n` connections become `n` clients of one connection each:
/// the shared pool fills one connection up to its stream limit before opening the next, so at
/// a low in-flight count a single connection (and for HTTP/3 a single QUIC endpoint, whose
/// driver is one task) would carry everything and one core would do all the work. Separate
/// clients spread requests evenly over all `n` connections, and HTTP/3 gets one endpoint (one
/// UDP socket and driver task) per connection. HTTP/1.1 (a connection per in-flight request)
/// and new-connection-per-request keep one client, shared by one lane per worker thread.
pub fn lane_clients(config: &ClientConfig) -> Result<Vec<Client>, ClientError> {
    match config.policy {
        ConnPolicy::Pool {
            max_connections,
            max_streams_per_connection,
        } if config.http != HttpVersion::H1 && max_connections > 1 => (0..max_connections)
            .map(|_| {
                Client::new(ClientConfig {
                    policy: ConnPolicy::Pool {
                        max_connections: 1,
                        max_streams_per_connection,
                    },
                    ..config.clone()
                })
            })
            .collect(),
        _ => {
            let client = Client::new(config.clone())?;
            Ok(vec![client; worker_threads()])
        }
    }
}

/// Runs one attack with fresh clients built from `config` (see [`lane_clients`]) on a runtime
/// of its own, blocking until every request has finished and been written. Closes the clients'
/// connections after.
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
        let clients = lane_clients(&config)?;
        let lanes = clients
            .iter()
            .map(|c| EndpointsRequester::new(c.clone()))
            .collect();
        let result = attack(plan, lanes, sink, live, stop).await;
        // Concurrently: each QUIC endpoint waits briefly for its peer to see the close.
        futures_util::future::join_all(clients.iter().map(Client::close)).await;
        Ok(result?)
    })
}
