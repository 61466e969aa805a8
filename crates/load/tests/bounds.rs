//! The load tool's bounds against hostile or absent servers, on loopback:
//!
//! - over HTTP/1.1 against a server that completes TLS and then never answers, timed-out
//!   requests must not leave their connections open: at no time does the server see more
//!   connections than the pool allows;
//! - over HTTP/3 against a closed UDP port, requests fail at once on the ICMP port-unreachable
//!   instead of waiting for their timeout.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use endpoints::client::{ClientConfig, ConnPolicy, HttpVersion};
use load::attack::AttackPlan;
use load::live::LiveStats;
use load::schedule::{Ramp, Schedule};
use load::targets::Target;
use load::units::Rate;
use tokio::io::AsyncReadExt;

fn plan(port: u16, http: HttpVersion, rate: &str, seconds: u64, timeout: Duration) -> AttackPlan {
    AttackPlan {
        name: "bounds".into(),
        http: http.label().into(),
        schedule: Schedule::new(
            Ramp::Constant(Rate::parse(rate).unwrap()),
            Some(Duration::from_secs(seconds)),
            None,
        )
        .unwrap(),
        targets: vec![Target {
            method: load::targets::Method::GET,
            url: format!("https://127.0.0.1:{port}/100").parse().unwrap(),
            headers: vec![],
            body: Default::default(),
        }],
        max_inflight: 1000,
        late_threshold: Duration::from_millis(10),
        // The attack enforces the limit (the load client keeps no timer of its own).
        timeout,
        release_window: Duration::ZERO,
    }
}

/// Open connections now and at most, as the silent server sees them.
#[derive(Default)]
struct Counts {
    open: AtomicUsize,
    max: AtomicUsize,
    accepted: AtomicUsize,
}

/// A TLS server that completes handshakes and then reads forever without answering; counts
/// connections until the client closes them.
fn silent_server(rt: &tokio::runtime::Runtime, counts: Arc<Counts>) -> u16 {
    let chain = endpoints::tls::load_chain(None).unwrap();
    let key = endpoints::tls::load_key(None).unwrap();
    let cfg = endpoints::tls::server_config(chain, key, &[b"http/1.1"], None, false).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            counts.accepted.fetch_add(1, Ordering::SeqCst);
            let now = counts.open.fetch_add(1, Ordering::SeqCst) + 1;
            counts.max.fetch_max(now, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            let counts = counts.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    while let Ok(n) = tls.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                }
                counts.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    port
}

#[test]
fn http1_timeouts_do_not_leak_connections_beyond_the_pool() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let counts = Arc::new(Counts::default());
    let port = silent_server(&rt, counts.clone());
    let pool = 4;
    let timeout = Duration::from_millis(200);
    let config = ClientConfig {
        http: HttpVersion::H1,
        policy: ConnPolicy::Pool {
            max_connections: pool,
            max_streams_per_connection: 1,
        },
        timeout,
        ..ClientConfig::default()
    };
    let summary = load::client::run_blocking(
        plan(port, HttpVersion::H1, "100/s", 2, timeout),
        config,
        load::client::default_threads(),
        None,
        Arc::new(LiveStats::new()),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    assert_eq!(summary.requests, 200);
    assert_eq!(summary.successes, 0);
    let accepted = counts.accepted.load(Ordering::SeqCst);
    // Every timeout replaces a connection, so many are opened over the run...
    assert!(accepted > pool, "only {accepted} connections: no timeouts?");
    // ...but never more than the pool at once, give or take closes the server has not noticed
    // yet. A freed connection goes to the oldest waiting request (FIFO), which against a silent
    // server times out soon after, so connections churn (~100/s here) and the one-thread server
    // can see up to a pool's worth of just-closed sockets as still open. A leak keeps them all:
    // the maximum then approaches the number accepted (~100-200).
    let max = counts.max.load(Ordering::SeqCst);
    assert!(
        max <= 2 * pool,
        "{max} connections open at once with a pool of {pool} ({accepted} accepted)"
    );
}

#[test]
fn http3_to_a_closed_port_fails_fast() {
    // A port nobody listens on: bind, note, close.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let timeout = Duration::from_secs(30);
    let config = ClientConfig {
        http: HttpVersion::H3,
        policy: ConnPolicy::Pool {
            max_connections: 4,
            max_streams_per_connection: 16,
        },
        timeout,
        ..ClientConfig::default()
    };
    let t0 = Instant::now();
    let summary = load::client::run_blocking(
        plan(port, HttpVersion::H3, "10/s", 1, timeout),
        config,
        load::client::default_threads(),
        None,
        Arc::new(LiveStats::new()),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    let took = t0.elapsed();
    assert_eq!(summary.requests, 10);
    assert_eq!(summary.successes, 0);
    assert!(
        took < Duration::from_secs(5),
        "{took:?} against a closed port (timeout {timeout:?})"
    );
    let errors = format!("{:?}", summary.errors);
    assert!(errors.contains("unreachable"), "{errors}");
}
