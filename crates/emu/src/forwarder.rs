//! The userspace L2 forwarder: frames from client ports cross the `up` link model, frames from
//! server ports the `down` one; each leaves on the port that owns its destination MAC.
//!
//! One thread serves every port of the router namespace. It receives with kernel timestamps
//! (the delay reference), offers IPv4 packets to the direction's [`netem::Link`], and sends
//! what the link releases when its delivery time comes. Non-IP frames (ARP, which static
//! neighbour entries make rare) pass at once, without delay or loss, so address resolution
//! never waits behind the emulated path. Each IPv4 packet is offered with its ECN codepoint
//! and 5-tuple flow hash ([`frame::packet_meta`]), so the link's queue discipline (FQ-CoDel's
//! classification, ECN marking) sees what the simulator's does; a CE mark is written into the
//! frame's IPv4 header, checksum updated ([`frame::set_ce`]), when the stage releases it.
//!
//! A port may carry an access link of its own host (a flow's `client_access` /
//! `server_access`, the same [`netem::Link`] the simulator puts there): a packet then crosses
//! the sending host's access link, the bottleneck, and the receiving host's access link, in
//! that order, as in the simulator's dumbbell. Each stage hands the packet on at its scheduled
//! delivery time, not at the moment the forwarder noticed it, so the stages' delays add up
//! exactly; only a stage that was already serving later traffic starts it later.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use netem::pcap::{LinkType, PcapWriter};
use netem::{Ecn, Link, LinkConfig, LinkStats};
use serde::Serialize;

use crate::clock::{self, LinkClock};
use crate::error::EmuError;
use crate::frame::{self, BitError, FrameKind};
use crate::lateness::Lateness;
use crate::netns;
use crate::packet_socket::PacketSocket;

/// Receive buffer: larger than any frame a veth with offloads off can carry, so an oversized
/// frame shows up as such instead of being silently cut.
const RX_BUFFER: usize = 65_536 + 64;
/// Longest sleep, so a stop request is noticed promptly.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// Frames taken from one port before looking at the others and at due deliveries.
const RX_BURST: usize = 64;
/// How often the shared statistics are refreshed.
const PUBLISH_EVERY: Duration = Duration::from_millis(25);
/// A wait shorter than this is polled instead of slept: a sleeping wake-up in this VM takes
/// 25–45 µs, so sleeping for less only makes the release later (measured on this datapath; the design notes' EMULATOR-FACTS.md).
const POLL_BELOW: Duration = Duration::from_micros(50);
/// How much earlier than a delivery the sleeping forwarder asks to be woken (about the median
/// wake-up latency measured here), polling the remainder.
const WAKE_EARLY: Duration = Duration::from_micros(40);
/// Window over which polling time is budgeted.
const POLL_WINDOW: Duration = Duration::from_millis(100);
/// First stream label of the access links' seeds ([`transport::seeded::sub_seed`]).
const ACCESS_SEED: u64 = 0x00ac_ce55;
/// Share of each window the sleeping forwarder may spend polling. Well below the kernel's
/// real-time throttling limit (95%), so a SCHED_FIFO forwarder is never stalled, and it leaves
/// CPU to the endpoints sharing the machine.
const POLL_BUDGET: f64 = 0.3;

/// Which side of the bottleneck a router port faces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Side {
    /// Faces a client: frames received here cross the `up` link.
    Client,
    /// Faces a server: frames received here cross the `down` link.
    Server,
}

/// How the forwarder waits for the next packet or delivery time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WaitMode {
    /// `ppoll` with the time to the next delivery (SCHED_FIFO, pinned, 1 ns timer slack).
    Sleep,
    /// Busy-poll on a pinned core (normal priority: never spin under SCHED_FIFO).
    Spin,
}

/// One router port.
#[derive(Debug, Clone)]
pub(crate) struct PortSpec {
    /// Interface name in the router namespace.
    pub ifname: String,
    /// Side it faces.
    pub side: Side,
    /// MAC address of the host at the far end (frames to it leave here).
    pub host_mac: [u8; 6],
    /// The host's access link: `ingress` carries its frames toward the bottleneck, `egress`
    /// the bottleneck's frames toward it. An ideal link is skipped (it would deliver at once).
    pub access: Option<AccessLink>,
}

