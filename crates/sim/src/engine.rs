//! The discrete-event engine: one run of one scenario in virtual time.
//!
//! Topology is a dumbbell. Flow `i`'s packets cross up to three links per direction:
//! client access → bottleneck → server access (ideal access links are skipped, which saves
//! events without changing results). Cross traffic enters and leaves at the bottleneck.
//!
//! Determinism: events are ordered by (time, insertion sequence); all state lives in vectors
//! indexed by flow/link number; every random stream derives from the run seed.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Duration;

use netem::{Link, LinkConfig};
use scenario::model::{CcChoice, FlowSpec, PepPosition, Scenario, Stack, TlsMode, Workload};
use transport::agent::{FlowAgent, Side};
use transport::cc_adapter::ControllerChoice;
use transport::clock::{VirtualClock, VIRTUAL_EPOCH_UNIX_SECS};
use transport::quic::{QuicFlow, QuicFlowConfig, QuicWorkload};
use transport::seeded::sub_seed;
use transport::tcp::segment::{self, Segment};
use transport::tcp::{PepConfig, TcpFlow, TcpFlowConfig, TcpWorkload, Tls};
use transport::tls::KeyLogBuffer;

use crate::addr::{self, IPV4_UDP_OVERHEAD};
use crate::cross::CrossSource;
use crate::pcap::PcapWriter;
use crate::result::{CrossResult, FlowResult, LinkResult, RunResult, SeriesRow};

/// Optional outputs of a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Write the bottleneck's packets here (and TLS secrets to the same path + ".keys").
    pub pcap: Option<PathBuf>,
    /// Write one qlog per connection into this directory.
    pub qlog_dir: Option<PathBuf>,
    /// Record time series (on by default in the CLI; validation may skip them).
    pub series: bool,
}

/// Errors that stop a run before it starts (bad knobs, unwritable trace files).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A flow could not be built.
    #[error("flow {flow}: {message}")]
    Flow { flow: String, message: String },
    /// A trace output failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Link index of the bottleneck's up and down directions.
const BOTTLENECK_UP: usize = 0;
const BOTTLENECK_DOWN: usize = 1;
/// Seed streams.
const SEED_LINKS: u64 = 100;
const SEED_FLOWS: u64 = 200;
const SEED_CROSS: u64 = 300;

/// Who a packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Flow(u32),
    Cross(u32),
}

/// A packet in the network. `payload` is the UDP payload (empty for cross traffic, whose bytes
/// nobody reads; only its size matters).
#[derive(Debug, Clone)]
struct Packet {
    owner: Owner,
    /// Direction across the bottleneck: client side → server side.
    up: bool,
    /// Flow packets: which endpoint sent it and which one it is routed to.
    from: Side,
    to: Side,
    hop: u8,
    /// IP-layer size.
    wire_len: u32,
    /// Transport payload carried (for throughput metrics).
    payload_len: u32,
    /// IP + transport header bytes in front of the payload.
    header_len: u32,
    payload: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Link(u32),
    Timer(u32, u8),
    Cross(u32),
    Sample,
    Mark,
}

struct FlowSlot {
    name: String,
    agent: Box<dyn FlowAgent>,
    spec: FlowSpec,
    /// Currently scheduled timer per side (ns), to discard stale heap entries.
    timer: [Option<u64>; 3],
    /// Links from one side to another, indexed `[from][to]` by `Side::index`.
    routes: [[Vec<usize>; 3]; 3],
    /// Transport payload bytes delivered to each side.
    udp_rx: [u64; 3],
    /// Datagrams or segments sent by the client, the server and a middlebox.
    datagrams_sent: [u64; 3],
    /// Side that receives the data.
    receiver: Side,
    last_delivered: u64,
    last_udp_rx: u64,
    mark_delivered: [Option<u64>; 2],
    mark_udp: [Option<u64>; 2],
    finished: bool,
}

