//! End to end on loopback: the real server (`endpoints::server`) and the real client, driven by
//! the open-model scheduler at 200 req/s for 2 s over HTTP/1.1, HTTP/2 and HTTP/3.
//!
//! This checks the schedule's correctness with a generous bound (achieved rate within 2%, every
//! request answered), not performance.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use endpoints::client::{ClientConfig, ConnPolicy, HttpVersion};
use endpoints::server::{RunningServer, ServerConfig};
use load::attack::{AttackPlan, Sink};
use load::live::LiveStats;
use load::record::{read_records, Encoding, RecordWriter, ResultRecord};
use load::schedule::{Ramp, Schedule};
use load::targets::Target;
use load::units::Rate;

/// A loopback server on an ephemeral port, shut down when dropped (even if the test fails).
struct Server {
    runtime: tokio::runtime::Runtime,
    server: Option<RunningServer>,
}

impl Server {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let cfg = ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ServerConfig::default()
        };
        let server = runtime.block_on(RunningServer::start(cfg)).unwrap();
        Self {
            runtime,
            server: Some(server),
        }
    }

    fn port(&self) -> u16 {
        self.server.as_ref().unwrap().local_addr().port()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            self.runtime.block_on(s.shutdown());
        }
    }
}

/// A `Write` whose bytes the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn attack(
    port: u16,
    http: HttpVersion,
    policy: ConnPolicy,
) -> (load::metrics::Summary, Vec<ResultRecord>) {
    let plan = AttackPlan {
        name: format!("e2e-h{}", http.label()),
        http: http.label().into(),
        schedule: Schedule::new(
            Ramp::Constant(Rate::parse("200/s").unwrap()),
            Some(Duration::from_secs(2)),
            None,
        )
        .unwrap(),
        targets: vec![Target {
            method: load::targets::Method::GET,
            url: format!("https://127.0.0.1:{port}/11000").parse().unwrap(),
            headers: vec![],
            body: Default::default(),
        }],
        max_inflight: 1000,
        late_threshold: Duration::from_millis(10),
        timeout: Duration::from_secs(10),
        release_window: Duration::ZERO,
    };
    let config = ClientConfig {
        http,
        policy,
        timeout: Duration::from_secs(10),
        ..ClientConfig::default()
    };
    let out = Shared::default();
    let sink: Sink = Some(RecordWriter::new(Box::new(out.clone()), Encoding::Json));
    let summary = load::client::run_blocking(
        plan,
        config,
        load::client::default_threads(),
        sink,
        Arc::new(LiveStats::new()),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    let bytes = out.0.lock().unwrap().clone();
    let records = read_records(std::io::Cursor::new(bytes))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (summary, records)
}

fn check(http: HttpVersion, summary: &load::metrics::Summary, records: &[ResultRecord]) {
    let label = http.label();
    assert_eq!(records.len(), 400, "h{label}: records");
    assert_eq!(summary.requests, 400, "h{label}");
    assert_eq!(summary.successes, 400, "h{label}: {:?}", summary.errors);
    assert!(
        (summary.rate.achieved / 200.0 - 1.0).abs() < 0.02,
        "h{label}: achieved {}",
        summary.rate.achieved
    );
    assert!(records
        .iter()
        .all(|r| r.bytes_in == 11_000 && r.http == label));
    assert!(records.iter().all(|r| r.ttfb_ns.is_some()));
}

#[test]
fn constant_rate_over_every_http_version() {
    let server = Server::start();
    let pool = |http| ConnPolicy::Pool {
        max_connections: if http == HttpVersion::H1 { 64 } else { 1 },
        max_streams_per_connection: 100,
    };
    for http in [HttpVersion::H1, HttpVersion::H2, HttpVersion::H3] {
        let (summary, records) = attack(server.port(), http, pool(http));
        check(http, &summary, &records);
        // A pool reuses connections: only a few requests pay for a handshake.
        let fresh = records.iter().filter(|r| !r.reused).count();
        assert!(fresh <= 64, "h{}: {fresh} new connections", http.label());
        let handshakes = records
            .iter()
            .filter(|r| r.quic_handshake_ns.is_some() || r.tls_ns.is_some())
            .count();
        assert!(handshakes >= 1, "h{}: no handshake timed", http.label());
    }
}

#[test]
fn new_connection_per_request_times_every_handshake() {
    let server = Server::start();
    for http in [HttpVersion::H2, HttpVersion::H3] {
        let (summary, records) = attack(server.port(), http, ConnPolicy::PerRequest);
        check(http, &summary, &records);
        assert!(records.iter().all(|r| !r.reused));
        let handshake = |r: &ResultRecord| match http {
            HttpVersion::H3 => r.quic_handshake_ns,
            _ => r.tls_ns,
        };
        assert!(records.iter().all(|r| handshake(r).is_some()));
    }
}

#[test]
fn a_pool_of_several_connections_uses_every_one() {
    let server = Server::start();
    for http in [HttpVersion::H2, HttpVersion::H3] {
        let policy = ConnPolicy::Pool {
            max_connections: 4,
            max_streams_per_connection: 100,
        };
        let (summary, records) = attack(server.port(), http, policy);
        check(http, &summary, &records);
        // Requests are spread over the pool, not piled onto the first connection until its
        // stream limit: at 200 req/s (a few in flight) every one of the 4 connections opens,
        // each exactly once.
        let fresh = records.iter().filter(|r| !r.reused).count();
        assert_eq!(fresh, 4, "h{}: connections opened", http.label());
    }
}
