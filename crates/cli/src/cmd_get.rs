//! `quiclab get URL`: fetch over HTTP/1.1, HTTP/2 or HTTP/3 and report timings and transport
//! statistics (`--json` for machines; exit 0 only when every request got a 2xx answer).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use endpoints::client::{ClientConfig, HttpVersion, TlsOptions};
use endpoints::fetch::{fetch_blocking, FetchOptions, FetchReport};

use crate::cmd_serve::{parse_bytes, parse_duration, read_config, QuicArgs, QUIC_FLAGS};
use crate::exit::{self, Exit};

/// Options of `quiclab get`.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// `https://host:port/<size>`, e.g. https://10.99.2.1:4433/10M.
    #[arg(required_unless_present = "config")]
    url: Option<String>,
    /// Take the whole configuration from this JSON file (serialized `FetchOptions`, URL
    /// included, as the emulator writes it; `-` reads standard input) instead of the flags
    /// below, except `--json`.
    #[arg(long, conflicts_with_all = GET_FLAGS, conflicts_with_all = QUIC_FLAGS)]
    config: Option<PathBuf>,
    /// HTTP version: 1.1, 2 or 3.
    #[arg(long, default_value = "2", value_parser = HttpVersion::parse)]
    http: HttpVersion,
    /// CA certificate (PEM) to verify the server; default: the repository's test CA (embedded).
    #[arg(long)]
    ca: Option<PathBuf>,
    /// Accept any server certificate.
    #[arg(long)]
    insecure: bool,
    /// Name to send as SNI and verify (default: the URL's host).
    #[arg(long)]
    server_name: Option<String>,
    /// TCP congestion control of the client socket (reno, cubic, bbr …).
    #[arg(long)]
    tcp_cc: Option<String>,
    /// Offer TLS 1.2 only (HTTP/1.1 and HTTP/2; HTTP/3 always uses TLS 1.3).
    #[arg(long)]
    tls12: bool,
    #[command(flatten)]
    quic: QuicArgs,
    /// N concurrent requests on one connection, each for size/N of a `/<size>` URL (HTTP/1.1:
    /// N parallel connections).
    #[arg(long, default_value_t = 1)]
    streams: usize,
    /// N connections one after another, each doing the whole transfer (later ones resume TLS).
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Use 0-RTT on HTTP/3 connections after the first.
    #[arg(long)]
    zero_rtt: bool,
    /// POST this many bytes (split over --streams) instead of downloading.
    #[arg(long, value_parser = parse_bytes)]
    upload: Option<u64>,
    /// Append TLS secrets (NSS key-log format) to this file.
    #[arg(long)]
    keylog: Option<PathBuf>,
    /// Limit per request (e.g. 30s).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    timeout: Duration,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    json: bool,
}

/// The client's own flags `--config` replaces (with [`QUIC_FLAGS`]; all but `--json`).
const GET_FLAGS: &[&str] = &[
    "url",
    "http",
    "ca",
    "insecure",
    "server_name",
    "tcp_cc",
    "tls12",
    "streams",
    "connections",
    "zero_rtt",
    "upload",
    "keylog",
    "timeout",
];

impl GetArgs {
    /// What to fetch: the `--config` file, or the flags.
    fn options(&self) -> anyhow::Result<FetchOptions> {
        if let Some(path) = &self.config {
            let opts: FetchOptions = read_config(path)?;
            // The bounds the flags go through (the client checks them again).
            opts.client.quic.validate()?;
            return Ok(opts);
        }
        let quic = self.quic.config()?;
        if let Some(dir) = &quic.qlog_dir {
            fsutil::create_dir_all(dir)
                .with_context(|| format!("creating qlog directory {}", dir.display()))?;
        }
        let client = ClientConfig {
            http: self.http,
            tls: TlsOptions {
                ca: self.ca.clone(),
                insecure: self.insecure,
                keylog: self.keylog.clone(),
                server_name: self.server_name.clone(),
            },
            timeout: self.timeout,
            tcp_cc: self.tcp_cc.clone(),
            tls12_only: self.tls12,
            quic,
            zero_rtt: self.zero_rtt,
            ..ClientConfig::default()
        };
        Ok(FetchOptions {
            url: self.url.clone().unwrap_or_default(),
            client,
            streams: self.streams,
            connections: self.connections,
            upload: self.upload,
        })
    }
}

/// Runs `quiclab get`.
pub fn run(args: &GetArgs) -> anyhow::Result<Exit> {
    let report = fetch_blocking(args.options()?).context("quiclab get")?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", human(&report));
    }
    Ok(if report.ok {
        exit::SUCCESS
    } else {
        exit::FAILURE
    })
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |s| format!("{:.2} ms", s * 1e3))
}

fn human(r: &FetchReport) -> String {
    let mut s = format!(
        "{} over HTTP/{}: {} (status {})\n",
        r.url,
        r.http,
        if r.ok { "ok" } else { "FAILED" },
        r.status.map_or("-".into(), |s| s.to_string())
    );
    s += &format!(
        "  received {} B, sent {} B in {:.3} s = {:.2} Mbit/s\n",
        r.bytes,
        r.bytes_sent,
        r.total_s,
        r.goodput_bps / 1e6
    );
    s += &format!(
        "  handshake {} (connect {}, TLS {}), first byte {}\n",
        ms(r.handshake_s),
        ms(r.connect_s),
        ms(r.tls_s),
        ms(r.ttfb_s)
    );
    for (i, c) in r
        .connections
        .iter()
        .enumerate()
        .filter(|_| r.connections.len() > 1)
    {
        s += &format!(
            "  connection {}: handshake {}, first byte {}, total {:.3} s, {} B{}{}\n",
            i + 1,
            ms(c.handshake_s),
            ms(c.ttfb_s),
            c.total_s,
            c.bytes,
            if c.tls_resumed { ", TLS resumed" } else { "" },
            if c.zero_rtt { ", 0-RTT" } else { "" },
        );
    }
    if let Some(t) = &r.tcp_info {
        s += &format!(
            "  tcp: {} cwnd {} segs, rtt {} us, retrans {}\n",
            t.congestion, t.cwnd_segments, t.rtt_us, t.total_retrans
        );
    }
    if let Some(q) = &r.quic_stats {
        s += &format!(
            "  quic: rtt {:.2} ms, cwnd {} B, sent {} pkts, lost {} pkts\n",
            q.rtt_ms, q.cwnd, q.sent_packets, q.lost_packets
        );
    }
    if let Some(e) = &r.error {
        s += &format!("  error: {e}\n");
    }
    s
}