/// One run in progress.
pub struct Sim {
    now: Duration,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    links: Vec<Link<Packet>>,
    link_wake: Vec<Option<u64>>,
    flows: Vec<FlowSlot>,
    cross: Vec<CrossSource>,
    clock: VirtualClock,
    end: Duration,
    sample_interval: Duration,
    measure_from: Duration,
    measure_until: Option<Duration>,
    unfinished: usize,
    series: Vec<SeriesRow>,
    record_series: bool,
    pcap: Option<(PathBuf, PcapWriter<BufWriter<File>>)>,
    keylog: Option<KeyLogBuffer>,
    corrupt_header_drops: [u64; 2],
    processed: u64,
    ip_ident: u16,
    /// Flow sides that received datagrams at the current instant and still have to run.
    pending: Vec<(usize, Side)>,
}

fn is_ideal(l: &LinkConfig) -> bool {
    *l == LinkConfig::ideal()
}

fn workload_name(w: &Workload) -> String {
    match w {
        Workload::Bulk { upload: true } => "bulk-up".into(),
        Workload::Bulk { upload: false } => "bulk-down".into(),
        Workload::Download { .. } => "download".into(),
    }
}

impl Sim {
    /// Builds the topology, flows and sources of `scenario` for the run seeded with `seed`.
    pub fn new(scenario: &Scenario, seed: u64, opts: &RunOptions) -> Result<Sim, SimError> {
        let clock = VirtualClock::new();
        let mut links = vec![
            Link::new(scenario.bottleneck.up.clone(), sub_seed(seed, SEED_LINKS)),
            Link::new(
                scenario.bottleneck.down.clone(),
                sub_seed(seed, SEED_LINKS + 1),
            ),
        ];
        let keylog = opts.pcap.as_ref().map(|_| KeyLogBuffer::default());
        let mut flows = Vec::new();
        for (i, spec) in scenario.flows.iter().enumerate() {
            let add = |cfg: &LinkConfig, links: &mut Vec<Link<Packet>>, k: u64| -> Option<usize> {
                if is_ideal(cfg) {
                    return None;
                }
                links.push(Link::new(
                    cfg.clone(),
                    sub_seed(seed, SEED_LINKS + 10 + 4 * i as u64 + k),
                ));
                Some(links.len() - 1)
            };
            let cu = add(&spec.client_access.up, &mut links, 0);
            let cd = add(&spec.client_access.down, &mut links, 1);
            let su = add(&spec.server_access.up, &mut links, 2);
            let sd = add(&spec.server_access.down, &mut links, 3);
            let routes = routes(cu, cd, su, sd, spec.pep.as_ref().map(|p| p.position));
            let agent = build_agent(
                spec,
                i,
                sub_seed(seed, SEED_FLOWS + i as u64),
                &clock,
                opts,
                keylog.clone(),
            )?;
            let receiver = match spec.workload {
                Workload::Bulk { upload: true } => Side::Server,
                _ => Side::Client,
            };
            flows.push(FlowSlot {
                name: spec.name.clone(),
                agent,
                spec: spec.clone(),
                timer: [None; 3],
                routes,
                udp_rx: [0; 3],
                datagrams_sent: [0; 3],
                receiver,
                last_delivered: 0,
                last_udp_rx: 0,
                mark_delivered: [None, None],
                mark_udp: [None, None],
                finished: false,
            });
        }
        let cross = scenario
            .cross
            .iter()
            .enumerate()
            .map(|(i, c)| CrossSource::new(c.clone(), sub_seed(seed, SEED_CROSS + i as u64)))
            .collect();
        let pcap = match &opts.pcap {
            Some(path) => {
                let f = File::create(path).map_err(|source| SimError::Io {
                    path: path.clone(),
                    source,
                })?;
                let w = PcapWriter::new(BufWriter::new(f), VIRTUAL_EPOCH_UNIX_SECS, 65535)
                    .map_err(|source| SimError::Io {
                        path: path.clone(),
                        source,
                    })?;
                Some((path.clone(), w))
            }
            None => None,
        };
        let n_links = links.len();
        let unfinished = flows.len();
        Ok(Sim {
            now: Duration::ZERO,
            seq: 0,
            events: BinaryHeap::new(),
            links,
            link_wake: vec![None; n_links],
            flows,
            cross,
            clock,
            end: scenario.duration,
            sample_interval: scenario.sample_interval,
            measure_from: scenario.measure_from,
            measure_until: scenario.measure_until,
            unfinished,
            series: Vec::new(),
            record_series: opts.series,
            pcap,
            keylog,
            corrupt_header_drops: [0, 0],
            processed: 0,
            ip_ident: 0,
            pending: Vec::new(),
        })
    }

