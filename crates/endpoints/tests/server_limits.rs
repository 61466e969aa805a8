//! The server's bounds: idle connections are closed, connections beyond
//! the cap are refused, `GET /<n>` above the response-size cap is answered 400 at once, and
//! the server listens on loopback unless told otherwise. Loopback only, small counts.

mod common;

use std::time::{Duration, Instant};

use common::{client, get, pool, server, VERSIONS};
use endpoints::client::HttpVersion;
use endpoints::server::ServerConfig;
use tokio::io::AsyncReadExt;

#[test]
fn the_default_listen_address_is_loopback() {
    assert!(ServerConfig::default().listen.ip().is_loopback());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_above_the_cap_are_refused_at_once() {
    let srv = server(ServerConfig {
        max_response_size: Some(1_000_000),
        ..ServerConfig::default()
    })
    .await;
    for http in VERSIONS {
        let c = client(http, pool());
        let t0 = Instant::now();
        let o = c.send(get(srv.local_addr(), "/1000G")).await;
        assert_eq!(o.status, Some(400), "{http:?}: {o:?}");
        assert!(o.bytes_in < 1000, "{http:?}: {} bytes", o.bytes_in);
        assert!(t0.elapsed() < Duration::from_secs(5), "{http:?}");
        let ok = c.send(get(srv.local_addr(), "/1M")).await;
        assert_eq!((ok.status, ok.bytes_in), (Some(200), 1_000_000), "{http:?}");
        c.close().await;
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed() {
    let dir = fsutil::PrivateDir::new("quiclab-endpoints-idle-").expect("scratch");
    let stats = dir.path().join("stats.jsonl");
    let srv = server(ServerConfig {
        idle_timeout: Duration::from_millis(300),
        stats_file: Some(stats.clone()),
        ..ServerConfig::default()
    })
    .await;
    // One request per version on a pooled connection the client keeps open.
    let clients: Vec<_> = VERSIONS
        .iter()
        .map(|&http| {
            let c = client(http, pool());
            (http, c)
        })
        .collect();
    for (http, c) in &clients {
        let o = c.send(get(srv.local_addr(), "/1000")).await;
        assert_eq!(o.error, None, "{http:?}");
    }
    // The server writes one record per connection when it ends: all three, while the clients
    // still hold theirs.
    let deadline = Instant::now() + Duration::from_secs(5);
    let ended = loop {
        let text = std::fs::read_to_string(&stats).unwrap_or_default();
        let http: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| v["http"].as_str().unwrap_or("").to_string())
            .collect();
        if http.len() >= 3 || Instant::now() > deadline {
            break http;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut sorted = ended.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["1.1", "2", "3"],
        "connections closed by the server"
    );
    for (_, c) in clients {
        c.close().await;
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed() {
    let srv = server(ServerConfig {
        max_connections: 2,
        ..ServerConfig::default()
    })
    .await;
    let addr = srv.local_addr();
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(tokio::net::TcpStream::connect(addr).await.expect("connect"));
    }
    // Give the accept loop time to take both.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(2), third.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the connection beyond the cap was not closed: {read:?}"
    );
    // The held ones are still open (their TLS handshake timeout is 10 s).
    let read = tokio::time::timeout(Duration::from_millis(300), held[0].read(&mut buf)).await;
    assert!(
        read.is_err(),
        "a connection within the cap was closed: {read:?}"
    );
    // A QUIC connection is refused too while both slots are taken.
    let c = client(HttpVersion::H3, pool());
    let o = c.send(get(addr, "/10")).await;
    assert!(o.error.is_some(), "HTTP/3 beyond the cap: {o:?}");
    c.close().await;
    // Once they go, new connections are served again.
    drop(held);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c = client(HttpVersion::H2, pool());
    let o = c.send(get(addr, "/10")).await;
    assert_eq!(o.error, None);
    c.close().await;
    srv.shutdown().await;
}
