//! Failing fast when a QUIC server's port is closed.
//!
//! The QUIC endpoint's socket is unconnected and shared by every connection, so the kernel does
//! not report the ICMP "port unreachable" a closed port answers with: quinn would retransmit
//! its Initial until the request's timeout (30 s by default). A connected UDP socket does get
//! that report (as `ECONNREFUSED` on its next receive), so a handshake still running after
//! [`PROBE_DELAY`] races a small probe that ends it as soon as the path says nobody listens.

use std::net::SocketAddr;
use std::time::Duration;

/// Probes sent at most (the ICMP answer may be lost on a lossy path; loopback answers the first).
const PROBES: u32 = 5;

/// How long a handshake runs before the first probe: longer than a handshake takes on the paths
/// quiclab emulates (up to about 400 ms of RTT), so a healthy connection never sends a probe
/// and the emulated link carries only the endpoints' own packets; a closed port still fails in
/// about half a second instead of the request timeout.
pub(crate) const PROBE_DELAY: Duration = Duration::from_millis(500);

/// Resolves with a message once ICMP says nothing listens on UDP `addr` (port, host or network
/// unreachable); never resolves otherwise, so it is meant to race a handshake.
pub(crate) async fn unreachable(addr: SocketAddr) -> String {
    tokio::time::sleep(PROBE_DELAY).await;
    let bind: SocketAddr = if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = match tokio::net::UdpSocket::bind(bind).await {
        Ok(s) if s.connect(addr).await.is_ok() => s,
        _ => return std::future::pending().await,
    };
    let mut wait = Duration::from_millis(50);
    let mut buf = [0u8; 64];
    for _ in 0..PROBES {
        // One zero byte: far below QUIC's 1200-byte minimum for a client's first datagram, so a
        // listening server discards it (RFC 9000, section 14.1).
        if let Err(e) = sock.send(&[0]).await {
            if let Some(why) = refusal(&e) {
                return format!("{why}: nothing answers on UDP {addr}");
            }
        }
        if let Ok(Err(e)) = tokio::time::timeout(wait, sock.recv(&mut buf)).await {
            if let Some(why) = refusal(&e) {
                return format!("{why}: nothing answers on UDP {addr}");
            }
        }
        wait = (wait * 2).min(Duration::from_secs(1));
    }
    std::future::pending().await
}

/// The ICMP verdict behind a socket error, if it is one.
fn refusal(e: &std::io::Error) -> Option<&'static str> {
    match e.raw_os_error()? {
        libc::ECONNREFUSED => Some("port unreachable (ICMP)"),
        libc::EHOSTUNREACH => Some("host unreachable (ICMP)"),
        libc::ENETUNREACH => Some("network unreachable (ICMP)"),
        _ => None,
    }
}
