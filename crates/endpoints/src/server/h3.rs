//! HTTP/3 over quinn + h3.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use futures_util::stream::{FuturesUnordered, StreamExt};
use http::{header, Response, StatusCode};
use quinn::crypto::rustls::QuicServerConfig;
use tokio::task::JoinSet;

use super::routes::{self, Route};
use super::stats_log::{unix_now, ConnectionRecord};
use super::{ConnCounters, ServerError, Shared};
use crate::body::ChunkSlices;
use crate::quic::QuicConfig;
use crate::stats::{QuicStatsSnapshot, TransportSnapshot};
use transport::qlog::{AcceptSlot, TapServerConfig, Vantage};

type H3Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// The server's config, copied per connection when each needs its own qlog.
pub(super) struct Base {
    config: quinn::ServerConfig,
    /// With qlogs: where the connection being accepted puts its frame tap, for the endpoint's
    /// keys (which open its first Initial) and its TLS session.
    accepting: Option<AcceptSlot>,
}

/// Builds the server endpoint on an already bound UDP socket.
pub(super) fn endpoint(
    udp: std::net::UdpSocket,
    tls: rustls::ServerConfig,
    quic: &QuicConfig,
) -> Result<(quinn::Endpoint, Base), ServerError> {
    let crypto =
        QuicServerConfig::try_from(tls).map_err(|e| ServerError::Endpoint(e.to_string()))?;
    let accepting = quic.qlog_dir.as_ref().map(|_| AcceptSlot::default());
    let crypto: Arc<dyn quinn::crypto::ServerConfig> = match &accepting {
        Some(slot) => TapServerConfig::new(Arc::new(crypto), slot.clone()),
        None => Arc::new(crypto),
    };
    let mut sc = quinn::ServerConfig::with_crypto(crypto);
    sc.transport_config(Arc::new(quic.transport_config(None)));
    sc.validation_token_config(quic.knobs.validation_tokens());
    let ep = quic
        .endpoint(udp, Some(sc.clone()))
        .map_err(|e| ServerError::Endpoint(e.to_string()))?;
    Ok((
        ep,
        Base {
            config: sc,
            accepting,
        },
    ))
}

/// Accepts QUIC connections until the endpoint is closed or shutdown is signalled.
pub(super) async fn accept_loop(
    endpoint: quinn::Endpoint,
    base: Base,
    quic: QuicConfig,
    shared: Arc<Shared>,
) {
    let mut shutdown = shared.shutdown.clone();
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                // At the connection cap: CONNECTION_REFUSED now rather than a descriptor-
                // and memory-eating connection.
                let Ok(permit) = shared.connections.clone().try_acquire_owned() else {
                    tracing::debug!("QUIC connection refused: at the connection cap");
                    incoming.refuse();
                    continue;
                };
                let accepted = match quic.qlog_stream(Vantage::Server) {
                    Some((qlog, tap)) => {
                        let mut sc = base.config.clone();
                        sc.transport_config(Arc::new(quic.transport_config(Some(qlog))));
                        // Accepting opens the first Initial and starts the TLS session, both
                        // synchronously: they find the connection's tap in the slot.
                        if let Some(slot) = &base.accepting {
                            slot.set(Some(tap));
                        }
                        let accepted = incoming.accept_with(Arc::new(sc));
                        if let Some(slot) = &base.accepting {
                            slot.set(None);
                        }
                        accepted
                    }
                    None => incoming.accept(),
                };
                match accepted {
                    Ok(connecting) => {
                        let shared = shared.clone();
                        conns.spawn(async move {
                            serve(connecting, shared).await;
                            drop(permit);
                        });
                    }
                    Err(e) => tracing::debug!("QUIC accept failed: {e}"),
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(2), drain)
        .await
        .is_err()
    {
        conns.abort_all();
    }
}

async fn serve(mut connecting: quinn::Connecting, shared: Arc<Shared>) {
    let started = Instant::now();
    // 0.5-RTT (when `early_response` is on, see QuicConfig): a request that arrives as 0-RTT
    // data is answered at once, before the client's Finished, as browsers' servers (and the
    // simulator's quinn server) do; waiting for the handshake made 0-RTT save nothing. quinn
    // still caps what goes to the unvalidated address at 3× the bytes received (RFC 9000 §8.1)
    // unless the client presented an address token.
    let early = if shared.early_response {
        // Not before the whole ClientHello is read: quinn accepts a connection on its first
        // Initial, but a ClientHello with a post-quantum key share (quic-go, Chromium) spans
        // two, and the client's transport parameters — its stream limits — are in the second.
        // Opened earlier, our HTTP/3 control stream meets a limit of zero and quinn-proto
        // (0.11.19) raises the limit without waking the waiting `open_uni`: no SETTINGS, no
        // answer, the client times out. The ClientHello is complete before the server's first
        // flight goes out, so this costs no round trip.
        match within(shared.handshake_timeout, connecting.handshake_data()).await {
            Some(_) => connecting.into_0rtt(),
            None => return,
        }
    } else {
        Err(connecting)
    };
    let conn = match early {
        Ok((conn, established)) => {
            let watchdog = conn.clone();
            let limit = shared.handshake_timeout;
            tokio::spawn(async move {
                if tokio::time::timeout(limit, established).await.is_err() {
                    tracing::debug!("QUIC handshake timed out");
                    watchdog.close(quinn::VarInt::from_u32(0), b"handshake timeout");
                }
            });
            conn
        }
        // Off, or (quinn always allows 0.5-RTT on incoming connections) a future refusal.
        Err(connecting) => match within(shared.handshake_timeout, connecting).await {
            Some(c) => c,
            None => return,
        },
    };
    let peer = conn.remote_address();
    let counters = Arc::new(ConnCounters::default());
    serve_requests(conn.clone(), counters.clone(), &shared).await;
    if let Some(log) = &shared.stats {
        log.write(&record(&conn, peer, &counters, started));
    }
}

