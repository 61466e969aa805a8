//! The discrete-event engine: one run of one scenario in virtual time.
//!
//! Topology is a dumbbell. Flow `i`'s packets cross up to three links per direction:
//! client access → bottleneck → server access (ideal access links are skipped, which saves
//! events without changing results). Cross traffic enters and leaves at the bottleneck.
//!
//! Determinism: events are ordered by (time, insertion sequence); all state lives in vectors
//! indexed by flow/link number; every random stream derives from the run seed.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::time::Duration;

use std::net::{Ipv4Addr, SocketAddr};

use dary_heap::QuaternaryHeap;
use netem::qdisc::flow_hash;
use netem::wire::{PROTO_TCP, PROTO_UDP};
use netem::{Ecn, Link, LinkConfig, PacketMeta};
use scenario::limits::{samples_per_run, MAX_SAMPLES_PER_RUN, MAX_SERIES_ROWS_PER_RUN};
use scenario::model::{FlowSpec, Scenario, Stack, Workload};
use transport::agent::{FlowAgent, Side};
use transport::clock::VirtualClock;
use transport::seeded::sub_seed;
use transport::tcp::segment::Segment;
use transport::tls::KeyLogBuffer;

use crate::addr;
use crate::agents::{build_agent, routes};
use crate::capture::Capture;
use netem::cross::CrossSource;
use quantile::DelayHistogram;

use crate::probes::ProbeRun;
use netem::wire::IPV4_UDP_OVERHEAD;
use results::{Run, SeriesRow};

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
    /// The run exceeds a resource limit (`scenario::limits`).
    #[error("{0}")]
    Limit(String),
    /// A trace output failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Refuses runs whose sampling would not finish or not fit in memory. The parser already caps
/// samples per run; scenarios built in code reach the engine without it, and only the engine
/// knows whether series are recorded (one row per flow per sample).
fn check_samples(scenario: &Scenario, series: bool) -> Result<(), SimError> {
    let samples = samples_per_run(scenario.duration, scenario.sample_interval);
    if samples > MAX_SAMPLES_PER_RUN {
        return Err(SimError::Limit(format!(
            "{samples} samples per run (run.duration / run.sample_interval); at most {MAX_SAMPLES_PER_RUN}: raise run.sample_interval"
        )));
    }
    let rows = samples.saturating_mul(scenario.flows.len() as u64);
    if series && rows > MAX_SERIES_ROWS_PER_RUN {
        return Err(SimError::Limit(format!(
            "the time series would have {rows} rows ({samples} samples × {} flows); at most {MAX_SERIES_ROWS_PER_RUN} per run: raise run.sample_interval or do not record series (--no-series)",
            scenario.flows.len()
        )));
    }
    Ok(())
}

/// Link index of the bottleneck's up and down directions.
pub(crate) const BOTTLENECK_UP: usize = 0;
pub(crate) const BOTTLENECK_DOWN: usize = 1;
/// Seed streams.
const SEED_LINKS: u64 = 100;
const SEED_FLOWS: u64 = 200;
const SEED_CROSS: u64 = 300;

/// Who a packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Flow(u32),
    Cross(u32),
    /// A latency probe's request (up) or echo (down), between the hosts of flow `flow`.
    Probe {
        probe: u32,
        flow: u32,
    },
}

/// A packet in the network. `payload` is the UDP payload (empty for cross traffic, whose bytes
/// nobody reads; only its size matters).
#[derive(Debug, Clone)]
pub(crate) struct Packet {
    pub(crate) owner: Owner,
    /// Direction across the bottleneck: client side → server side.
    pub(crate) up: bool,
    /// Flow packets: which endpoint sent it and which one it is routed to.
    pub(crate) from: Side,
    pub(crate) to: Side,
    pub(crate) hop: u8,
    /// IP-layer size.
    pub(crate) wire_len: u32,
    /// Transport payload carried (for throughput metrics).
    pub(crate) payload_len: u32,
    /// IP + transport header bytes in front of the payload.
    pub(crate) header_len: u32,
    /// The IP ECN codepoint: as the stack sent it (`Transmit::ecn`), CE once a queue
    /// discipline marked it; handed to the receiving agent with the payload.
    pub(crate) ecn: Ecn,
    /// When its sender put it on the path (flows: the agent's transmission), for one-way delay.
    pub(crate) sent_at: Duration,
    pub(crate) payload: Vec<u8>,
}