    fn push(&mut self, t: Duration, ev: Ev) -> u64 {
        let ns = t.max(self.now).as_nanos() as u64;
        self.seq += 1;
        self.events.push(Reverse((ns, self.seq, ev)));
        ns
    }

    /// Runs to the end and returns the results.
    pub fn run(
        mut self,
        id: String,
        point: usize,
        rep: u32,
        seed: u64,
        axes: BTreeMap<String, String>,
        name: String,
    ) -> Result<RunResult, SimError> {
        for f in 0..self.flows.len() {
            for side in Side::ALL {
                self.reschedule_timer(f, side);
            }
        }
        for c in 0..self.cross.len() {
            if let Some(t) = self.cross[c].next_time() {
                self.push(t, Ev::Cross(c as u32));
            }
        }
        if !self.sample_interval.is_zero() {
            self.push(self.sample_interval, Ev::Sample);
        }
        self.push(self.measure_from, Ev::Mark);
        if let Some(u) = self.measure_until {
            self.push(u, Ev::Mark);
        }
        let end_ns = self.end.as_nanos() as u64;
        while let Some(Reverse((t, _, ev))) = self.events.pop() {
            if t > end_ns {
                break;
            }
            self.now = Duration::from_nanos(t);
            self.processed += 1;
            self.dispatch(ev, t);
            if self
                .events
                .peek()
                .is_none_or(|Reverse((next, _, _))| *next != t)
            {
                self.flush_pending();
            }
            if self.unfinished == 0 && !self.flows.is_empty() {
                break;
            }
        }
        let end = if self.unfinished == 0 && !self.flows.is_empty() {
            self.now
        } else {
            self.end
        };
        self.finish(end, id, point, rep, seed, axes, name)
    }

    fn dispatch(&mut self, ev: Ev, t: u64) {
        match ev {
            Ev::Link(l) => self.on_link(l as usize, t),
            Ev::Timer(f, s) => self.on_timer(f as usize, Side::ALL[usize::from(s) % 3], t),
            Ev::Cross(c) => self.on_cross(c as usize),
            Ev::Sample => self.on_sample(),
            Ev::Mark => self.on_mark(),
        }
    }

    fn on_link(&mut self, l: usize, t: u64) {
        if self.link_wake[l] != Some(t) {
            return;
        }
        self.link_wake[l] = None;
        let now = self.now;
        while let Some(d) = self.links[l].poll(now) {
            let mut pkt = d.item;
            if d.corrupted {
                let bit = d.flip_bit % (u64::from(d.ip_bytes) * 8).max(1);
                let header_bits = u64::from(pkt.header_len) * 8;
                let reaches = match pkt.owner {
                    Owner::Flow(f) => {
                        bit >= header_bits
                            && self.flows[f as usize]
                                .agent
                                .corrupt_payload_reaches_endpoint()
                    }
                    Owner::Cross(_) => false,
                };
                if !reaches {
                    // Caught by the receiving host's IP/UDP/TCP checksum.
                    self.corrupt_header_drops[usize::from(!pkt.up)] += 1;
                    continue;
                }
                let pbit = (bit - header_bits) as usize;
                if let Some(byte) = pkt.payload.get_mut(pbit / 8) {
                    *byte ^= 1 << (pbit % 8);
                }
            }
            pkt.hop += 1;
            self.forward(pkt);
        }
        self.reschedule_link(l);
    }

