//! The `quiclab get` workflow: download (or upload) over one or more connections, one after
//! another, with N concurrent streams each, and summarise timings and transport statistics.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::body::parse_size;
use crate::client::{
    Client, ClientConfig, ClientError, ConnPolicy, HttpVersion, RequestOutcome, RequestSpec,
};
use crate::stats::{unix_now, QuicStatsSnapshot, TcpInfoSnapshot, TransportSnapshot};

/// What to fetch and how; serialized, what the emulator hands `quiclab get --config`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchOptions {
    /// `https://host:port/<size>` (or any path when `streams` is 1).
    pub url: String,
    /// Client settings (policy and stats collection are set by the fetch itself).
    pub client: ClientConfig,
    /// Concurrent requests per connection; a `/<n>` path is split into `streams` parts (the
    /// first part takes the remainder). HTTP/1.1 opens `streams` parallel connections instead.
    pub streams: usize,
    /// Connections one after another, each doing the whole transfer.
    pub connections: usize,
    /// POST this many bytes (split over the streams) instead of a GET.
    pub upload: Option<u64>,
}

impl Default for FetchOptions {
    /// One stream, one connection, no URL yet.
    fn default() -> Self {
        Self {
            url: String::new(),
            client: ClientConfig::default(),
            streams: 1,
            connections: 1,
            upload: None,
        }
    }
}

/// Errors that stop a fetch before any request.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL does not parse.
    #[error("invalid URL {url:?}: {detail}")]
    Url {
        /// The URL.
        url: String,
        /// Why.
        detail: String,
    },
    /// The client could not be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Bad numbers.
    #[error("{0}")]
    Invalid(String),
}

/// One connection's share of a fetch (one round of `--connections`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionReport {
    /// First request start on this connection, s after the fetch's first connection attempt.
    pub started_s: f64,
    /// TCP connect + TLS, or QUIC handshake (s).
    pub handshake_s: Option<f64>,
    /// First request start to first response headers (s).
    pub ttfb_s: Option<f64>,
    /// First request start to the last byte (s).
    pub total_s: f64,
    /// Body bytes received.
    pub bytes: u64,
    /// Body bytes sent.
    pub bytes_sent: u64,
    /// TLS session resumption was used (TCP).
    pub tls_resumed: bool,
    /// 0-RTT was used (QUIC).
    pub zero_rtt: bool,
    /// Requests on this connection.
    pub requests: usize,
    /// Transport statistics of the connection that carried the round's last-finishing request,
    /// taken when that request ended (with HTTP/1.1 and several streams, one of the parallel
    /// connections).
    pub transport: Option<TransportSnapshot>,
}

/// The `quiclab get --json` object; the emulator reads it back into this type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FetchReport {
    /// The URL as given.
    pub url: String,
    /// "1.1", "2" or "3".
    pub http: String,
    /// Wall-clock time of the first connection attempt, s since the Unix epoch (lets a caller in
    /// another process place the fetch on its own timeline).
    pub start_unix_s: f64,
    /// Every request completed with a 2xx status.
    pub ok: bool,
    /// Status of the last response.
    pub status: Option<u16>,
    /// Body bytes received, all requests.
    pub bytes: u64,
    /// Body bytes sent, all requests.
    pub bytes_sent: u64,
    /// TCP connect of the first connection (s).
    pub connect_s: Option<f64>,
    /// TLS handshake of the first connection (s).
    pub tls_s: Option<f64>,
    /// Connection set-up of the first connection: connect + TLS, or QUIC handshake (s).
    pub handshake_s: Option<f64>,
    /// First connection attempt to the first response headers (s).
    pub ttfb_s: Option<f64>,
    /// First connection attempt to the last byte of the last connection (s).
    pub total_s: f64,
    /// Body bytes (both directions) × 8 / total_s.
    pub goodput_bps: f64,
    /// Per connection, in order.
    pub connections: Vec<ConnectionReport>,
    /// Client-side TCP_INFO just before the last connection closed.
    pub tcp_info: Option<TcpInfoSnapshot>,
    /// quinn statistics of the last connection.
    pub quic_stats: Option<QuicStatsSnapshot>,
    /// First error, if any.
    pub error: Option<String>,
    /// qlog files that could not be created or fully written (empty when none, or no qlog).
    #[serde(default)]
    pub qlog_errors: Vec<String>,
}

