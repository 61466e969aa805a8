//! Latency probes in real time: a client thread in the namespace of the probe's flow client
//! sends [`ProbeMessage`] requests on the probe's schedule and a reflector thread in the
//! flow server's namespace echoes them, both on UDP sockets of their own (so FQ-CoDel gives
//! them a queue of their own, as in the simulator). Every timestamp is the host's
//! `CLOCK_REALTIME`, read by the kernel when a datagram arrives: the namespaces share the
//! host's clock, so the one-way delays need no clock-offset estimate.

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netem::probe::{ProbeLog, ProbeMessage, ProbeSpec};

use crate::clock;
use crate::error::EmuError;
use crate::topology::Topology;
use crate::udp;

/// UDP port of the reflector of probe `k` is `BASE_PORT + k` (and its client's too).
const BASE_PORT: u16 = 7_000;
/// How long the client keeps listening for echoes after the run's flows are done.
const DRAIN: Duration = Duration::from_millis(300);
/// Largest datagram read: a probe's payload is at most 1472 bytes.
const MAX_DATAGRAM: usize = 2_048;

/// Running probes.
pub(crate) struct Probes {
    stop: Arc<AtomicBool>,
    clients: Vec<(ProbeSpec, String, JoinHandle<ProbeLog>)>,
    reflectors: Vec<JoinHandle<()>>,
}

impl Probes {
    /// Starts every probe of `specs` at `t0` + its start, until `duration`; `flow_names` name
    /// the flows the probes run beside.
    pub(crate) fn start(
        topo: &Topology,
        specs: &[ProbeSpec],
        flow_names: &[String],
        t0: Instant,
        duration: Duration,
    ) -> Result<Probes, EmuError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut probes = Probes {
            stop: stop.clone(),
            clients: Vec::new(),
            reflectors: Vec::new(),
        };
        for (k, spec) in specs.iter().enumerate() {
            let port = BASE_PORT + k as u16;
            let f = spec.flow;
            let reflector_addr = SocketAddrV4::new(topo.server_addr(f), port);
            let reflector = udp::udp_in(topo.server_ns(f), reflector_addr)?;
            let client_addr = SocketAddrV4::new(topo.client_addr(f), port);
            let client = udp::udp_in(topo.client_ns(f), client_addr)?;
            let r_stop = stop.clone();
            probes.reflectors.push(
                std::thread::Builder::new()
                    .name(format!("probe-echo-{k}"))
                    .spawn(move || reflect(&reflector, SocketAddr::V4(client_addr), &r_stop))
                    .map_err(|e| EmuError::io("cannot start a probe reflector", e))?,
            );
            let c_stop = stop.clone();
            let c_spec = spec.clone();
            let dst = SocketAddr::V4(reflector_addr);
            let handle = std::thread::Builder::new()
                .name(format!("probe-{k}"))
                .spawn(move || ping(&client, dst, &c_spec, t0, duration, &c_stop))
                .map_err(|e| EmuError::io("cannot start a probe client", e))?;
            let name = flow_names.get(f).cloned().unwrap_or_default();
            probes.clients.push((spec.clone(), name, handle));
        }
        Ok(probes)
    }

    /// Stops sending, lets the clients collect the echoes still on the way, returns the
    /// results.
    pub(crate) fn stop(&mut self) -> Vec<results::Probe> {
        self.stop.store(true, Ordering::SeqCst);
        let out = std::mem::take(&mut self.clients)
            .into_iter()
            .map(|(spec, flow, h)| h.join().unwrap_or_default().to_result(&spec, &flow))
            .collect();
        for h in std::mem::take(&mut self.reflectors) {
            let _ = h.join();
        }
        out
    }
}

impl Drop for Probes {
    /// An abandoned run (error, Ctrl-C) must not leave threads sending.
    fn drop(&mut self) {
        if !self.clients.is_empty() || !self.reflectors.is_empty() {
            let _ = self.stop();
        }
    }
}

/// The probe's client: sends each request when due and reads echoes in between; after `stop`,
/// reads for [`DRAIN`] more.
fn ping(
    sock: &UdpSocket,
    dst: SocketAddr,
    spec: &ProbeSpec,
    t0: Instant,
    duration: Duration,
    stop: &AtomicBool,
) -> ProbeLog {
    let mut log = ProbeLog::default();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut seq = 0;
    let mut stopped_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if stopped_at.is_none() && stop.load(Ordering::SeqCst) {
            stopped_at = Some(now);
        }
        if stopped_at.is_some_and(|s| now.duration_since(s) >= DRAIN) {
            return log;
        }
        let due = if stopped_at.is_none() {
            spec.send_time(seq, duration).map(|t| t0 + t)
        } else {
            None
        };
        if due.is_some_and(|d| d <= now) {
            let request = ProbeMessage {
                seq,
                sent_ns: clock::realtime_ns(),
                reflected_ns: 0,
            };
            seq += 1;
            if sock.send_to(&request.encode(spec.payload), dst).is_ok() {
                log.on_sent();
            }
            continue;
        }
        let wait = due.map_or(Duration::from_millis(20), |d| d - now);
        let _ = sock.set_read_timeout(Some(
            wait.clamp(Duration::from_micros(100), Duration::from_millis(20)),
        ));
        if let Ok(Some((len, rx_ns))) = udp::recv_timestamped(sock, &mut buf) {
            log.on_echo(&buf[..len], rx_ns);
        }
    }
}

/// The reflector: writes each request's arrival time into it and sends it back to `client`
/// (the probe's client socket, the only sender it answers), until `stop`.
fn reflect(sock: &UdpSocket, client: SocketAddr, stop: &AtomicBool) {
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; MAX_DATAGRAM];
    // Echoes still on the way when the clients stop are answered until they stop draining.
    let mut stopped_at: Option<Instant> = None;
    loop {
        if stop.load(Ordering::SeqCst) {
            let since = *stopped_at.get_or_insert_with(Instant::now);
            if since.elapsed() >= DRAIN {
                return;
            }
        }
        if let Ok(Some((len, rx_ns))) = udp::recv_timestamped(sock, &mut buf) {
            if ProbeMessage::reflect(&mut buf[..len], rx_ns) {
                let _ = sock.send_to(&buf[..len], client);
            }
        }
    }
}
