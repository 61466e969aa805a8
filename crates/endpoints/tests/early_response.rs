//! 0.5-RTT (`QuicConfig::early_response`) against a client whose ClientHello spans two Initial
//! packets, as quic-go's and Chromium's do with their post-quantum key share (X25519MLKEM768,
//! ~1.2 kB alone).
//!
//! quinn accepts a connection on its first Initial; a server that opened its HTTP/3 control
//! stream at once found a stream limit of zero (the client's transport parameters sit in the
//! second half of the ClientHello), and quinn-proto 0.11 raises the limit when that half
//! arrives without waking the waiting `open_uni`: the server never sent SETTINGS nor answered
//! (quic-go's client timed out "awaiting headers"). The relay below makes that ordering
//! certain: it holds the client's second datagram back until the server has had every chance
//! to open its streams.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Buf;
use endpoints::server::{RunningServer, ServerConfig};
use endpoints::tls::{client_config, load_roots, Trust};
use endpoints::QuicConfig;
use quinn::crypto::rustls::QuicClientConfig;
use tokio::net::UdpSocket;

/// How long the relay holds the client's second datagram: far longer than the server needs to
/// accept the connection and open its streams, far shorter than any timeout involved.
const HOLD: Duration = Duration::from_millis(300);

/// A one-client UDP relay in front of `server` that forwards the client's first datagram and
/// holds back every later one until [`HOLD`] after it (the client's retransmissions of the
/// second half of its ClientHello included). Returns its address and a counter of held
/// datagrams that were long-header Initials.
async fn relay(server: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let back = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    back.connect(server).await.unwrap();
    let addr = front.local_addr().unwrap();
    let held_initials = Arc::new(AtomicUsize::new(0));
    let held = held_initials.clone();
    let task = tokio::spawn(async move {
        let (mut up, mut down) = ([0u8; 2048], [0u8; 2048]);
        let mut client = None;
        let mut release_at = None;
        loop {
            tokio::select! {
                r = front.recv_from(&mut up) => {
                    let Ok((n, from)) = r else { return };
                    client = Some(from);
                    let datagram = up[..n].to_vec();
                    let now = tokio::time::Instant::now();
                    match release_at {
                        None => {
                            release_at = Some(now + HOLD);
                            let _ = back.send(&datagram).await;
                        }
                        Some(release) if now < release => {
                            // Long header (0x80), fixed bit (0x40), type Initial (0b00).
                            if datagram[0] & 0xf0 == 0xc0 {
                                held.fetch_add(1, Ordering::SeqCst);
                            }
                            let back = back.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep_until(release).await;
                                let _ = back.send(&datagram).await;
                            });
                        }
                        Some(_) => {
                            let _ = back.send(&datagram).await;
                        }
                    }
                }
                r = back.recv(&mut down) => {
                    let Ok(n) = r else { return };
                    if let Some(c) = client {
                        let _ = front.send_to(&down[..n], c).await;
                    }
                }
            }
        }
    });
    (addr, held_initials, task)
}

/// A quinn client whose ClientHello needs two Initials: four 250-byte ALPN entries besides
/// `h3` (the server picks `h3`) stand in for a post-quantum key share.
fn big_hello_client() -> quinn::Endpoint {
    let roots = Arc::new(load_roots(None).unwrap());
    let pads: Vec<Vec<u8>> = (b'a'..=b'd').map(|c| vec![c; 250]).collect();
    let mut alpn: Vec<&[u8]> = vec![b"h3"];
    alpn.extend(pads.iter().map(|p| p.as_slice()));
    let tls = client_config(&Trust::Roots(roots), &alpn, None, false, false).unwrap();
    let crypto = QuicClientConfig::try_from(tls).unwrap();
    let mut ep = quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    ep
}

/// `GET /<size>` over HTTP/3 through `via`; returns the status and the body length.
async fn get(ep: &quinn::Endpoint, via: SocketAddr, size: u64) -> Result<(u16, u64), String> {
    let conn = ep
        .connect(via, "localhost")
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let (mut driver, mut sender) = h3::client::builder()
        .build::<_, _, bytes::Bytes>(h3_quinn::Connection::new(conn))
        .await
        .map_err(|e| format!("HTTP/3 set-up: {e}"))?;
    tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let req = http::Request::get(format!("https://localhost/{size}"))
        .body(())
        .unwrap();
    let mut stream = sender
        .send_request(req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    stream.finish().await.map_err(|e| format!("finish: {e}"))?;
    let resp = stream
        .recv_response()
        .await
        .map_err(|e| format!("response: {e}"))?;
    let mut body = 0u64;
    while let Some(chunk) = stream.recv_data().await.map_err(|e| format!("body: {e}"))? {
        body += chunk.remaining() as u64;
    }
    Ok((resp.status().as_u16(), body))
}

async fn server(early_response: bool) -> RunningServer {
    RunningServer::start(ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        quic: QuicConfig {
            early_response,
            ..QuicConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
    .expect("server starts")
}

/// Answers within the bound whether 0.5-RTT is on or off (off: the control case).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_response_answers_a_client_hello_split_over_two_initials() {
    for early in [true, false] {
        let srv = server(early).await;
        let (via, held_initials, relay_task) = relay(srv.local_addr()).await;
        let ep = big_hello_client();
        let got = tokio::time::timeout(Duration::from_secs(5), get(&ep, via, 20_000)).await;
        ep.close(0u32.into(), b"");
        relay_task.abort();
        srv.shutdown().await;
        assert!(
            held_initials.load(Ordering::SeqCst) >= 1,
            "the ClientHello must span two Initials for this test to mean anything"
        );
        match got {
            Ok(Ok(answer)) => assert_eq!(answer, (200, 20_000), "early_response = {early}"),
            Ok(Err(e)) => panic!("early_response = {early}: {e}"),
            Err(_) => panic!(
                "early_response = {early}: no answer within 5 s (the server's HTTP/3 set-up \
                 stalled waiting for a stream)"
            ),
        }
    }
}