/// The two directions of one host's access link, named from the router's point of view.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AccessLink {
    /// Host → router (a client's `client_access.up`, a server's `server_access.down`).
    pub ingress: LinkConfig,
    /// Router → host (a client's `client_access.down`, a server's `server_access.up`).
    pub egress: LinkConfig,
}

/// Counters of one port's access link.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AccessStats {
    /// Router interface of the host (`c0`, `s1`, …).
    pub port: String,
    /// Host → router direction.
    pub ingress: LinkStats,
    /// Router → host direction.
    pub egress: LinkStats,
}

/// Configuration of a forwarder.
#[derive(Debug, Clone)]
pub(crate) struct ForwarderConfig {
    /// Client → server link.
    pub up: LinkConfig,
    /// Server → client link.
    pub down: LinkConfig,
    /// Seed of the link models (up uses `seed`, down a value derived from it).
    pub seed: u64,
    /// Waiting strategy.
    pub wait: WaitMode,
    /// Write `client-side.pcap` and `server-side.pcap` here.
    pub capture_dir: Option<PathBuf>,
    /// Pin the thread to this CPU (`None`: the last CPU).
    pub cpu: Option<usize>,
}

/// Counters of a forwarder run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ForwarderReport {
    /// Client → server link counters.
    pub up: LinkStats,
    /// Server → client link counters.
    pub down: LinkStats,
    /// The forwarder's health counters (frames seen, malformed, unroutable, dropped on send,
    /// corrupt payloads delivered, missing timestamps, capture files), in the results schema's
    /// own type so a run reports them as they are.
    #[serde(flatten)]
    pub health: ::results::Forwarder,
    /// Corrupted packets left for the receiver's checksum to drop, [up, down].
    pub corrupt_header_drops: [u64; 2],
    /// How late packets left relative to their scheduled delivery time.
    pub release_lateness: Lateness,
    /// Waiting strategy used.
    pub wait: Option<WaitMode>,
    /// Whether SCHED_FIFO could be set (sleep mode).
    pub realtime_priority: bool,
    /// Short waits that were slept because the polling budget was spent.
    pub budget_sleeps: u64,
    /// Access links of the ports that have one, in port order.
    pub access: Vec<AccessStats>,
}

/// A frame travelling through a link: its bytes and the port it leaves on.
#[derive(Debug, Clone)]
struct InTransit {
    frame: Vec<u8>,
    out: usize,
}

/// A running forwarder thread.
#[derive(Debug)]
pub(crate) struct ForwarderHandle {
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<ForwarderReport>>,
    thread: Option<JoinHandle<Result<ForwarderReport, EmuError>>>,
}

impl ForwarderHandle {
    /// Counters as of the last refresh (at most a few tens of milliseconds old).
    pub(crate) fn snapshot(&self) -> ForwarderReport {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stops the thread and returns the final counters.
    pub(crate) fn stop(mut self) -> Result<ForwarderReport, EmuError> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<ForwarderReport, EmuError> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(EmuError::Forwarder("forwarder thread panicked".into()))),
            None => Ok(self.snapshot()),
        }
    }
}

impl Drop for ForwarderHandle {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// Starts a forwarder in namespace `router_ns` over `ports`; returns once every port's socket
/// is bound, i.e. from then on every frame is captured and forwarded.
pub(crate) fn spawn(
    router_ns: &str,
    ports: Vec<PortSpec>,
    config: ForwarderConfig,
) -> Result<ForwarderHandle, EmuError> {
    let ns = netns::open(router_ns)?;
    let stop = Arc::new(AtomicBool::new(false));
    let shared = Arc::new(Mutex::new(ForwarderReport::default()));
    let (ready_tx, ready_rx) = mpsc::channel();
    let thread = {
        let stop = stop.clone();
        let shared = shared.clone();
        std::thread::Builder::new()
            .name(format!("fwd-{router_ns}"))
            .spawn(move || {
                let setup =
                    netns::enter(&ns).and_then(|()| Forwarder::new(ports, config, stop, shared));
                match setup {
                    Ok(mut f) => {
                        let _ = ready_tx.send(Ok(()));
                        f.run()
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        let _ = ready_tx.send(Err(e));
                        Err(EmuError::Forwarder(msg))
                    }
                }
            })
            .map_err(|e| EmuError::io("cannot start the forwarder thread", e))?
    };
    let mut handle = ForwarderHandle {
        stop,
        shared,
        thread: Some(thread),
    };
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => {
            let _ = handle.stop_inner();
            Err(e)
        }
        Err(_) => Err(handle
            .stop_inner()
            .err()
            .unwrap_or_else(|| EmuError::Forwarder("forwarder exited during setup".into()))),
    }
}

