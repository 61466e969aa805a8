//! Cross traffic in real time: each source of the scenario sends UDP datagrams from a host on
//! its side of the bottleneck to one on the other, on the simulator's own schedule
//! ([`netem::cross::CrossSource`]: same patterns, same seeded sizes and gaps).

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netem::cross::{CrossSource, CrossSpec};
use netem::wire::IPV4_UDP_OVERHEAD;
use results::Cross;

use crate::error::EmuError;
use crate::topology::Topology;
use crate::udp;

/// First UDP port of the cross-traffic receivers (one per source).
const BASE_PORT: u16 = 5_000;
/// Largest datagram a source may send (bigger payloads are clamped to an MTU's worth).
const MAX_PAYLOAD: usize = 65_507;

/// Running cross-traffic sources and their receivers.
pub(crate) struct CrossTraffic {
    stop: Arc<AtomicBool>,
    senders: Vec<JoinHandle<(u64, u64)>>,
    receivers: Vec<(Arc<AtomicU64>, JoinHandle<()>)>,
    names: Vec<String>,
}

impl CrossTraffic {
    /// Starts every source at `t0` + its start: up sources send from client `client` to server
    /// `server`, down sources the other way.
    pub(crate) fn start(
        topo: &Topology,
        specs: &[CrossSpec],
        client: usize,
        server: usize,
        t0: Instant,
        seed: u64,
    ) -> Result<CrossTraffic, EmuError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut traffic = CrossTraffic {
            stop: stop.clone(),
            senders: Vec::new(),
            receivers: Vec::new(),
            names: Vec::new(),
        };
        for (k, spec) in specs.iter().enumerate() {
            let port = BASE_PORT + k as u16;
            let (from_ns, from_ip, to_ns, to_ip) = if spec.up {
                (
                    topo.client_ns(client),
                    topo.client_addr(client),
                    topo.server_ns(server),
                    topo.server_addr(server),
                )
            } else {
                (
                    topo.server_ns(server),
                    topo.server_addr(server),
                    topo.client_ns(client),
                    topo.client_addr(client),
                )
            };
            let dst = SocketAddrV4::new(to_ip, port);
            let rx = udp::udp_in(to_ns, dst)?;
            let tx = udp::udp_in(from_ns, SocketAddrV4::new(from_ip, 0))?;
            let delivered = Arc::new(AtomicU64::new(0));
            let counter = delivered.clone();
            let rx_stop = stop.clone();
            let receiver = std::thread::Builder::new()
                .name(format!("cross-rx-{k}"))
                .spawn(move || receive(rx, &counter, &rx_stop))
                .map_err(|e| EmuError::io("cannot start a cross-traffic receiver", e))?;
            traffic.receivers.push((delivered, receiver));
            let source = CrossSource::new(
                spec.clone(),
                seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k as u64 + 1)),
            );
            let tx_stop = stop.clone();
            let sender = std::thread::Builder::new()
                .name(format!("cross-tx-{k}"))
                .spawn(move || send(tx, SocketAddr::V4(dst), source, t0, &tx_stop))
                .map_err(|e| EmuError::io("cannot start a cross-traffic sender", e))?;
            traffic.senders.push(sender);
            traffic.names.push(spec.name.clone());
        }
        Ok(traffic)
    }

    /// Stops the senders, lets the receivers count what is still on the path (they stop after
    /// 200 ms without a datagram), returns the counters.
    pub(crate) fn stop(&mut self) -> Vec<Cross> {
        self.stop.store(true, Ordering::SeqCst);
        let sent: Vec<(u64, u64)> = std::mem::take(&mut self.senders)
            .into_iter()
            .map(|h| h.join().unwrap_or((0, 0)))
            .collect();
        let names = std::mem::take(&mut self.names);
        let receivers = std::mem::take(&mut self.receivers);
        let mut out = Vec::new();
        for ((name, (packets, bytes)), (delivered, handle)) in
            names.into_iter().zip(sent).zip(receivers)
        {
            let _ = handle.join();
            out.push(Cross {
                name,
                sent_packets: packets,
                sent_bytes: bytes,
                delivered_packets: delivered.load(Ordering::SeqCst),
            });
        }
        out
    }
}

impl Drop for CrossTraffic {
    /// An abandoned run (error, Ctrl-C) must not leave threads sending.
    fn drop(&mut self) {
        if !self.senders.is_empty() || !self.receivers.is_empty() {
            let _ = self.stop();
        }
    }
}

/// Sends on the source's schedule until it ends or `stop` is set; returns (packets, IP bytes).
fn send(
    sock: UdpSocket,
    dst: SocketAddr,
    mut source: CrossSource,
    t0: Instant,
    stop: &AtomicBool,
) -> (u64, u64) {
    let buf = vec![0u8; MAX_PAYLOAD];
    let (mut packets, mut bytes) = (0, 0);
    while let Some(at) = source.next_time() {
        let due = t0 + at;
        loop {
            if stop.load(Ordering::SeqCst) {
                return (packets, bytes);
            }
            let now = Instant::now();
            if now >= due {
                break;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(20)));
        }
        let Some(size) = source.emit() else { break };
        let len = (size as usize).min(MAX_PAYLOAD);
        if sock.send_to(&buf[..len], dst).is_ok() {
            packets += 1;
            bytes += len as u64 + u64::from(IPV4_UDP_OVERHEAD);
        }
    }
    (packets, bytes)
}

/// Counts datagrams until `stop` is set and the socket has been quiet for a moment.
fn receive(sock: UdpSocket, delivered: &AtomicU64, stop: &AtomicBool) {
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; MAX_PAYLOAD];
    let mut quiet_since: Option<Instant> = None;
    loop {
        match sock.recv_from(&mut buf) {
            Ok(_) => {
                delivered.fetch_add(1, Ordering::SeqCst);
                quiet_since = None;
            }
            Err(_) => {
                if stop.load(Ordering::SeqCst) {
                    let since = *quiet_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > Duration::from_millis(200) {
                        return;
                    }
                }
            }
        }
    }
}
