//! A tiny deterministic network for driving a `QuicModelFlow` in tests: one link with a rate
//! and a propagation delay per direction, an optional drop-tail queue, and a hook that drops
//! chosen datagrams. It calls the agent the way the engine does: every same-instant arrival,
//! then timers that are due, then `poll_transmit` until `None`.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::time::Duration;

use transport::agent::{FlowAgent, FlowReport, Side};
use transport::cc_adapter::CcChoice;
use transport::flow::FlowPlan;
use transport::quicmodel::wire::{decode, DatagramHeader, Frame, PacketHeader};
use transport::quicmodel::{QuicModelFlow, QuicModelFlowConfig, QuicModelKnobs};
use transport::workload::Workload;

/// Direction of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Client → server.
    Up,
    /// Server → client.
    Down,
}

/// What the drop hook and the trace see of a datagram.
#[derive(Debug, Clone)]
pub struct Seen {
    /// When it entered the link.
    pub at: Duration,
    /// Direction.
    pub dir: Dir,
    /// Index among datagrams carrying STREAM frames in this direction, from 0.
    pub data_index: Option<u64>,
    /// Index among all datagrams in this direction, from 0.
    pub index: u64,
    /// IP bytes on the wire.
    pub wire_len: u32,
    /// When it reaches the peer (None: dropped).
    pub arrival: Option<Duration>,
    /// Datagram header.
    pub header: DatagramHeader,
    /// Packets and frames.
    pub packets: Vec<(PacketHeader, Vec<Frame>)>,
}

impl Seen {
    /// Whether any packet carries a STREAM frame.
    pub fn has_stream(&self) -> bool {
        self.packets
            .iter()
            .any(|(_, f)| f.iter().any(|f| matches!(f, Frame::Stream { .. })))
    }
}

type InFlight = (Duration, Side, Vec<u8>);

/// The test network.
pub struct Net {
    delay: Duration,
    rate_bps: u64,
    busy: [Duration; 2],
    queue: [VecDeque<InFlight>; 2],
    /// Serializer backlog limit in packets per direction (None: unlimited).
    pub limit: Option<usize>,
    backlog: [VecDeque<Duration>; 2],
    counts: [u64; 2],
    data_counts: [u64; 2],
    /// Returns true to drop a datagram.
    pub drop: Box<dyn FnMut(&Seen) -> bool>,
    /// Datagrams dropped by the hook or the queue.
    pub dropped: u64,
    /// Every datagram that entered the link, when tracing.
    pub trace: Option<Vec<Seen>>,
    /// Datagrams delivered.
    pub delivered: u64,
    /// Decode datagrams for the hook and the trace (off for speed measurements).
    inspect: bool,
}

impl Net {
    /// A clean path.
    pub fn new(rate_bps: u64, one_way: Duration) -> Net {
        Net {
            delay: one_way,
            rate_bps,
            busy: [Duration::ZERO; 2],
            queue: [VecDeque::new(), VecDeque::new()],
            limit: None,
            backlog: [VecDeque::new(), VecDeque::new()],
            counts: [0; 2],
            data_counts: [0; 2],
            drop: Box::new(|_| false),
            dropped: 0,
            trace: None,
            delivered: 0,
            inspect: false,
        }
    }

    /// Drops what `f` selects.
    pub fn dropping(mut self, f: impl FnMut(&Seen) -> bool + 'static) -> Net {
        self.drop = Box::new(f);
        self.inspect = true;
        self
    }

    /// Records every datagram.
    pub fn traced(mut self) -> Net {
        self.trace = Some(Vec::new());
        self.inspect = true;
        self
    }

    /// A drop-tail queue of `n` packets in each direction.
    pub fn queue_limit(mut self, n: usize) -> Net {
        self.limit = Some(n);
        self
    }

    fn send(&mut self, from: Side, now: Duration, bytes: Vec<u8>, wire_len: u32) {
        let d = if from == Side::Client { 0 } else { 1 };
        if !self.inspect {
            self.forward(d, now, from, bytes, wire_len, false);
            return;
        }
        let dir = if d == 0 { Dir::Up } else { Dir::Down };
        let (header, packets) = decode(&bytes).expect("the model emits valid datagrams");
        let index = self.counts[d];
        self.counts[d] += 1;
        let mut seen = Seen {
            at: now,
            dir,
            data_index: None,
            index,
            wire_len,
            arrival: None,
            header,
            packets,
        };
        if seen.has_stream() {
            seen.data_index = Some(self.data_counts[d]);
            self.data_counts[d] += 1;
        }
        let drop = (self.drop)(&seen);
        let at = self.forward(d, now, from, bytes, wire_len, drop);
        seen.arrival = at;
        if let Some(t) = self.trace.as_mut() {
            t.push(seen);
        }
    }