/// The packet's flow for the queue disciplines: the hash of the 5-tuple its pcap record
/// carries (the addresses of [`crate::addr`]; a TCP segment's connection picks its client port).
fn flow_of(pkt: &Packet, spec: Option<&FlowSpec>) -> u64 {
    let v4 = |a: SocketAddr| match a {
        SocketAddr::V4(a) => (*a.ip(), a.port()),
        SocketAddr::V6(_) => (Ipv4Addr::UNSPECIFIED, a.port()),
    };
    let (src, dst, proto) = match pkt.owner {
        Owner::Flow(f) => {
            let f = f as usize;
            let tcp = spec.is_some_and(|s| s.stack() == Stack::Tcp);
            let (client, proto) = if tcp {
                let conn = Segment::decode(&pkt.payload).map_or(0, |s| s.conn);
                (addr::tcp_client_addr(f, conn), PROTO_TCP)
            } else {
                (addr::client_addr(f), PROTO_UDP)
            };
            let server = addr::server_addr(f);
            if pkt.up {
                (client, server, proto)
            } else {
                (server, client, proto)
            }
        }
        Owner::Cross(c) => {
            let c = c as usize;
            let mut dst = addr::cross_addr(c, !pkt.up);
            dst.set_port(addr::CROSS_PORT);
            (addr::cross_addr(c, pkt.up), dst, PROTO_UDP)
        }
        Owner::Probe { probe, flow } => {
            let (client, server) = addr::probe_addrs(probe as usize, flow as usize);
            if pkt.up {
                (client, server, PROTO_UDP)
            } else {
                (server, client, PROTO_UDP)
            }
        }
    };
    let ((s, sp), (d, dp)) = (v4(src), v4(dst));
    flow_hash(s, d, proto, sp, dp)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Ev {
    Link(u32),
    Timer(u32, u8),
    Cross(u32),
    Probe(u32),
    Sample,
    Mark,
}

/// A scheduled event. Ordered so that the max-heap yields the earliest (time, insertion
/// sequence) first; sequences are unique, so the event itself never takes part in the order.
#[derive(Debug, Clone, Copy)]
struct Due {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.t, self.seq) == (other.t, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.t, other.seq).cmp(&(self.t, self.seq))
    }
}

/// One flow's agent and the engine's own counters for it.
pub(crate) struct FlowSlot {
    /// Flow name from the scenario.
    pub(crate) name: String,
    /// The transport agent (both endpoints, and a middlebox if any).
    pub(crate) agent: Box<dyn FlowAgent>,
    /// The flow as the scenario describes it.
    pub(crate) spec: FlowSpec,
    /// Currently scheduled timer per side (ns), to discard stale heap entries.
    timer: [Option<u64>; 3],
    /// Links from one side to another, indexed `[from][to]` by `Side::index`.
    routes: [[Vec<usize>; 3]; 3],
    /// Transport payload bytes delivered to each side.
    pub(crate) udp_rx: [u64; 3],
    /// Datagrams or segments sent by the client, the server and a middlebox.
    pub(crate) datagrams_sent: [u64; 3],
    /// Side that receives the data.
    pub(crate) receiver: Side,
    last_delivered: u64,
    last_udp_rx: u64,
    /// Application bytes delivered at the measurement window's start and end marks.
    pub(crate) mark_delivered: [Option<u64>; 2],
    /// Receiver payload bytes at the measurement window's start and end marks.
    pub(crate) mark_udp: [Option<u64>; 2],
    /// One-way delay of the packets delivered to `receiver`.
    pub(crate) one_way_delay: DelayHistogram,
    finished: bool,
}

/// One run in progress.
pub struct Sim {
    pub(crate) now: Duration,
    seq: u64,
    /// Pending events. A 4-ary heap: most entries are far-future link wake-ups that a pop
    /// sifts past, and half the levels of a binary heap make each pop cheaper (measured with
    /// callgrind: the event queue was a quarter of the research model's time at 1 Gbit/s).
    events: QuaternaryHeap<Due>,
    pub(crate) links: Vec<Link<Packet>>,
    link_wake: Vec<Option<u64>>,
    pub(crate) flows: Vec<FlowSlot>,
    pub(crate) cross: Vec<CrossSource>,
    pub(crate) probes: Vec<ProbeRun>,
    clock: VirtualClock,
    pub(crate) end: Duration,
    /// `end` in nanoseconds, the unit of the event queue.
    end_ns: u64,
    sample_interval: Duration,
    pub(crate) measure_from: Duration,
    pub(crate) measure_until: Option<Duration>,
    unfinished: usize,
    pub(crate) series: Vec<SeriesRow>,
    record_series: bool,
    pub(crate) pcap: Option<Capture>,
    pub(crate) keylog: Option<KeyLogBuffer>,
    pub(crate) corrupt_header_drops: [u64; 2],
    pub(crate) processed: u64,
    /// Flow sides that received datagrams at the current instant and still have to run.
    pending: Vec<(usize, Side)>,
    /// The batch [`Self::flush_pending`] is running, kept between instants so that neither
    /// vector is reallocated per datagram (taking `pending` left it without capacity, and the
    /// next delivery allocated it again: 0.7% of a 1 Gbit/s quinn run's instructions).
    batch: Vec<(usize, Side)>,
}

