//! The server survives hostile input, TCP congestion control is applied per socket, and the
//! client's certificate verification accepts the right CA and rejects a wrong one.

mod common;

use std::time::Duration;

use common::{client, get, pool, server, VERSIONS};
use endpoints::client::{Client, ClientConfig, HttpVersion, TlsOptions};
use endpoints::server::ServerConfig;
use endpoints::TransportSnapshot;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A private scratch directory (random name, mode 0700: the tests run as root and a predictable
/// /tmp name is plantable), removed on drop even when the test fails.
struct Scratch(std::path::PathBuf, #[allow(dead_code)] fsutil::PrivateDir);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = fsutil::PrivateDir::new(&format!("quiclab-endpoints-{name}-")).expect("scratch");
        Self(dir.path().to_path_buf(), dir)
    }
}

async fn assert_all_versions_work(addr: std::net::SocketAddr) {
    for http in VERSIONS {
        let c = client(http, pool());
        let o = c.send(get(addr, "/11000")).await;
        assert_eq!(o.error, None, "{http:?} after abuse");
        assert_eq!(o.bytes_in, 11_000, "{http:?}");
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_tcp_and_udp_does_not_kill_the_server() {
    let srv = server(ServerConfig::default()).await;
    let addr = srv.local_addr();

    // Plain-text HTTP and random bytes where a TLS ClientHello is expected.
    for junk in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[0x16, 3, 1, 0xff, 0xff, 1, 2, 3][..],
        &[0u8; 4096][..],
    ] {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let _ = s.write_all(junk).await;
        let mut buf = [0u8; 256];
        // The server must close (or answer with an alert), not hang or crash.
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
    }
    // A connection that says nothing, left open while others are served.
    let _idle = tokio::net::TcpStream::connect(addr).await.expect("connect");

    // Random datagrams, a truncated QUIC long header, and an oversized one.
    let udp = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("udp");
    let mut long_header = vec![0xc0, 0, 0, 0, 1, 8];
    long_header.extend_from_slice(&[0xaa; 8]);
    let datagrams: Vec<Vec<u8>> = vec![
        vec![],
        vec![0xff; 3],
        long_header,
        (0..1200u32).map(|i| (i * 7) as u8).collect(),
        vec![0x40; 60_000],
    ];
    for d in &datagrams {
        let _ = udp.send_to(d, addr).await;
    }

    assert_all_versions_work(addr).await;
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_http_after_tls_gets_an_error_not_a_crash() {
    let srv = server(ServerConfig::default()).await;
    let addr = srv.local_addr();
    // Speak TLS properly, then send a broken HTTP/1.1 request line.
    let roots = endpoints::tls::load_roots(None).expect("roots");
    let cfg = endpoints::tls::client_config(
        &endpoints::tls::Trust::Roots(std::sync::Arc::new(roots)),
        &[b"http/1.1"],
        None,
        false,
        false,
    )
    .expect("tls config");
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = connector.connect(name, tcp).await.expect("handshake");
    tls.write_all(b"BLAH\x00\x01 /\xff HTTP/9.9\r\n\r\n")
        .await
        .expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || text.starts_with("HTTP/1.1 400"),
        "unexpected answer {text:?}"
    );
    assert_all_versions_work(addr).await;
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_congestion_control_is_set_per_socket() {
    let scratch = Scratch::new("cc");
    let stats = scratch.0.join("stats.jsonl");
    let srv = server(ServerConfig {
        tcp_cc: Some("cubic".into()),
        stats_file: Some(stats.clone()),
        ..ServerConfig::default()
    })
    .await;
    for http in [HttpVersion::H1, HttpVersion::H2] {
        let c = Client::new(ClientConfig {
            http,
            tcp_cc: Some("reno".into()),
            collect_transport_stats: true,
            ..ClientConfig::default()
        })
        .expect("client");
        let o = c.send(get(srv.local_addr(), "/100000")).await;
        assert_eq!(o.error, None);
        match o.transport {
            Some(TransportSnapshot::Tcp(info)) => {
                assert_eq!(info.congestion, "reno", "client socket");
                assert!(info.bytes_received >= 100_000, "{info:?}");
                assert!(info.snd_mss > 0 && info.rtt_us > 0, "{info:?}");
            }
            other => panic!("expected TCP stats, got {other:?}"),
        }
        c.close().await;
    }
    srv.shutdown().await;
    let lines = std::fs::read_to_string(&stats).expect("stats file");
    let records: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(records.len(), 2, "one line per TCP connection: {lines}");
    for r in &records {
        assert_eq!(r["transport"]["congestion"], "cubic", "server socket: {r}");
        assert_eq!(r["requests"], 1);
        assert_eq!(r["body_bytes_sent"], 100_000);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ca_is_rejected_clearly_and_insecure_skips_verification() {
    let srv = server(ServerConfig::default()).await;
    // The leaf certificate is not a CA: trusting only it cannot verify the chain.
    let wrong_ca = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../certs/server.pem");
    for http in VERSIONS {
        let c = Client::new(ClientConfig {
            http,
            tls: TlsOptions {
                ca: Some(wrong_ca.clone()),
                ..TlsOptions::default()
            },
            ..ClientConfig::default()
        })
        .expect("client");
        let o = c.send(get(srv.local_addr(), "/10")).await;
        let err = o.error.expect("verification must fail");
        assert!(
            err.contains("certificate") || err.contains("UnknownIssuer"),
            "{http:?}: unclear error {err:?}"
        );
        assert_eq!(o.status, None);
        c.close().await;

        let insecure = Client::new(ClientConfig {
            http,
            tls: TlsOptions {
                ca: Some(wrong_ca.clone()),
                insecure: true,
                ..TlsOptions::default()
            },
            ..ClientConfig::default()
        })
        .expect("client");
        let o = insecure.send(get(srv.local_addr(), "/10")).await;
        assert_eq!(o.error, None, "{http:?} insecure");
        insecure.close().await;
    }
    // A CA file that does not exist is a construction error, not a request error.
    let missing = Client::new(ClientConfig {
        tls: TlsOptions {
            ca: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        },
        ..ClientConfig::default()
    });
    assert!(missing.is_err());
    srv.shutdown().await;
}

/// The client's TLS key log (the endpoints' qlog files: tests/qlog.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keylog_file_is_written() {
    let scratch = Scratch::new("keylog");
    let keylog = scratch.0.join("keys.log");
    let srv = server(ServerConfig::default()).await;
    let c = Client::new(ClientConfig {
        http: HttpVersion::H3,
        tls: TlsOptions {
            keylog: Some(keylog.clone()),
            ..TlsOptions::default()
        },
        ..ClientConfig::default()
    })
    .expect("client");
    let o = c.send(get(srv.local_addr(), "/50000")).await;
    assert_eq!(o.error, None);
    c.close().await;
    srv.shutdown().await;
    let keys = std::fs::read_to_string(&keylog).expect("keylog");
    assert!(keys.contains("CLIENT_HANDSHAKE_TRAFFIC_SECRET"), "{keys}");
}