/// Splits `total` into `parts` sizes that add up to it (the first takes the remainder).
pub fn split_size(total: u64, parts: usize) -> Vec<u64> {
    let parts = parts.max(1) as u64;
    let each = total / parts;
    let mut v = vec![each; parts as usize];
    v[0] += total - each * parts;
    v
}

fn secs(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64())
}

fn with_path(url: &http::Uri, path: &str) -> Result<http::Uri, String> {
    let mut parts = url.clone().into_parts();
    parts.path_and_query = Some(path.parse().map_err(|e| format!("{e}"))?);
    http::Uri::from_parts(parts).map_err(|e| e.to_string())
}

/// Runs a fetch on its own two-worker runtime (for the CLI).
pub fn fetch_blocking(opts: FetchOptions) -> Result<FetchReport, FetchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FetchError::Invalid(format!("tokio runtime: {e}")))?;
    runtime.block_on(fetch(opts))
}

/// Runs a fetch.
pub async fn fetch(opts: FetchOptions) -> Result<FetchReport, FetchError> {
    let url: http::Uri = opts
        .url
        .parse()
        .map_err(|e: http::uri::InvalidUri| FetchError::Url {
            url: opts.url.clone(),
            detail: e.to_string(),
        })?;
    if opts.streams == 0 || opts.connections == 0 {
        return Err(FetchError::Invalid(
            "--streams and --connections must be at least 1".into(),
        ));
    }
    let requests = build_requests(&url, &opts).map_err(|detail| FetchError::Url {
        url: opts.url.clone(),
        detail,
    })?;
    let mut cfg = opts.client.clone();
    cfg.collect_transport_stats = true;
    cfg.policy = ConnPolicy::Pool {
        max_connections: if cfg.http == HttpVersion::H1 {
            opts.streams
        } else {
            1
        },
        max_streams_per_connection: opts.streams,
    };
    let http = cfg.http;
    let client = Client::new(cfg)?;
    let first_start = Instant::now();
    let start_unix_s = unix_now();
    let mut rounds: Vec<Vec<RequestOutcome>> = Vec::new();
    for i in 0..opts.connections {
        if i > 0 {
            client.close_idle();
        }
        let sends = requests.iter().cloned().map(|(r, generated)| {
            let c = client.clone();
            async move { c.send_with_generated_body(r, generated).await }
        });
        rounds.push(futures_util::future::join_all(sends).await);
    }
    client.close().await;
    let mut report = summarise(&opts.url, http, first_start, &rounds);
    report.start_unix_s = start_unix_s;
    report.qlog_errors = crate::quic::take_qlog_errors();
    Ok(report)
}

/// The requests of one connection: each spec with the generated upload bytes to append.
fn build_requests(url: &http::Uri, opts: &FetchOptions) -> Result<Vec<(RequestSpec, u64)>, String> {
    if let Some(total) = opts.upload {
        // Generated while sending: no allocation of the upload size.
        return Ok(split_size(total, opts.streams)
            .into_iter()
            .map(|n| (RequestSpec::post(url.clone(), Bytes::new()), n))
            .collect());
    }
    let path = url.path().trim_start_matches('/');
    match (opts.streams, parse_size(path)) {
        (1, _) | (_, None) => Ok(vec![(RequestSpec::get(url.clone()), 0); opts.streams]),
        (n, Some(total)) => split_size(total, n)
            .into_iter()
            .map(|part| with_path(url, &format!("/{part}")).map(|u| (RequestSpec::get(u), 0)))
            .collect(),
    }
}