/// One step of the QUIC handshake, bounded by `limit`: its value, or `None` (logged at debug
/// level) when it failed or timed out — the connection is then dropped.
async fn within<T>(
    limit: std::time::Duration,
    step: impl std::future::Future<Output = Result<T, quinn::ConnectionError>>,
) -> Option<T> {
    match tokio::time::timeout(limit, step).await {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            tracing::debug!("QUIC handshake failed: {e}");
            None
        }
        Err(_) => {
            tracing::debug!("QUIC handshake timed out");
            None
        }
    }
}

fn record(
    conn: &quinn::Connection,
    peer: SocketAddr,
    counters: &ConnCounters,
    started: Instant,
) -> ConnectionRecord {
    ConnectionRecord {
        unix_time_s: unix_now(),
        http: "3".into(),
        peer,
        requests: counters.requests.load(Ordering::Relaxed),
        body_bytes_sent: counters.body_sent.load(Ordering::Relaxed),
        body_bytes_received: counters.body_received.load(Ordering::Relaxed),
        duration_s: started.elapsed().as_secs_f64(),
        transport: Some(TransportSnapshot::Quic(QuicStatsSnapshot::of(conn))),
        qlog_errors: crate::quic::take_qlog_errors(),
    }
}

async fn serve_requests(conn: quinn::Connection, counters: Arc<ConnCounters>, shared: &Shared) {
    let mut h3_conn: h3::server::Connection<h3_quinn::Connection, Bytes> =
        match h3::server::builder()
            .build(h3_quinn::Connection::new(conn.clone()))
            .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!("HTTP/3 set-up failed: {e}");
                return;
            }
        };
    let mut shutdown = shared.shutdown.clone();
    // A connection's requests run as futures inside this task, not as a spawned task each: a
    // task per request cost an allocation, a scheduler round and often a cross-thread wake-up
    // per request, and quinn serialises a connection's streams anyway (one connection state).
    // Bounded by the connection's stream limit (`max_streams`), as the tasks were.
    let mut requests = FuturesUnordered::new();
    let cap = shared.max_response_size;
    loop {
        tokio::select! {
            _ = shutdown.changed() => {
                let _ = h3_conn.shutdown(0).await;
                break;
            }
            accepted = h3_conn.accept() => match accepted {
                Ok(Some(resolver)) => {
                    let counters = &counters;
                    requests.push(async move {
                        match resolver.resolve_request().await {
                            Ok((req, stream)) => {
                                if let Err(e) = respond(req, stream, counters, cap).await {
                                    tracing::debug!("HTTP/3 request failed: {e}");
                                }
                            }
                            Err(e) => tracing::debug!("HTTP/3 request unreadable: {e}"),
                        }
                    });
                }
                // The client closed the connection (normally with H3_NO_ERROR).
                Ok(None) | Err(_) => break,
            },
            Some(()) = requests.next(), if !requests.is_empty() => {}
        }
    }
    // Let responses in flight finish before the connection is dropped.
    let drain = async { while requests.next().await.is_some() {} };
    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
}

async fn respond(
    req: http::Request<()>,
    mut stream: H3Stream,
    counters: &ConnCounters,
    cap: Option<u64>,
) -> Result<(), h3::error::StreamError> {
    ConnCounters::add(&counters.requests, 1);
    let head_only = req.method() == http::Method::HEAD;
    match routes::route_capped(req.method(), req.uri().path(), cap) {
        Route::Index => send_text(&mut stream, StatusCode::OK, routes::INDEX.into()).await,
        Route::Reject(status) => send_text(&mut stream, status, format!("{status}\n")).await,
        Route::TooLarge { requested, cap } => {
            let answer = routes::too_large_answer(requested, cap);
            send_text(&mut stream, StatusCode::BAD_REQUEST, answer).await
        }
        Route::Generate(n) => {
            let resp = Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_LENGTH, n)
                .header(header::CONTENT_TYPE, "application/octet-stream")
                .body(())
                .unwrap_or_default();
            stream.send_response(resp).await?;
            if !head_only {
                for slice in ChunkSlices::new(n) {
                    let len = slice.len() as u64;
                    stream.send_data(slice).await?;
                    ConnCounters::add(&counters.body_sent, len);
                }
            }
            stream.finish().await
        }
        Route::Upload => {
            let mut received = 0u64;
            while let Some(chunk) = stream.recv_data().await? {
                let n = chunk.remaining() as u64;
                received += n;
                // Counted as it arrives: an upload cut short still shows in the stats file.
                ConnCounters::add(&counters.body_received, n);
            }
            send_text(&mut stream, StatusCode::OK, routes::upload_answer(received)).await
        }
    }
}

async fn send_text(
    stream: &mut H3Stream,
    status: StatusCode,
    body: String,
) -> Result<(), h3::error::StreamError> {
    let resp = Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, body.len())
        .header(header::CONTENT_TYPE, "text/plain")
        .body(())
        .unwrap_or_default();
    stream.send_response(resp).await?;
    stream.send_data(Bytes::from(body)).await?;
    stream.finish().await
}