/// Where captured frames go: one file per side of the bottleneck.
struct Captures {
    client_side: PcapWriter<BufWriter<File>>,
    server_side: PcapWriter<BufWriter<File>>,
}

impl Captures {
    fn open(dir: &std::path::Path) -> Result<(Captures, Vec<PathBuf>), EmuError> {
        fsutil::create_dir_all(dir)
            .map_err(|e| EmuError::io(format!("cannot create {}", dir.display()), e))?;
        let open = |name: &str| -> Result<(PcapWriter<BufWriter<File>>, PathBuf), EmuError> {
            let path = dir.join(name);
            // An existing file (or a link planted in the user's directory) is unlinked, never
            // followed; the new file is created exclusively with O_NOFOLLOW.
            let file = fsutil::create_replacing(&path, 0o600)
                .map_err(|e| EmuError::io(format!("cannot create {}", path.display()), e))?;
            let w = PcapWriter::with_link_type(
                BufWriter::with_capacity(1 << 20, file),
                LinkType::Ethernet,
                0,
                RX_BUFFER as u32,
            )
            .map_err(|e| EmuError::io(format!("cannot write {}", path.display()), e))?;
            Ok((w, path))
        };
        let (client_side, a) = open("client-side.pcap")?;
        let (server_side, b) = open("server-side.pcap")?;
        Ok((
            Captures {
                client_side,
                server_side,
            },
            vec![a, b],
        ))
    }

    fn write(&mut self, side: Side, realtime_ns: u64, frame: &[u8]) {
        // A capture that cannot be written must not stop forwarding; finish() reports it.
        let w = match side {
            Side::Client => &mut self.client_side,
            Side::Server => &mut self.server_side,
        };
        let _ = w.write_unix_ns(realtime_ns, frame);
    }
}

struct Forwarder {
    sockets: Vec<PacketSocket>,
    ports: Vec<PortSpec>,
    /// [up, down].
    links: [Link<InTransit>; 2],
    /// Per port: its host's access link toward the router (`None`: ideal or absent).
    ingress: Vec<Option<Link<InTransit>>>,
    /// Per port: its host's access link from the router.
    egress: Vec<Option<Link<InTransit>>>,
    clock: LinkClock,
    wait: WaitMode,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<ForwarderReport>>,
    report: ForwarderReport,
    captures: Option<Captures>,
    buf: Vec<u8>,
    /// Start of the current polling-budget window and the polling time spent in it.
    poll_window: (Duration, Duration),
}

fn dir_index(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server => 1,
    }
}