    /// Moves a packet to its next link or delivers it.
    fn forward(&mut self, pkt: Packet) {
        match pkt.owner {
            Owner::Cross(c) => {
                if pkt.hop >= 1 {
                    self.cross[c as usize].delivered_packets += 1;
                } else {
                    let l = if pkt.up {
                        BOTTLENECK_UP
                    } else {
                        BOTTLENECK_DOWN
                    };
                    self.enqueue(l, pkt);
                }
            }
            Owner::Flow(f) => {
                let route = &self.flows[f as usize].routes[pkt.from.index()][pkt.to.index()];
                if let Some(&l) = route.get(usize::from(pkt.hop)) {
                    self.enqueue(l, pkt);
                } else {
                    self.deliver(f as usize, pkt);
                }
            }
        }
    }

    fn enqueue(&mut self, l: usize, pkt: Packet) {
        if self.pcap.is_some() && (l == BOTTLENECK_UP || l == BOTTLENECK_DOWN) {
            self.capture(&pkt);
        }
        let ip = pkt.wire_len;
        let _ = self.links[l].enqueue(self.now, ip, pkt);
        self.reschedule_link(l);
    }

    /// Makes sure a wake-up event exists for the link's next deadline; older entries for other
    /// times become stale and are skipped when popped.
    fn reschedule_link(&mut self, l: usize) {
        if let Some(w) = self.links[l].next_wakeup() {
            let ns = w.max(self.now).as_nanos() as u64;
            if self.link_wake[l] != Some(ns) {
                self.link_wake[l] = Some(self.push(w, Ev::Link(l as u32)));
            }
        }
    }

    fn deliver(&mut self, f: usize, pkt: Packet) {
        let side = pkt.to;
        self.flows[f].udp_rx[side.index()] += u64::from(pkt.payload_len);
        self.clock.set(self.now);
        self.flows[f]
            .agent
            .handle_datagram(side, pkt.from, self.now, pkt.payload);
        if !self.pending.contains(&(f, side)) {
            self.pending.push((f, side));
        }
    }

    /// Lets every side that received datagrams at this instant react, once per batch. Their
    /// transmissions may cause further same-instant deliveries (ideal links), hence the loop.
    fn flush_pending(&mut self) {
        while !self.pending.is_empty() {
            let batch = std::mem::take(&mut self.pending);
            for (f, side) in batch {
                self.after_agent(f, side);
            }
            // Zero-delay deliveries land in the heap at `now`; handle them before moving on.
            let t = self.now.as_nanos() as u64;
            while self
                .events
                .peek()
                .is_some_and(|Reverse((next, _, _))| *next == t)
            {
                let Some(Reverse((_, _, ev))) = self.events.pop() else {
                    break;
                };
                self.processed += 1;
                self.dispatch(ev, t);
            }
        }
    }

    fn on_timer(&mut self, f: usize, side: Side, t: u64) {
        if self.flows[f].timer[side.index()] != Some(t) {
            return;
        }
        self.flows[f].timer[side.index()] = None;
        // The agent may have moved its deadline later since this event was queued (see
        // `reschedule_timer`); then there is nothing to do yet but re-arm.
        if self.flows[f]
            .agent
            .poll_timeout(side)
            .is_some_and(|d| d > self.now)
        {
            self.reschedule_timer(f, side);
            return;
        }
        self.clock.set(self.now);
        self.flows[f].agent.handle_timeout(side, self.now);
        self.after_agent(f, side);
    }

    /// Sends whatever the agent has queued and re-arms its timer.
    fn after_agent(&mut self, f: usize, side: Side) {
        while let Some(t) = self.flows[f].agent.poll_transmit(side, self.now) {
            self.flows[f].datagrams_sent[side.index()] += 1;
            // Client → anything, and middlebox → server, travel toward the servers.
            let up = side == Side::Client || (side == Side::Middle && t.to == Side::Server);
            let pkt = Packet {
                owner: Owner::Flow(f as u32),
                up,
                from: side,
                to: t.to,
                hop: 0,
                wire_len: t.wire_len,
                payload_len: t.payload_len,
                header_len: t.header_len,
                payload: t.bytes,
            };
            self.forward(pkt);
        }
        self.reschedule_timer(f, side);
        if !self.flows[f].finished && self.flows[f].agent.is_finished() {
            self.flows[f].finished = true;
            self.unfinished -= 1;
        }
    }