fn is_ideal(l: &LinkConfig) -> bool {
    *l == LinkConfig::ideal()
}

impl Sim {
    /// Builds the topology, flows and sources of `scenario` for the run seeded with `seed`.
    pub fn new(scenario: &Scenario, seed: u64, opts: &RunOptions) -> Result<Sim, SimError> {
        check_samples(scenario, opts.series)?;
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
            let routes = routes(cu, cd, su, sd, spec.pep().map(|p| p.position));
            let agent = build_agent(
                spec,
                &scenario.bottleneck,
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
                one_way_delay: DelayHistogram::default(),
                finished: false,
            });
        }
        let cross = scenario
            .cross
            .iter()
            .enumerate()
            .map(|(i, c)| CrossSource::new(c.clone(), sub_seed(seed, SEED_CROSS + i as u64)))
            .collect();
        let probes = scenario.probes.iter().cloned().map(ProbeRun::new).collect();
        let pcap = opts.pcap.as_deref().map(Capture::create).transpose()?;
        let n_links = links.len();
        let unfinished = flows.len();
        Ok(Sim {
            now: Duration::ZERO,
            seq: 0,
            events: QuaternaryHeap::new(),
            links,
            link_wake: vec![None; n_links],
            flows,
            cross,
            probes,
            clock,
            end: scenario.duration,
            end_ns: scenario.duration.as_nanos() as u64,
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
            pending: Vec::new(),
            batch: Vec::new(),
        })
    }

    pub(crate) fn push(&mut self, t: Duration, ev: Ev) -> u64 {
        let ns = t.max(self.now).as_nanos() as u64;
        self.seq += 1;
        // An entry after the run's end is never processed nor counted (`run` stops at the
        // first one), so it need not be queued. Most such entries are idle-timer deadlines,
        // re-armed on every packet: kept, they made the heap several levels deep for a few
        // live events (the caller still records the deadline, so its stale-entry logic is
        // unchanged).
        if ns <= self.end_ns {
            self.events.push(Due {
                t: ns,
                seq: self.seq,
                ev,
            });
        }
        ns
    }

    /// Runs to the end and returns the measurement (the run's identity is left empty: the
    /// caller attaches it, see [`crate::run`]).
    pub fn run(mut self) -> Result<Run, SimError> {
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
        for p in 0..self.probes.len() {
            if let Some(t) = self.probes[p].next_time(self.end) {
                self.push(t, Ev::Probe(p as u32));
            }
        }
        if !self.sample_interval.is_zero() {
            self.push(self.sample_interval, Ev::Sample);
        }
        self.push(self.measure_from, Ev::Mark);
        if let Some(u) = self.measure_until {
            self.push(u, Ev::Mark);
        }
        let end_ns = self.end_ns;
        while let Some(Due { t, ev, .. }) = self.events.pop() {
            if t > end_ns {
                break;
            }
            self.now = Duration::from_nanos(t);
            self.processed += 1;
            self.dispatch(ev, t);
            if self.events.peek().is_none_or(|next| next.t != t) {
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
        self.finish(end)
    }

    fn dispatch(&mut self, ev: Ev, t: u64) {
        match ev {
            Ev::Link(l) => self.on_link(l as usize, t),
            Ev::Timer(f, s) => self.on_timer(f as usize, Side::ALL[usize::from(s) % 3], t),
            Ev::Cross(c) => self.on_cross(c as usize),
            Ev::Probe(p) => self.on_probe(p as usize),
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
            pkt.ecn = d.ecn;
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
                    Owner::Cross(_) | Owner::Probe { .. } => false,
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
    pub(crate) fn forward(&mut self, pkt: Packet) {
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
            Owner::Probe { probe, flow } => {
                let route = &self.flows[flow as usize].routes[pkt.from.index()][pkt.to.index()];
                if let Some(&l) = route.get(usize::from(pkt.hop)) {
                    self.enqueue(l, pkt);
                } else {
                    self.deliver_probe(probe as usize, pkt);
                }
            }
        }
    }

    fn enqueue(&mut self, l: usize, pkt: Packet) {
        if let Some(cap) = self
            .pcap
            .as_mut()
            .filter(|_| l == BOTTLENECK_UP || l == BOTTLENECK_DOWN)
        {
            let flow = match pkt.owner {
                Owner::Flow(f) => Some(&self.flows[f as usize].spec),
                Owner::Cross(_) | Owner::Probe { .. } => None,
            };
            cap.packet(self.now, &pkt, flow);
        }
        let spec = match pkt.owner {
            Owner::Flow(f) => Some(&self.flows[f as usize].spec),
            Owner::Cross(_) | Owner::Probe { .. } => None,
        };
        let meta = PacketMeta {
            ip_bytes: pkt.wire_len,
            flow: flow_of(&pkt, spec),
            ecn: pkt.ecn,
        };
        let _ = self.links[l].enqueue_packet(self.now, meta, pkt);
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
        if side == self.flows[f].receiver {
            let delay = self.now.saturating_sub(pkt.sent_at);
            self.flows[f].one_way_delay.record(delay);
        }
        self.clock.set(self.now);
        self.flows[f]
            .agent
            .handle_datagram_ecn(side, pkt.from, self.now, pkt.payload, pkt.ecn);
        if !self.pending.contains(&(f, side)) {
            self.pending.push((f, side));
        }
    }

    /// Lets every side that received datagrams at this instant react, once per batch. Their
    /// transmissions may cause further same-instant deliveries (ideal links), hence the loop.
    fn flush_pending(&mut self) {
        while !self.pending.is_empty() {
            let mut batch = std::mem::take(&mut self.batch);
            std::mem::swap(&mut batch, &mut self.pending);
            for &(f, side) in &batch {
                self.after_agent(f, side);
            }
            batch.clear();
            self.batch = batch;
            // Zero-delay deliveries land in the heap at `now`; handle them before moving on.
            let t = self.now.as_nanos() as u64;
            while self.events.peek().is_some_and(|next| next.t == t) {
                let Some(Due { ev, .. }) = self.events.pop() else {
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
                ecn: t.ecn,
                sent_at: self.now,
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
                ecn: Ecn::NotEct,
                sent_at: self.now,
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
        // Per bottleneck direction: the capacity over the bin and the queue delays of the
        // packets that left the queue in it (taken only when recorded: the window is a
        // running accumulation).
        let bin = self.now.saturating_sub(self.sample_interval);
        let mut bottleneck = [(None, None, None); 2];
        if self.record_series {
            for (i, l) in [BOTTLENECK_UP, BOTTLENECK_DOWN].into_iter().enumerate() {
                let link = &mut self.links[l];
                let w = link.take_queue_delays(self.now);
                let ms = |s: Option<f64>| s.map(|s| s * 1e3);
                bottleneck[i] = (link.mean_rate(bin, self.now), ms(w.mean_s()), ms(w.max_s()));
            }
        }
        let [(cap_up, delay_up_mean, delay_up_max), (cap_down, delay_down_mean, delay_down_max)] =
            bottleneck;
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
                    capacity_up_bps: cap_up,
                    capacity_down_bps: cap_down,
                    queue_delay_up_mean_ms: delay_up_mean,
                    queue_delay_up_max_ms: delay_up_max,
                    queue_delay_down_mean_ms: delay_down_mean,
                    queue_delay_down_max_ms: delay_down_max,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::builder::{dumbbell, flow, newreno_exact};

    fn sim(duration: Duration) -> Sim {
        let f = flow("b", Workload::Bulk { upload: false }, 1500, newreno_exact());
        let s = dumbbell(10_000_000, Duration::from_millis(10), 20, vec![f], duration);
        Sim::new(&s, 1, &RunOptions::default()).expect("sim")
    }

    /// Entries after the run's end would only deepen the heap (they are never popped), but
    /// their deadline is still returned so callers can tell stale entries apart.
    #[test]
    fn events_after_the_end_are_not_queued() {
        let mut s = sim(Duration::from_secs(1));
        assert_eq!(
            s.push(Duration::from_secs(2), Ev::Sample),
            2_000_000_000,
            "the deadline is returned"
        );
        assert_eq!(s.events.len(), 0, "an entry after the end was queued");
        s.push(Duration::from_secs(1), Ev::Sample);
        assert_eq!(s.events.len(), 1, "an entry at the end must be queued");
    }

    /// A flow's agent whose packets are sent ECT(0), recording the codepoint of each datagram
    /// it receives (no stack sets ECT yet; this one stands in for one that does).
    struct EctAgent {
        inner: Box<dyn FlowAgent>,
        received: std::rc::Rc<std::cell::RefCell<Vec<(Side, Ecn)>>>,
    }

    impl FlowAgent for EctAgent {
        fn handle_datagram_ecn(
            &mut self,
            side: Side,
            from: Side,
            now: Duration,
            payload: Vec<u8>,
            ecn: Ecn,
        ) {
            self.received.borrow_mut().push((side, ecn));
            self.inner.handle_datagram(side, from, now, payload);
        }
        fn handle_timeout(&mut self, side: Side, now: Duration) {
            self.inner.handle_timeout(side, now);
        }
        fn poll_transmit(
            &mut self,
            side: Side,
            now: Duration,
        ) -> Option<transport::agent::Transmit> {
            self.inner.poll_transmit(side, now).map(|mut t| {
                t.ecn = Ecn::Ect0;
                t
            })
        }
        fn poll_timeout(&mut self, side: Side) -> Option<Duration> {
            self.inner.poll_timeout(side)
        }
        fn delivered_bytes(&self) -> u64 {
            self.inner.delivered_bytes()
        }
        fn sample(&self) -> transport::agent::SenderSample {
            self.inner.sample()
        }
        fn is_finished(&self) -> bool {
            self.inner.is_finished()
        }
        fn report(&self) -> transport::agent::FlowReport {
            self.inner.report()
        }
    }

    /// CoDel with ECN marks the ECT packets of a download instead of dropping them, and each
    /// mark reaches the receiving agent as CE with its datagram; the sender's ECT(0) arrives
    /// unchanged on unmarked packets.
    #[test]
    fn ce_marks_reach_the_receiving_agent() {
        let f = flow("b", Workload::Bulk { upload: false }, 1500, newreno_exact());
        let mut s = dumbbell(
            10_000_000,
            Duration::from_millis(10),
            20,
            vec![f],
            Duration::from_secs(3),
        );
        s.bottleneck.down.qdisc = netem::QdiscConfig::Codel(netem::qdisc::CodelConfig {
            ecn: true,
            ..Default::default()
        });
        let mut sim = Sim::new(&s, 1, &RunOptions::default()).expect("sim");
        let received = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let inner = std::mem::replace(&mut sim.flows[0].agent, sim_placeholder());
        sim.flows[0].agent = Box::new(EctAgent {
            inner,
            received: received.clone(),
        });
        let run = sim.run().expect("run");
        let down = &run.links["bottleneck_down"];
        assert!(down.ce_marked_packets > 0, "{down:?}");
        assert_eq!(
            down.aqm_dropped_packets, 0,
            "ECT packets are marked, not dropped"
        );
        let got = received.borrow();
        let ce = got
            .iter()
            .filter(|(side, e)| *side == Side::Client && *e == Ecn::Ce)
            .count();
        // Every mark reaches the client, but for the few packets still in flight at the end.
        let marked = down.ce_marked_packets;
        assert!(
            ce as u64 <= marked && ce as u64 >= marked * 9 / 10,
            "{ce} CE datagrams received of {marked} marked"
        );
        assert!(
            got.iter().any(|(_, e)| *e == Ecn::Ect0),
            "unmarked packets keep ECT(0)"
        );
        assert!(got.iter().all(|(_, e)| *e != Ecn::NotEct));
    }

    /// A finished agent that does nothing, to swap the real one out of its slot.
    fn sim_placeholder() -> Box<dyn FlowAgent> {
        struct Idle;
        impl FlowAgent for Idle {
            fn handle_datagram_ecn(&mut self, _: Side, _: Side, _: Duration, _: Vec<u8>, _: Ecn) {}
            fn handle_timeout(&mut self, _: Side, _: Duration) {}
            fn poll_transmit(
                &mut self,
                _: Side,
                _: Duration,
            ) -> Option<transport::agent::Transmit> {
                None
            }
            fn poll_timeout(&mut self, _: Side) -> Option<Duration> {
                None
            }
            fn delivered_bytes(&self) -> u64 {
                0
            }
            fn sample(&self) -> transport::agent::SenderSample {
                transport::agent::SenderSample::default()
            }
            fn is_finished(&self) -> bool {
                true
            }
            fn report(&self) -> transport::agent::FlowReport {
                transport::agent::FlowReport::default()
            }
        }
        Box::new(Idle)
    }
}