impl Forwarder {
    fn new(
        ports: Vec<PortSpec>,
        config: ForwarderConfig,
        stop: Arc<AtomicBool>,
        shared: Arc<Mutex<ForwarderReport>>,
    ) -> Result<Forwarder, EmuError> {
        let sockets = ports
            .iter()
            .map(|p| PacketSocket::open(&p.ifname))
            .collect::<Result<Vec<_>, _>>()?;
        let mut report = ForwarderReport {
            wait: Some(config.wait),
            ..ForwarderReport::default()
        };
        let captures = match &config.capture_dir {
            Some(dir) => {
                let (c, files) = Captures::open(dir)?;
                report.health.capture_files =
                    files.iter().map(|p| p.display().to_string()).collect();
                Some(c)
            }
            None => None,
        };
        clock::set_min_timer_slack();
        let cpu = config
            .cpu
            .unwrap_or_else(|| clock::cpu_count().saturating_sub(1));
        clock::pin_to_cpu(cpu);
        if config.wait == WaitMode::Sleep {
            report.realtime_priority = clock::set_realtime_priority();
        }
        let ideal = LinkConfig::ideal();
        // Each access direction gets its own random stream, derived from the run's seed and
        // the port's position (the bottleneck keeps the seeds it always had).
        let access_link = |port: usize, k: u64, cfg: Option<&LinkConfig>| {
            cfg.filter(|c| **c != ideal).map(|c| {
                Link::new(
                    c.clone(),
                    transport::seeded::sub_seed(config.seed, ACCESS_SEED + 2 * port as u64 + k),
                )
            })
        };
        let ingress = ports
            .iter()
            .enumerate()
            .map(|(i, p)| access_link(i, 0, p.access.as_ref().map(|a| &a.ingress)))
            .collect();
        let egress = ports
            .iter()
            .enumerate()
            .map(|(i, p)| access_link(i, 1, p.access.as_ref().map(|a| &a.egress)))
            .collect();
        Ok(Forwarder {
            sockets,
            ports,
            links: [
                Link::new(config.up, config.seed),
                Link::new(config.down, config.seed ^ 0x5bd1_e995_d0e1_f00d),
            ],
            ingress,
            egress,
            clock: LinkClock::start(),
            wait: config.wait,
            stop,
            shared,
            report,
            captures,
            buf: vec![0u8; RX_BUFFER],
            poll_window: (Duration::ZERO, Duration::ZERO),
        })
    }