    fn reschedule_timer(&mut self, f: usize, side: Side) {
        let next = self.flows[f].agent.poll_timeout(side);
        let slot = side.index();
        // QUIC deadlines mostly move later (every ACK re-arms loss detection and idle timers).
        // Pushing a heap entry each time would bury the queue in stale events, so a later
        // deadline keeps the earlier entry, which then fires early and re-arms (`on_timer`).
        // Only an earlier deadline needs a new entry. Results are unchanged: the agent is
        // only ever run at or after its true deadline.
        if let Some(t) = next {
            let ns = t.max(self.now).as_nanos() as u64;
            let keep = self.flows[f].timer[slot]
                .is_some_and(|cur| cur <= ns && cur >= self.now.as_nanos() as u64);
            if !keep {
                let ns = self.push(t, Ev::Timer(f as u32, slot as u8));
                self.flows[f].timer[slot] = Some(ns);
            }
        }
    }

    fn on_cross(&mut self, c: usize) {
        if let Some(size) = self.cross[c].emit() {
            let up = self.cross[c].spec().up;
            let pkt = Packet {
                owner: Owner::Cross(c as u32),
                up,
                from: Side::Middle,
                to: Side::Middle,
                hop: 0,
                wire_len: size + IPV4_UDP_OVERHEAD,
                payload_len: size,
                header_len: IPV4_UDP_OVERHEAD,
                payload: Vec::new(),
            };
            self.forward(pkt);
        }
        if let Some(t) = self.cross[c].next_time() {
            self.push(t, Ev::Cross(c as u32));
        }
    }

    fn on_sample(&mut self) {
        let secs = self.sample_interval.as_secs_f64();
        let (qu, qub) = self.links[BOTTLENECK_UP].queue_len();
        let (qd, qdb) = self.links[BOTTLENECK_DOWN].queue_len();
        for slot in &mut self.flows {
            let delivered = slot.agent.delivered_bytes();
            let udp = slot.udp_rx[slot.receiver.index()];
            if self.record_series {
                let s = slot.agent.sample();
                self.series.push(SeriesRow {
                    t_s: self.now.as_secs_f64(),
                    flow: slot.name.clone(),
                    goodput_bps: (delivered - slot.last_delivered) as f64 * 8.0 / secs,
                    payload_throughput_bps: (udp - slot.last_udp_rx) as f64 * 8.0 / secs,
                    cwnd_bytes: s.cwnd,
                    srtt_ms: s.srtt.as_secs_f64() * 1e3,
                    in_flight_bytes: s.in_flight,
                    queue_up_packets: qu,
                    queue_down_packets: qd,
                    queue_up_bytes: qub,
                    queue_down_bytes: qdb,
                });
            }
            slot.last_delivered = delivered;
            slot.last_udp_rx = udp;
        }
        self.push(self.now + self.sample_interval, Ev::Sample);
    }

    fn on_mark(&mut self) {
        for slot in &mut self.flows {
            let i = usize::from(slot.mark_delivered[0].is_some());
            if i < 2 {
                slot.mark_delivered[i] = Some(slot.agent.delivered_bytes());
                slot.mark_udp[i] = Some(slot.udp_rx[slot.receiver.index()]);
            }
        }
    }

