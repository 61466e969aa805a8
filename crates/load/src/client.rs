//! The real client: `endpoints::client::Client` behind the [`Requester`] trait, and a blocking
//! entry point that owns the tokio runtime (so the CLI needs no async code).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use endpoints::client::{Client, ClientConfig, ClientError, ConnPolicy, HttpVersion, RequestSpec};

use crate::attack::{attack, AttackError, AttackPlan, Sink, MAX_THREADS};
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
    async fn send(&self, target: &Target) -> Outcome {
        let called = Instant::now();
        let spec = RequestSpec {
            method: target.method.clone(),
            url: target.url.clone(),
            headers: target.headers.clone(),
            body: target.body.clone(),
        };
        // The attack bounds every request by its own timeout (all of a thread's at once), so
        // the client adds no timer of its own per request.
        let out = self.client.send_untimed(spec).await;
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

    async fn close(&self) {
        self.client.close().await;
    }
}

/// Attack threads by default (`--threads`): one per core the process may use, at most
/// [`MAX_THREADS`].
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS))
}

/// The clients that carry an attack: one set per attack thread, one client per lane. Every
/// thread gets clients of its own, so its connections (and for HTTP/3 its QUIC endpoints, whose
/// driver tasks run on the thread that opened them) live on its runtime alone.
///
/// HTTP/2 and HTTP/3 with a pool of `n` connections become `n` clients of one connection each,
/// dealt to the threads in turn (so at most `n` threads): the shared pool would fill one
/// connection up to its stream limit before opening the next, so at a low in-flight count a
/// single connection would carry everything; separate clients spread requests evenly over all
/// `n` connections, and HTTP/3 gets one endpoint (one UDP socket) per connection. HTTP/1.1 (a
/// connection per in-flight request) splits its pool of `n` connections between the threads,
/// one client each; new-connection-per-request gives each thread one client.
pub fn lane_clients(
    config: &ClientConfig,
    threads: usize,
) -> Result<Vec<Vec<Client>>, ClientError> {
    if threads == 0 {
        return Err(ClientError::Invalid(
            "at least one attack thread is needed".into(),
        ));
    }
    match config.policy {
        ConnPolicy::Pool {
            max_connections,
            max_streams_per_connection,
        } => {
            let threads = threads.min(max_connections.max(1));
            let mut shards: Vec<Vec<Client>> = (0..threads).map(|_| Vec::new()).collect();
            if config.http == HttpVersion::H1 {
                for (k, shard) in shards.iter_mut().enumerate() {
                    let share =
                        max_connections / threads + usize::from(k < max_connections % threads);
                    shard.push(Client::new(ClientConfig {
                        policy: ConnPolicy::Pool {
                            max_connections: share,
                            max_streams_per_connection,
                        },
                        ..config.clone()
                    })?);
                }
            } else {
                for i in 0..max_connections {
                    shards[i % threads].push(Client::new(ClientConfig {
                        policy: ConnPolicy::Pool {
                            max_connections: 1,
                            max_streams_per_connection,
                        },
                        ..config.clone()
                    })?);
                }
            }
            Ok(shards)
        }
        ConnPolicy::PerRequest => (0..threads)
            .map(|_| Client::new(config.clone()).map(|c| vec![c]))
            .collect(),
    }
}

/// Runs one attack on `threads` attack threads with fresh clients built from `config` (see
/// [`lane_clients`]), blocking until every request has finished and been written. Closes the
/// clients' connections after.
pub fn run_blocking(
    plan: AttackPlan,
    config: ClientConfig,
    threads: usize,
    sink: Sink,
    live: Arc<LiveStats>,
    stop: Arc<AtomicBool>,
) -> Result<Summary, RunError> {
    let shards = lane_clients(&config, threads)?
        .into_iter()
        .map(|clients| clients.into_iter().map(EndpointsRequester::new).collect())
        .collect();
    Ok(attack(plan, shards, sink, live, stop)?)
}