    /// Queues a datagram unless dropped; returns its arrival time.
    fn forward(
        &mut self,
        d: usize,
        now: Duration,
        from: Side,
        bytes: Vec<u8>,
        wire_len: u32,
        mut drop: bool,
    ) -> Option<Duration> {
        if let Some(limit) = self.limit.filter(|_| !drop) {
            let b = &mut self.backlog[d];
            while b.front().is_some_and(|&t| t <= now) {
                b.pop_front();
            }
            drop = b.len() >= limit;
        }
        let start = now.max(self.busy[d]);
        let tx = Duration::from_nanos(u64::from(wire_len) * 8 * 1_000_000_000 / self.rate_bps);
        let at = start + tx + self.delay;
        if drop {
            self.dropped += 1;
            return None;
        }
        self.busy[d] = start + tx;
        self.backlog[d].push_back(start + tx);
        let to = from.opposite();
        self.queue[d].push_back((at, to, bytes));
        Some(at)
    }

    /// Runs until the flow finishes or `until`; returns the final virtual time.
    pub fn run(&mut self, flow: &mut QuicModelFlow, until: Duration) -> Duration {
        let mut now = Duration::ZERO;
        let sides = [Side::Client, Side::Server];
        loop {
            let mut next: Option<Duration> = None;
            let mut consider = |t: Duration| next = Some(next.map_or(t, |n: Duration| n.min(t)));
            for q in &self.queue {
                if let Some(&(t, ..)) = q.front() {
                    consider(t);
                }
            }
            for &side in &sides {
                if let Some(t) = flow.poll_timeout(side) {
                    consider(t);
                }
            }
            let Some(t) = next else { return now };
            if t > until {
                return now;
            }
            now = t.max(now);
            for d in 0..2 {
                while self.queue[d].front().is_some_and(|(t, ..)| *t <= now) {
                    let Some((_, to, bytes)) = self.queue[d].pop_front() else {
                        break;
                    };
                    self.delivered += 1;
                    flow.handle_datagram(to, to.opposite(), now, bytes);
                }
            }
            for &side in &sides {
                if flow.poll_timeout(side).is_some_and(|t| t <= now) {
                    flow.handle_timeout(side, now);
                }
            }
            for &side in &sides {
                while let Some(tx) = flow.poll_transmit(side, now) {
                    assert_eq!(tx.to, side.opposite());
                    self.send(side, now, tx.bytes, tx.wire_len);
                }
            }
            if flow.is_finished() {
                return now;
            }
        }
    }

    /// The recorded datagrams in `dir`.
    pub fn seen(&self, dir: Dir) -> Vec<&Seen> {
        let trace = self.trace.as_ref().expect("a traced net");
        trace.iter().filter(|s| s.dir == dir).collect()
    }
}

/// NewReno with exact counting, IW 10, β 0.5.
pub fn newreno() -> congestion::config::CcConfig {
    congestion::config::CcConfig::NewReno {
        counting: congestion::config::RenoCounting::Exact,
        common: congestion::config::CommonCcConfig {
            initial_window_packets: 10,
            loss_reduction_factor: 0.5,
            minimum_window_packets: 2,
        },
    }
}

/// A flow config with quinn's defaults and NewReno.
pub fn config(workload: Workload) -> QuicModelFlowConfig {
    QuicModelFlowConfig {
        plan: FlowPlan {
            name: "test".into(),
            workload,
            start: Duration::ZERO,
            stop: None,
            cc: CcChoice::Ours(newreno()),
        },
        knobs: QuicModelKnobs::default(),
        seed: 0,
        qlog_dir: None,
    }
}

/// A bulk upload stopping at `stop`.
pub fn bulk(stop: Duration) -> QuicModelFlowConfig {
    let mut c = config(Workload::Bulk { upload: true });
    c.plan.stop = Some(stop);
    c
}

/// A download of `size` bytes over `streams` streams, `connections` times.
pub fn download(size: u64, streams: u32, connections: u32) -> Workload {
    Workload::Download {
        size,
        streams,
        connections,
    }
}

/// Builds the flow and runs it on `net` for at most `until`.
pub fn run(
    cfg: QuicModelFlowConfig,
    net: &mut Net,
    until: Duration,
) -> (QuicModelFlow, FlowReport) {
    let mut flow = QuicModelFlow::new(cfg).expect("valid config");
    net.run(&mut flow, until);
    let r = flow.report();
    (flow, r)
}

/// Milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