    fn capture(&mut self, pkt: &Packet) {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let mut bytes = Vec::with_capacity(pkt.wire_len as usize);
        match pkt.owner {
            Owner::Flow(f) if self.flows[f as usize].spec.stack == Stack::Tcp => {
                // A segment that does not decode was never going to be accepted; skip it.
                let Ok(seg) = Segment::decode(&pkt.payload) else {
                    return;
                };
                let client = addr::tcp_client_addr(f as usize, seg.conn);
                // A PEP is transparent: it speaks with the client's and the server's addresses.
                let server = addr::server_addr(f as usize);
                let (src, dst) = if pkt.up {
                    (client, server)
                } else {
                    (server, client)
                };
                let mss = self.flows[f as usize].spec.tcp.mtu.saturating_sub(40);
                addr::ipv4_tcp_header(src, dst, &tcp_fields(&seg, mss), self.ip_ident, &mut bytes);
                bytes.resize(bytes.len() + seg.len as usize, 0);
            }
            Owner::Flow(f) => {
                let (c, s) = (addr::client_addr(f as usize), addr::server_addr(f as usize));
                let (src, dst) = if pkt.up { (c, s) } else { (s, c) };
                addr::ipv4_udp_header(src, dst, pkt.payload.len(), self.ip_ident, &mut bytes);
                bytes.extend_from_slice(&pkt.payload);
            }
            Owner::Cross(c) => {
                let src = addr::cross_addr(c as usize, pkt.up);
                let mut dst = addr::cross_addr(c as usize, !pkt.up);
                dst.set_port(addr::CROSS_PORT);
                addr::ipv4_udp_header(
                    src,
                    dst,
                    pkt.payload_len as usize,
                    self.ip_ident,
                    &mut bytes,
                );
                bytes.resize(bytes.len() + pkt.payload_len as usize, 0);
            }
        }
        let now = self.now;
        if let Some((_, w)) = &mut self.pcap {
            // A failing capture must not change the simulation; the error surfaces at finish.
            let _ = w.write(now, &bytes);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        mut self,
        end: Duration,
        id: String,
        point: usize,
        rep: u32,
        seed: u64,
        axes: BTreeMap<String, String>,
        name: String,
    ) -> Result<RunResult, SimError> {
        if let Some((path, w)) = self.pcap.take() {
            w.finish().map_err(|source| SimError::Io {
                path: path.clone(),
                source,
            })?;
            if let Some(k) = &self.keylog {
                let mut keys = path.clone().into_os_string();
                keys.push(".keys");
                let keys = PathBuf::from(keys);
                std::fs::write(&keys, k.contents()).map_err(|source| SimError::Io {
                    path: keys.clone(),
                    source,
                })?;
            }
        }
        let end_s = end.as_secs_f64();
        let from = self.measure_from;
        let until = self.measure_until.unwrap_or(end).min(end);
        let window = until.saturating_sub(from).as_secs_f64();
        let mut flows = Vec::new();
        for slot in &self.flows {
            let rep_ = slot.agent.report();
            let delivered_now = slot.agent.delivered_bytes();
            let udp_now = slot.udp_rx[slot.receiver.index()];
            let rate = |a: Option<u64>, b: Option<u64>, now: u64| -> Option<f64> {
                let start = a?;
                let stop = b.unwrap_or(now);
                (window > 0.0).then(|| (stop - start) as f64 * 8.0 / window)
            };
            let goodput = match (rep_.first_packet_s, rep_.last_byte_s) {
                (Some(a), Some(b)) if b > a => Some(rep_.bytes_delivered as f64 * 8.0 / (b - a)),
                _ => None,
            };
            let last_conn = rep_.connections.last();
            flows.push(FlowResult {
                name: slot.name.clone(),
                stack: match slot.spec.stack {
                    Stack::Quic => "quic".into(),
                    Stack::Tcp => "tcp".into(),
                },
                workload: workload_name(&slot.spec.workload),
                bytes_delivered: rep_.bytes_delivered,
                goodput_bps: goodput,
                window_goodput_bps: rate(
                    slot.mark_delivered[0],
                    slot.mark_delivered[1],
                    delivered_now,
                ),
                window_payload_throughput_bps: rate(slot.mark_udp[0], slot.mark_udp[1], udp_now),
                completion_s: last_conn.and_then(|c| c.completion_s),
                handshake_s: rep_.connections.first().and_then(|c| c.handshake_s),
                ttfb_s: rep_
                    .connections
                    .first()
                    .and_then(|c| c.time_to_first_byte_s),
                first_congestion_s: rep_.first_congestion_s,
                packets_sent: rep_.packets_sent,
                packets_lost: rep_.packets_lost,
                congestion_events: rep_.congestion_events,
                ack_frames_sent: rep_.ack_frames_sent,
                max_data_frames_sent: rep_.max_data_frames_sent,
                max_stream_data_frames_sent: rep_.max_stream_data_frames_sent,
                payload_rx_bytes: udp_now,
                datagrams_sent: [slot.datagrams_sent[0], slot.datagrams_sent[1]],
                final_mtu: rep_.final_mtu,
                connections: rep_.connections.clone(),
                error: rep_.error.clone(),
            });
        }
        let mut links = BTreeMap::new();
        for (name, l, i) in [
            ("bottleneck_up", BOTTLENECK_UP, 0),
            ("bottleneck_down", BOTTLENECK_DOWN, 1),
        ] {
            let stats = self.links[l].stats().clone();
            let utilisation = if end.is_zero() {
                0.0
            } else {
                stats.busy_time.as_secs_f64() / end_s
            };
            links.insert(
                name.to_string(),
                LinkResult {
                    stats,
                    utilisation,
                    corrupt_header_drops: self.corrupt_header_drops[i],
                },
            );
        }
        let cross = self
            .cross
            .iter()
            .map(|c| CrossResult {
                name: c.spec().name.clone(),
                sent_packets: c.sent_packets,
                sent_bytes: c.sent_bytes,
                delivered_packets: c.delivered_packets,
            })
            .collect();
        Ok(RunResult {
            id,
            point,
            rep,
            seed,
            axes,
            scenario: name,
            end_s,
            events: self.processed,
            flows,
            links,
            cross,
            series: std::mem::take(&mut self.series),
        })
    }
}

/// The model's 64-bit sequence space drawn as real 32-bit TCP fields (it starts at 0, so the
/// truncation only wraps after 4 GB, as a real connection would).
fn tcp_fields(seg: &Segment, mss: u16) -> addr::TcpHeaderFields {
    let mut sack = [(0u32, 0u32); 4];
    for (dst, &(a, b)) in sack.iter_mut().zip(seg.sack_blocks()) {
        *dst = (a as u32, b as u32);
    }
    addr::TcpHeaderFields {
        seq: seg.seq as u32,
        ack: seg.ack as u32,
        syn: seg.has(segment::SYN),
        ack_flag: seg.has(segment::ACK),
        fin: seg.has(segment::FIN),
        rst: seg.has(segment::RST),
        window: seg.window,
        ts: seg.ts.map(|(v, e)| (v as u32, e as u32)),
        sack,
        nsack: seg.sack_blocks().len(),
        mss,
        data_len: seg.len as usize,
    }
}

/// Link routes between the sides of one flow. Without a PEP only client ↔ server exists; with
/// one, each end talks to the PEP, which sits before or after the bottleneck.
fn routes(
    cu: Option<usize>,
    cd: Option<usize>,
    su: Option<usize>,
    sd: Option<usize>,
    pep: Option<PepPosition>,
) -> [[Vec<usize>; 3]; 3] {
    let path =
        |links: &[Option<usize>]| -> Vec<usize> { links.iter().flatten().copied().collect() };
    let (b_up, b_down) = (Some(BOTTLENECK_UP), Some(BOTTLENECK_DOWN));
    let mut r: [[Vec<usize>; 3]; 3] = Default::default();
    let (c, s, m) = (
        Side::Client.index(),
        Side::Server.index(),
        Side::Middle.index(),
    );
    r[c][s] = path(&[cu, b_up, su]);
    r[s][c] = path(&[sd, b_down, cd]);
    match pep {
        None => {}
        Some(PepPosition::ClientSide) => {
            r[c][m] = path(&[cu]);
            r[m][c] = path(&[cd]);
            r[m][s] = path(&[b_up, su]);
            r[s][m] = path(&[sd, b_down]);
        }
        Some(PepPosition::ServerSide) => {
            r[c][m] = path(&[cu, b_up]);
            r[m][c] = path(&[b_down, cd]);
            r[m][s] = path(&[su]);
            r[s][m] = path(&[sd]);
        }
    }
    r
}

fn build_agent(
    spec: &FlowSpec,
    index: usize,
    seed: u64,
    clock: &VirtualClock,
    opts: &RunOptions,
    keylog: Option<KeyLogBuffer>,
) -> Result<Box<dyn FlowAgent>, SimError> {
    match spec.stack {
        Stack::Quic => {
            let q = &spec.quic;
            let workload = match spec.workload {
                Workload::Bulk { upload: true } => QuicWorkload::BulkUpload,
                Workload::Bulk { upload: false } => QuicWorkload::BulkDownload,
                Workload::Download {
                    size,
                    streams,
                    connections,
                } => QuicWorkload::Download {
                    size,
                    streams,
                    connections,
                },
            };
            let controller = match spec.cc {
                CcChoice::Ours(c) => ControllerChoice::Ours(c),
                CcChoice::QuinnNewReno => ControllerChoice::QuinnNewReno,
                CcChoice::QuinnCubic => ControllerChoice::QuinnCubic,
                CcChoice::QuinnBbr => ControllerChoice::QuinnBbr,
            };
            let cfg = QuicFlowConfig {
                name: spec.name.clone(),
                seed,
                workload,
                start: spec.start,
                stop: spec.stop,
                controller,
                max_udp_payload: q.mtu.saturating_sub(IPV4_UDP_OVERHEAD as u16),
                mtu_discovery: q.mtu_discovery,
                initial_rtt: q.initial_rtt,
                stream_window: q.stream_window,
                conn_window: q.conn_window,
                send_window: q.send_window,
                ack_ratio: q.ack_ratio,
                max_ack_delay: q.max_ack_delay,
                zero_rtt: q.zero_rtt,
                client_addr: addr::client_addr(index),
                server_addr: addr::server_addr(index),
                qlog_dir: opts.qlog_dir.clone(),
                keylog,
            };
            let flow = QuicFlow::new(cfg, clock.clone()).map_err(|e| SimError::Flow {
                flow: spec.name.clone(),
                message: e.to_string(),
            })?;
            Ok(Box::new(flow))
        }
        Stack::Tcp => {
            let t = &spec.tcp;
            let controller = match spec.cc {
                CcChoice::Ours(c) => c,
                // The scenario parser rejects this; a scenario built in code might not.
                _ => {
                    return Err(SimError::Flow {
                        flow: spec.name.clone(),
                        message: "TCP flows use quiclab's controllers, not quinn's".into(),
                    })
                }
            };
            let workload = match spec.workload {
                Workload::Bulk { upload: true } => TcpWorkload::BulkUpload,
                Workload::Bulk { upload: false } => TcpWorkload::BulkDownload,
                Workload::Download {
                    size,
                    streams,
                    connections,
                } => TcpWorkload::Download {
                    size,
                    streams,
                    connections,
                    http1_parallel: t.http1_parallel,
                },
            };
            let cfg = TcpFlowConfig {
                name: spec.name.clone(),
                workload,
                start: spec.start,
                stop: spec.stop,
                controller,
                mtu: t.mtu,
                tls: match t.tls {
                    TlsMode::None => Tls::None,
                    TlsMode::Tls12 => Tls::Tls12,
                    TlsMode::Tls13 => Tls::Tls13,
                },
                sack: t.sack,
                timestamps: t.timestamps,
                delayed_ack: t.delayed_ack,
                delayed_ack_timeout: t.delayed_ack_timeout,
                receive_window_max: t.receive_window_max,
                initial_receive_window: t.initial_receive_window,
                send_buffer: t.send_buffer,
                min_rto: t.min_rto,
                initial_rto: t.initial_rto,
                pep: spec.pep.as_ref().map(|p| PepConfig {
                    buffer: p.buffer,
                    controller: p.cc,
                    receive_window_max: p.receive_window_max,
                    send_buffer: p.send_buffer,
                }),
            };
            let flow = TcpFlow::new(cfg).map_err(|e| SimError::Flow {
                flow: spec.name.clone(),
                message: e.to_string(),
            })?;
            Ok(Box::new(flow))
        }
    }
}