fn summarise(
    url: &str,
    http: HttpVersion,
    first_start: Instant,
    rounds: &[Vec<RequestOutcome>],
) -> FetchReport {
    let all: Vec<&RequestOutcome> = rounds.iter().flatten().collect();
    let end = all
        .iter()
        .map(|o| o.started + o.total)
        .max()
        .unwrap_or(first_start);
    let total_s = end.saturating_duration_since(first_start).as_secs_f64();
    let connections: Vec<ConnectionReport> = rounds
        .iter()
        .map(|r| connection_report(r, first_start))
        .collect();
    let first_round = rounds.first().map(Vec::as_slice).unwrap_or(&[]);
    let opener = first_round
        .iter()
        .find(|o| !o.reused_connection && o.handshake().is_some());
    let bytes: u64 = all.iter().map(|o| o.bytes_in).sum();
    let bytes_sent: u64 = all.iter().map(|o| o.bytes_out).sum();
    // The request that finished last: its snapshot is the closest to the connection's end.
    let last = all.iter().copied().max_by_key(|o| o.started + o.total);
    let (tcp_info, quic_stats) = match last.and_then(|o| o.transport.clone()) {
        Some(TransportSnapshot::Tcp(t)) => (Some(t), None),
        Some(TransportSnapshot::Quic(q)) => (None, Some(q)),
        None => (None, None),
    };
    let ok = !all.is_empty() && all.iter().all(|o| o.success());
    let error = all.iter().find_map(|o| o.error.clone()).or_else(|| {
        all.iter()
            .find(|o| !o.status.is_some_and(|s| (200..300).contains(&s)))
            .map(|o| format!("HTTP status {:?}", o.status))
    });
    FetchReport {
        url: url.to_string(),
        http: http.label().to_string(),
        start_unix_s: 0.0,
        ok,
        status: last.and_then(|o| o.status),
        bytes,
        bytes_sent,
        connect_s: secs(opener.and_then(|o| o.connect)),
        tls_s: secs(opener.and_then(|o| o.tls)),
        handshake_s: secs(opener.and_then(|o| o.handshake())),
        ttfb_s: first_round
            .iter()
            .filter_map(|o| {
                o.ttfb
                    .map(|t| (o.started + t).saturating_duration_since(first_start))
            })
            .min()
            .map(|d| d.as_secs_f64()),
        total_s,
        goodput_bps: if total_s > 0.0 {
            (bytes + bytes_sent) as f64 * 8.0 / total_s
        } else {
            0.0
        },
        connections,
        tcp_info,
        quic_stats,
        error: if ok { None } else { error },
        qlog_errors: Vec::new(),
    }
}

fn connection_report(round: &[RequestOutcome], first_start: Instant) -> ConnectionReport {
    let start = round.iter().map(|o| o.started).min();
    let end = round.iter().map(|o| o.started + o.total).max();
    let span = match (start, end) {
        (Some(s), Some(e)) => e.saturating_duration_since(s),
        _ => Duration::ZERO,
    };
    let last = round.iter().max_by_key(|o| o.started + o.total);
    ConnectionReport {
        started_s: start.map_or(0.0, |s| {
            s.saturating_duration_since(first_start).as_secs_f64()
        }),
        handshake_s: secs(round.iter().filter_map(RequestOutcome::handshake).max()),
        ttfb_s: start.and_then(|s| {
            round
                .iter()
                .filter_map(|o| o.ttfb.map(|t| (o.started + t).saturating_duration_since(s)))
                .min()
                .map(|d| d.as_secs_f64())
        }),
        total_s: span.as_secs_f64(),
        bytes: round.iter().map(|o| o.bytes_in).sum(),
        bytes_sent: round.iter().map(|o| o.bytes_out).sum(),
        tls_resumed: round.iter().any(|o| o.tls_resumed),
        zero_rtt: round.iter().any(|o| o.zero_rtt),
        requests: round.len(),
        transport: last.and_then(|o| o.transport.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_adds_up_and_first_takes_remainder() {
        assert_eq!(split_size(10_000_000, 4), vec![2_500_000; 4]);
        assert_eq!(split_size(10, 3), vec![4, 3, 3]);
        assert_eq!(split_size(5, 1), vec![5]);
        assert_eq!(split_size(7, 0), vec![7]);
    }
}
