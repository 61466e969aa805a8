//! The split-TCP relay on loopback (non-transparent mode, no root): bytes arrive intact both
//! ways with FINs passed on, the per-direction buffer bound holds, and connections beyond
//! `max_connections` are reset.

use std::net::SocketAddr;
use std::time::Duration;

use endpoints::pep::{self, PepConfig, PepConnectionRecord, PepSummary};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A relay to `upstream` on an ephemeral loopback port; returns its address, a stop switch and
/// its task (summary and logged records).
async fn start_relay(
    upstream: SocketAddr,
    buffer: u64,
    max_connections: usize,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<(PepSummary, Vec<PepConnectionRecord>)>,
) {
    let log_dir = fsutil::PrivateDir::new("quiclab-pep-test-").expect("scratch");
    let log_path = log_dir.path().join("pep.jsonl");
    let log = fsutil::create_new(&log_path).expect("log");
    let (ready_tx, ready_rx) = oneshot::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let cfg = PepConfig {
        listen: "127.0.0.1:0".parse().expect("addr"),
        upstream: Some(upstream),
        cc: Some("reno".into()),
        buffer,
        max_connections,
    };
    let task = tokio::spawn(async move {
        let summary = pep::run(
            cfg,
            Some(log),
            move |addr| {
                let _ = ready_tx.send(addr);
                Ok(())
            },
            async move {
                let _ = stop_rx.await;
            },
        )
        .await
        .expect("relay runs");
        let records = std::fs::read_to_string(&log_path)
            .expect("log")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a record per line"))
            .collect();
        drop(log_dir);
        (summary, records)
    });
    (ready_rx.await.expect("listening"), stop_tx, task)
}

#[tokio::test(flavor = "current_thread")]
async fn bytes_cross_both_ways_and_fins_are_passed_on() {
    let server = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream = server.local_addr().expect("addr");
    // The server echoes until the client's FIN, then closes: both FINs must cross the relay.
    let echo = tokio::spawn(async move {
        let (mut s, _) = server.accept().await.expect("accept");
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0usize;
        loop {
            let n = s.read(&mut buf).await.expect("read");
            if n == 0 {
                break;
            }
            s.write_all(&buf[..n]).await.expect("write");
            total += n;
        }
        total
    });
    let (addr, stop, relay) = start_relay(upstream, 256 * 1024, 4).await;
    let mut c = TcpStream::connect(addr).await.expect("connect");
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let (mut r, mut w) = c.split();
    let send = async {
        w.write_all(&data).await.expect("send");
        w.shutdown().await.expect("FIN");
    };
    let mut back = Vec::new();
    let recv = async {
        r.read_to_end(&mut back)
            .await
            .expect("receive until the server's FIN");
    };
    tokio::join!(send, recv);
    assert_eq!(back, data);
    assert_eq!(echo.await.expect("echo"), data.len());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _ = stop.send(());
    let (summary, records) = relay.await.expect("relay task");
    assert_eq!(summary.relayed, 1);
    assert_eq!(records.len(), 1, "{records:?}");
    let rec = &records[0];
    assert!(!rec.open_at_stop && rec.error.is_none(), "{rec:?}");
    assert_eq!(rec.upstream_bytes, 1_000_000);
    assert_eq!(rec.downstream_bytes, 1_000_000);
    let a = rec.client_leg.as_ref().expect("leg A");
    let b = rec.server_leg.as_ref().expect("leg B");
    assert_eq!(
        (a.congestion.as_str(), b.congestion.as_str()),
        ("reno", "reno")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_buffer_bound_holds_and_extra_connections_are_reset() {
    let server = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream = server.local_addr().expect("addr");
    // The server pushes 16 MB at a client that never reads.
    let pusher = tokio::spawn(async move {
        let (mut s, _) = server.accept().await.expect("accept");
        let chunk = vec![7u8; 64 * 1024];
        for _ in 0..256 {
            if s.write_all(&chunk).await.is_err() {
                break;
            }
        }
    });
    let buffer = 128 * 1024;
    let (addr, stop, relay) = start_relay(upstream, buffer, 1).await;
    let _stalled = TcpStream::connect(addr).await.expect("connect");
    // Let the client's receive window close and the relay fill its buffer.
    tokio::time::sleep(Duration::from_millis(800)).await;
    // A second connection exceeds max_connections = 1: reset at once.
    let mut extra = TcpStream::connect(addr)
        .await
        .expect("accepted by the kernel");
    let mut buf = [0u8; 1];
    let refused = tokio::time::timeout(Duration::from_secs(2), extra.read(&mut buf))
        .await
        .expect("answered at once");
    assert!(
        matches!(refused, Ok(0) | Err(_)),
        "the extra connection was not refused: {refused:?}"
    );
    let _ = stop.send(());
    let (summary, records) = relay.await.expect("relay task");
    pusher.abort();
    assert_eq!((summary.relayed, summary.refused), (1, 1), "{summary:?}");
    let open = records
        .iter()
        .find(|r| r.open_at_stop)
        .expect("the stalled connection, logged at stop");
    // Held = read from the server's leg and not yet acknowledged by the client's kernel.
    assert!(
        open.max_held_downstream_bytes <= buffer,
        "held {} > buffer {buffer}",
        open.max_held_downstream_bytes
    );
    assert!(
        open.max_held_downstream_bytes >= buffer / 2,
        "the bound was never reached: {open:?}"
    );
    assert!(records.iter().any(|r| r
        .error
        .as_deref()
        .is_some_and(|e| e.contains("max connections"))));
}
