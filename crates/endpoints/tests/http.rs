//! Server + client over loopback for HTTP/1.1, HTTP/2 and HTTP/3: sizes, timings, uploads,
//! connection reuse and per-request connections.

mod common;

use std::time::Duration;

use common::{client, get, pool, server, url, VERSIONS};
use endpoints::bytes::Bytes;
use endpoints::client::{Client, ClientConfig, ConnPolicy, HttpVersion, PoolGrowth, RequestSpec};
use endpoints::server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_11000_bytes_then_reuse_the_connection() {
    let srv = server(ServerConfig::default()).await;
    for http in VERSIONS {
        let c = client(http, pool());
        let first = c.send(get(srv.local_addr(), "/11000")).await;
        assert_eq!(first.error, None, "{http:?}");
        assert_eq!(first.status, Some(200), "{http:?}");
        assert_eq!(first.bytes_in, 11_000, "{http:?}");
        assert!(!first.reused_connection, "{http:?}");
        let hs = first
            .handshake()
            .expect("a new connection has a handshake time");
        assert!(
            hs > Duration::ZERO && hs < Duration::from_secs(5),
            "{http:?} {hs:?}"
        );
        let ttfb = first.ttfb.expect("ttfb");
        assert!(
            ttfb >= hs && ttfb <= first.total,
            "{http:?}: {ttfb:?} vs {:?}",
            first.total
        );
        match http {
            endpoints::HttpVersion::H3 => {
                assert!(first.quic_handshake.is_some() && first.connect.is_none())
            }
            _ => assert!(
                first.connect.is_some() && first.tls.is_some() && first.quic_handshake.is_none()
            ),
        }

        let second = c.send(get(srv.local_addr(), "/11000")).await;
        assert_eq!(second.error, None, "{http:?}");
        assert_eq!(second.bytes_in, 11_000);
        assert!(
            second.reused_connection,
            "{http:?}: second request should reuse"
        );
        assert_eq!(second.connection_id, first.connection_id);
        assert_eq!(second.handshake(), None, "{http:?}: no handshake on reuse");
        c.close().await;
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_megabyte_download_and_upload_are_counted() {
    let srv = server(ServerConfig::default()).await;
    for http in VERSIONS {
        let c = client(http, pool());
        let down = c.send(get(srv.local_addr(), "/5M")).await;
        assert_eq!(down.error, None, "{http:?}");
        assert_eq!(down.bytes_in, 5_000_000, "{http:?}");

        let body = Bytes::from(vec![1u8; 300_000]);
        let up = c
            .send(RequestSpec::post(url(srv.local_addr(), "/upload"), body))
            .await;
        assert_eq!(up.error, None, "{http:?}");
        assert_eq!(up.status, Some(200));
        assert_eq!(up.bytes_out, 300_000, "{http:?}");
        // The answer is the decimal byte count plus a newline.
        assert_eq!(up.bytes_in, "300000\n".len() as u64, "{http:?}");
        c.close().await;
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_request_policy_opens_a_connection_each_time() {
    let srv = server(ServerConfig::default()).await;
    for http in VERSIONS {
        let c = client(http, ConnPolicy::PerRequest);
        let mut ids = Vec::new();
        for _ in 0..3 {
            let o = c.send(get(srv.local_addr(), "/1000")).await;
            assert_eq!(o.error, None, "{http:?}");
            assert_eq!(o.bytes_in, 1000);
            assert!(!o.reused_connection);
            assert!(
                o.handshake().is_some(),
                "{http:?}: every request handshakes"
            );
            ids.push(o.connection_id);
        }
        ids.dedup();
        assert_eq!(ids.len(), 3, "{http:?}: three distinct connections");
        c.close().await;
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_multiplex_up_to_the_pool_limit() {
    let srv = server(ServerConfig::default()).await;
    for http in VERSIONS {
        let c = client(
            http,
            ConnPolicy::Pool {
                max_connections: 2,
                max_streams_per_connection: 4,
            },
        );
        let sends = (0..16).map(|_| {
            let c = c.clone();
            let req = get(srv.local_addr(), "/20000");
            tokio::spawn(async move { c.send(req).await })
        });
        let mut ids = std::collections::BTreeSet::new();
        for h in sends {
            let o = h.await.expect("task");
            assert_eq!(o.error, None, "{http:?}");
            assert_eq!(o.bytes_in, 20_000);
            ids.insert(o.connection_id);
        }
        assert!(!ids.is_empty() && ids.len() <= 2, "{http:?}: {ids:?}");
        c.close().await;
    }
    srv.shutdown().await;
}

/// Connections an HTTP/1.1 pool of 64 opens for `n` requests of `path` sent at once.
async fn connections_opened_for_a_burst(growth: PoolGrowth, n: usize, path: &str) -> usize {
    let srv = server(ServerConfig::default()).await;
    let c = Client::new(ClientConfig {
        http: HttpVersion::H1,
        policy: ConnPolicy::Pool {
            max_connections: 64,
            max_streams_per_connection: 1,
        },
        pool_growth: growth,
        timeout: Duration::from_secs(20),
        ..ClientConfig::default()
    })
    .expect("client builds");
    let sends: Vec<_> = (0..n)
        .map(|_| {
            let c = c.clone();
            let req = get(srv.local_addr(), path);
            tokio::spawn(async move { c.send(req).await })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    for h in sends {
        let o = h.await.expect("task");
        assert_eq!(o.error, None, "{growth:?}");
        assert_eq!(o.bytes_in.to_string(), path[1..]);
        ids.insert(o.connection_id);
    }
    c.close().await;
    srv.shutdown().await;
    ids.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patient_pool_serves_a_burst_on_few_connections_an_eager_one_opens_one_each() {
    // Eager: every request that finds no free connection opens one (all 48 arrive before the
    // first handshake ends). Patient: they wait for the first connection, and the pool grows
    // only while its queue would take longer to drain than a handshake (requests of 100 bytes
    // on loopback take a fraction of one).
    let eager = connections_opened_for_a_burst(PoolGrowth::Eager, 48, "/100").await;
    let patient = connections_opened_for_a_burst(PoolGrowth::Patient, 48, "/100").await;
    assert!(
        eager >= 40,
        "eager pool opened {eager} connections for 48 requests"
    );
    assert!(
        patient <= 12,
        "patient pool opened {patient} connections for 48 requests (eager: {eager})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patient_pool_grows_when_requests_take_longer_than_opening() {
    // 16 downloads of 16 MB, each far longer than a loopback handshake: waiting for a busy
    // connection would be slower than opening one, so the pool grows (at most doubling per
    // opening). How far it gets before the queue drains depends on the machine's speed (9 to
    // 16 on an idle 2-core machine, fewer under load); growing past two doublings is what only a
    // pool that grows can do.
    let patient = connections_opened_for_a_burst(PoolGrowth::Patient, 16, "/16000000").await;
    assert!(
        patient >= 4,
        "patient pool opened only {patient} connections for 16 slow requests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_get_404_and_the_index_answers() {
    let srv = server(ServerConfig::default()).await;
    for http in VERSIONS {
        let c = client(http, pool());
        let o = c.send(get(srv.local_addr(), "/no-such-thing")).await;
        assert_eq!(o.error, None);
        assert_eq!(o.status, Some(404), "{http:?}");
        let o = c.send(get(srv.local_addr(), "/")).await;
        assert_eq!(o.status, Some(200), "{http:?}");
        assert!(o.bytes_in > 10);
        c.close().await;
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_bulk_transfers_report_their_progress() {
    // A body far beyond the default response-size cap, on purpose: it never finishes.
    let srv = server(ServerConfig {
        max_response_size: None,
        ..ServerConfig::default()
    })
    .await;
    for http in VERSIONS {
        let c = endpoints::Client::new(endpoints::ClientConfig {
            http,
            timeout: Duration::from_millis(300),
            collect_transport_stats: true,
            ..endpoints::ClientConfig::default()
        })
        .expect("client");
        let down = c.send(get(srv.local_addr(), "/100G")).await;
        assert!(
            down.error
                .as_deref()
                .is_some_and(|e| e.contains("timed out")),
            "{http:?}: {:?}",
            down.error
        );
        assert!(down.bytes_in > 100_000, "{http:?}: {}", down.bytes_in);
        assert!(down.total >= Duration::from_millis(250), "{http:?}");
        assert!(
            down.transport.is_some(),
            "{http:?}: transport statistics survive the timeout"
        );

        let up = c
            .send_with_generated_body(
                RequestSpec::post(url(srv.local_addr(), "/upload"), Bytes::new()),
                100_000_000_000,
            )
            .await;
        assert!(
            up.error.is_some(),
            "{http:?}: a 100 GB upload cannot finish"
        );
        assert!(up.bytes_out > 100_000, "{http:?}: {}", up.bytes_out);
        c.close().await;
    }
    srv.shutdown().await;
}