    fn run(&mut self) -> Result<ForwarderReport, EmuError> {
        let mut pollfds: Vec<libc::pollfd> = self
            .sockets
            .iter()
            .map(|s| libc::pollfd {
                fd: s.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut last_publish = Duration::ZERO;
        let result = loop {
            if self.stop.load(Ordering::Relaxed) {
                break Ok(());
            }
            if let Err(e) = self.receive_all() {
                break Err(e);
            }
            if let Err(e) = self.release_due() {
                break Err(e);
            }
            let now = self.clock.now();
            if now.saturating_sub(last_publish) >= PUBLISH_EVERY {
                self.publish();
                last_publish = now;
            }
            if self.wait == WaitMode::Sleep {
                self.sleep(&mut pollfds);
            }
        };
        // Deliveries still in flight at stop are dropped; the counters say what was forwarded.
        if let Some(c) = self.captures.take() {
            let a = c.client_side.finish();
            let b = c.server_side.finish();
            if let Err(e) = a.and(b) {
                return Err(EmuError::io("cannot finish the capture files", e));
            }
        }
        self.publish();
        result.map(|()| self.snapshot_report())
    }

    fn snapshot_report(&self) -> ForwarderReport {
        let mut r = self.report.clone();
        r.up = self.links[0].stats().clone();
        r.down = self.links[1].stats().clone();
        let stats = |l: &Option<Link<InTransit>>| l.as_ref().map(|l| l.stats().clone());
        r.access = (0..self.ports.len())
            .filter_map(|p| {
                let (i, e) = (stats(&self.ingress[p]), stats(&self.egress[p]));
                (i.is_some() || e.is_some()).then(|| AccessStats {
                    port: self.ports[p].ifname.clone(),
                    ingress: i.unwrap_or_default(),
                    egress: e.unwrap_or_default(),
                })
            })
            .collect();
        r
    }

    fn publish(&self) {
        let r = self.snapshot_report();
        *self.shared.lock().unwrap_or_else(|p| p.into_inner()) = r;
    }

    /// Sleeps until a frame arrives or the next link event is due; a wait shorter than
    /// [`POLL_BELOW`] returns at once (the caller polls again) while the budget allows.
    fn sleep(&mut self, pollfds: &mut [libc::pollfd]) {
        let now = self.clock.now();
        let next = self
            .links
            .iter()
            .chain(self.ingress.iter().chain(&self.egress).flatten())
            .filter_map(|l| l.next_wakeup())
            .min();
        let timeout = match next {
            Some(t) => t.saturating_sub(now).min(MAX_SLEEP),
            None => MAX_SLEEP,
        };
        if timeout.is_zero() {
            return;
        }
        let polling_allowed =
            self.poll_window.1.as_secs_f64() < POLL_WINDOW.as_secs_f64() * POLL_BUDGET;
        if timeout < POLL_BELOW && self.may_poll(now, timeout) {
            std::hint::spin_loop();
            return;
        }
        // Wake a typical wake-up latency early and poll the rest, so the release is not late
        // by that latency (only while polling is within its budget).
        let timeout = if polling_allowed && next.is_some() && timeout < MAX_SLEEP {
            timeout
                .saturating_sub(WAKE_EARLY)
                .max(Duration::from_micros(1))
        } else {
            timeout
        };
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        for p in pollfds.iter_mut() {
            p.revents = 0;
        }
        // SAFETY: ppoll on a valid pollfd array with its length; no signal mask change.
        unsafe {
            libc::ppoll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
    }

    /// Charges `wait` of polling to the current window; false once the window's budget is spent.
    fn may_poll(&mut self, now: Duration, wait: Duration) -> bool {
        let (start, used) = &mut self.poll_window;
        if now.saturating_sub(*start) >= POLL_WINDOW {
            *start = now;
            *used = Duration::ZERO;
        }
        if used.as_secs_f64() >= POLL_WINDOW.as_secs_f64() * POLL_BUDGET {
            self.report.budget_sleeps += 1;
            return false;
        }
        // Charged up front with the full wait: a conservative estimate of the time polled.
        *used += wait;
        true
    }

    /// Takes every waiting frame (a burst per port, round-robin) into the links.
    fn receive_all(&mut self) -> Result<(), EmuError> {
        loop {
            let mut got_any = false;
            for port in 0..self.sockets.len() {
                for _ in 0..RX_BURST {
                    let Some(rx) = self.sockets[port].recv(&mut self.buf)? else {
                        break;
                    };
                    got_any = true;
                    self.on_frame(port, rx);
                }
            }
            if !got_any {
                return Ok(());
            }
            // Keep due deliveries on time even under a continuous receive load.
            self.release_due()?;
        }
    }

    fn on_frame(&mut self, port: usize, rx: crate::packet_socket::Received) {
        self.report.health.rx_frames += 1;
        let now = self.clock.now();
        let t = if rx.realtime_ns == 0 {
            self.report.health.missing_timestamps += 1;
            now
        } else {
            self.clock.link_time_of(rx.realtime_ns, now)
        };
        if rx.truncated {
            self.report.health.oversized_frames += 1;
            return;
        }
        let data = &self.buf[..rx.len];
        let side = self.ports[port].side;
        if let Some(c) = &mut self.captures {
            c.write(side, self.clock.realtime_of(t), data);
        }
        match frame::classify(data) {
            FrameKind::Malformed => self.report.health.malformed_frames += 1,
            FrameKind::NonIp => {
                self.report.health.non_ip_frames += 1;
                let frame = data.to_vec();
                self.pass_non_ip(side, &frame);
            }
            FrameKind::Ipv4 { ip_bytes } => {
                let Some(out) = frame::dst_mac(data).and_then(|mac| self.port_for(side, mac))
                else {
                    self.report.health.unroutable_frames += 1;
                    return;
                };
                let item = InTransit {
                    frame: data.to_vec(),
                    out,
                };
                // Queue drops and marks are counted by the link itself; its queue discipline
                // sees the packet's ECN codepoint and 5-tuple flow.
                let meta = frame::packet_meta(&item.frame, ip_bytes);
                let link = match &mut self.ingress[port] {
                    Some(access) => access,
                    None => &mut self.links[dir_index(side)],
                };
                let _ = link.enqueue_packet(t, meta, item);
            }
        }
    }

    /// The port on the other side of `from` owning `mac`.
    fn port_for(&self, from: Side, mac: [u8; 6]) -> Option<usize> {
        self.ports
            .iter()
            .position(|p| p.side != from && p.host_mac == mac)
    }

    /// Sends a non-IP frame to its owner on the other side, or floods it there (broadcast).
    fn pass_non_ip(&mut self, from: Side, frame: &[u8]) {
        let owner = frame::dst_mac(frame).and_then(|mac| self.port_for(from, mac));
        let targets: Vec<usize> = match owner {
            Some(p) => vec![p],
            None => (0..self.ports.len())
                .filter(|&p| self.ports[p].side != from)
                .collect(),
        };
        for p in targets {
            self.transmit(p, frame);
        }
    }

    fn transmit(&mut self, port: usize, frame: &[u8]) {
        match self.sockets[port].send(frame) {
            Ok(true) => {
                if let Some(c) = &mut self.captures {
                    let t = self.clock.realtime_of(self.clock.now());
                    c.write(self.ports[port].side, t, frame);
                }
            }
            // A send error on one frame (e.g. a port going down at teardown) drops that frame.
            Ok(false) | Err(_) => self.report.health.tx_dropped += 1,
        }
    }

    /// Moves every delivery whose time has come to its next stage: a sending host's access
    /// link hands on to the bottleneck, the bottleneck to the receiving host's access link or
    /// the wire, that access link to the wire.
    fn release_due(&mut self) -> Result<(), EmuError> {
        let now = self.clock.now();
        for port in 0..self.ingress.len() {
            let dir = dir_index(self.ports[port].side);
            while let Some((at, ip_bytes, item)) = self.take_due(Stage::Ingress(port), now) {
                let meta = frame::packet_meta(&item.frame, ip_bytes);
                let _ = self.links[dir].enqueue_packet(at, meta, item);
            }
        }
        for dir in 0..2 {
            while let Some((at, ip_bytes, item)) = self.take_due(Stage::Bottleneck(dir), now) {
                match &mut self.egress[item.out] {
                    Some(access) => {
                        let meta = frame::packet_meta(&item.frame, ip_bytes);
                        let _ = access.enqueue_packet(at, meta, item);
                    }
                    None => self.transmit(item.out, &item.frame),
                }
            }
        }
        for port in 0..self.egress.len() {
            while let Some((_, _, item)) = self.take_due(Stage::Egress(port), now) {
                self.transmit(item.out, &item.frame);
            }
        }
        Ok(())
    }

    /// The next packet `stage` delivers by `now`, with its delivery time and size, a CE mark of
    /// its queue discipline written into the IPv4 header (checksum updated) and its bit error
    /// (if any) applied and counted, in that order; its lateness is recorded.
    fn take_due(&mut self, stage: Stage, now: Duration) -> Option<(Duration, u32, InTransit)> {
        let (link, dir) = match stage {
            Stage::Ingress(p) => (self.ingress[p].as_mut()?, dir_index(self.ports[p].side)),
            Stage::Bottleneck(d) => (&mut self.links[d], d),
            Stage::Egress(p) => {
                // Frames leaving toward a client travel down, toward a server up.
                let d = 1 - dir_index(self.ports[p].side);
                (self.egress[p].as_mut()?, d)
            }
        };
        let d = link.poll(now)?;
        self.report
            .release_lateness
            .record(now.saturating_sub(d.at).as_nanos() as u64);
        let mut item = d.item;
        if d.ecn == Ecn::Ce {
            // A no-op when the frame already carried CE from the sender or an earlier stage.
            frame::set_ce(&mut item.frame);
        }
        if d.corrupted {
            match frame::apply_bit_error(&mut item.frame, d.flip_bit) {
                BitError::UdpPayloadDelivered => self.report.health.corrupt_delivered[dir] += 1,
                BitError::DroppedByChecksum => self.report.corrupt_header_drops[dir] += 1,
            }
        }
        Some((d.at, d.ip_bytes, item))
    }
}

/// One link of a packet's path through the router.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// The access link from this port's host.
    Ingress(usize),
    /// The bottleneck in this direction (0 up, 1 down).
    Bottleneck(usize),
    /// The access link to this port's host.
    Egress(usize),
}
