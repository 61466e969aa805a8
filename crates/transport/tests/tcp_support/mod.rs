//! A tiny deterministic network for driving a `TcpFlow` in tests: one FIFO link per direction
//! with a rate and a fixed propagation delay, no queue limit, and a hook that drops chosen
//! segments. It calls the agent the way the engine does: every same-instant arrival, then
//! timers that are due, then `poll_transmit` until `None`.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use transport::agent::{FlowAgent, FlowReport, Side};
use transport::tcp::segment::Segment;
use transport::tcp::{TcpFlow, TcpFlowConfig, TcpWorkload, Tls};

/// Direction of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Client → server.
    Up,
    /// Server → client.
    Down,
}

/// What the drop hook sees about a segment.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// Direction.
    pub dir: Dir,
    /// Index among segments with data in this direction (data segments only), from 0.
    pub data_index: Option<u64>,
    /// Index among all segments in this direction, from 0.
    pub index: u64,
    /// The decoded header.
    pub seg: Segment,
}

/// The test network.
pub struct Net {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Link rate in bit/s (both directions).
    pub rate_bps: u64,
    busy: [Duration; 2],
    queue: [VecDeque<(Duration, Vec<u8>)>; 2],
    counts: [u64; 2],
    data_counts: [u64; 2],
    /// Returns true to drop a segment.
    pub drop: Box<dyn FnMut(&Seen) -> bool>,
    /// Segments dropped by the hook.
    pub dropped: u64,
    /// Largest number of segments queued in one direction.
    pub max_queue: usize,
    chaos: Option<Chaos>,
}

/// Seeded random loss, duplication and reordering (extra delay) in both directions.
struct Chaos {
    rng: ChaCha8Rng,
    loss: f64,
    duplicate: f64,
    jitter: Duration,
}

impl Net {
    /// A clean path.
    pub fn new(rate_bps: u64, one_way: Duration) -> Net {
        Net {
            delay: one_way,
            rate_bps,
            busy: [Duration::ZERO; 2],
            queue: [VecDeque::new(), VecDeque::new()],
            counts: [0; 2],
            data_counts: [0; 2],
            drop: Box::new(|_| false),
            dropped: 0,
            max_queue: 0,
            chaos: None,
        }
    }

    /// The same path with seeded random loss, duplication and up to `jitter` of extra delay
    /// (which reorders segments).
    pub fn chaotic(mut self, seed: u64, loss: f64, duplicate: f64, jitter: Duration) -> Net {
        self.chaos = Some(Chaos { rng: ChaCha8Rng::seed_from_u64(seed), loss, duplicate, jitter });
        self
    }

    fn enqueue(&mut self, d: usize, at: Duration, bytes: Vec<u8>) {
        let q = &mut self.queue[d];
        let i = q.partition_point(|(t, _)| *t <= at);
        q.insert(i, (at, bytes));
        self.max_queue = self.max_queue.max(q.len());
    }

    /// The same path dropping what `f` selects.
    pub fn dropping(mut self, f: impl FnMut(&Seen) -> bool + 'static) -> Net {
        self.drop = Box::new(f);
        self
    }

    fn send(&mut self, side: Side, now: Duration, bytes: Vec<u8>, wire_len: u32) {
        let (dir, d) = match side {
            Side::Client => (Dir::Up, 0),
            Side::Server => (Dir::Down, 1),
            Side::Middle => unreachable!("this test network has no middlebox"),
        };
        let index = self.counts[d];
        self.counts[d] += 1;
        let seg = Segment::decode(&bytes).expect("the model emits valid segments");
        let data_index = (seg.len > 0).then(|| {
            self.data_counts[d] += 1;
            self.data_counts[d] - 1
        });
        let start = now.max(self.busy[d]);
        let tx = Duration::from_nanos(u64::from(wire_len) * 8 * 1_000_000_000 / self.rate_bps);
        self.busy[d] = start + tx;
        if (self.drop)(&Seen { dir, data_index, index, seg }) {
            self.dropped += 1;
            return;
        }
        let mut at = start + tx + self.delay;
        if let Some(c) = self.chaos.as_mut() {
            if c.rng.random_bool(c.loss) {
                self.dropped += 1;
                return;
            }
            let jitter = c.jitter.mul_f64(c.rng.random::<f64>());
            if c.rng.random_bool(c.duplicate) {
                let again = at + c.jitter.mul_f64(c.rng.random::<f64>());
                self.enqueue(d, again, bytes.clone());
            }
            at += jitter;
        }
        self.enqueue(d, at, bytes);
    }

    /// Runs until the flow finishes or `until`; returns the final virtual time.
    pub fn run(&mut self, flow: &mut TcpFlow, until: Duration) -> Duration {
        let mut now = Duration::ZERO;
        loop {
            let mut next: Option<Duration> = None;
            for q in &self.queue {
                if let Some(&(t, _)) = q.front() {
                    next = Some(next.map_or(t, |n: Duration| n.min(t)));
                }
            }
            for side in [Side::Client, Side::Server] {
                if let Some(t) = flow.poll_timeout(side) {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
            let Some(t) = next else { return now };
            if t > until {
                return now;
            }
            now = t.max(now);
            for (d, side) in [(0, Side::Server), (1, Side::Client)] {
                while self.queue[d].front().is_some_and(|(t, _)| *t <= now) {
                    let Some((_, bytes)) = self.queue[d].pop_front() else { break };
                    flow.handle_datagram(side, side.opposite(), now, bytes);
                }
            }
            for side in [Side::Client, Side::Server] {
                if flow.poll_timeout(side).is_some_and(|t| t <= now) {
                    flow.handle_timeout(side, now);
                }
            }
            for side in [Side::Client, Side::Server] {
                while let Some(tx) = flow.poll_transmit(side, now) {
                    self.send(side, now, tx.bytes, tx.wire_len);
                }
            }
            if flow.is_finished() {
                return now;
            }
        }
    }
}

/// Linux-like defaults: CUBIC without HyStart, SACK, timestamps, delayed ACK.
pub fn config(workload: TcpWorkload) -> TcpFlowConfig {
    TcpFlowConfig {
        name: "test".into(),
        workload,
        start: Duration::ZERO,
        stop: None,
        controller: cc::config::CcConfig::Cubic {
            hystart: false,
            common: cc::config::CommonCcConfig {
                initial_window_packets: 10,
                loss_reduction_factor: 0.7,
                minimum_window_packets: 2,
            },
        },
        mtu: 1500,
        tls: Tls::None,
        sack: true,
        timestamps: true,
        delayed_ack: true,
        delayed_ack_timeout: Duration::from_millis(40),
        receive_window_max: 6 << 20,
        initial_receive_window: 64 * 1024,
        send_buffer: 4 << 20,
        min_rto: Duration::from_millis(200),
        initial_rto: Duration::from_secs(1),
        pep: None,
    }
}

/// A download of `size` bytes over one stream and one connection.
pub fn download(size: u64) -> TcpWorkload {
    TcpWorkload::Download { size, streams: 1, connections: 1 }
}

/// Builds the flow and runs it on `net` for at most `until`.
pub fn run(cfg: TcpFlowConfig, net: &mut Net, until: Duration) -> (TcpFlow, FlowReport) {
    let mut flow = TcpFlow::new(cfg).expect("valid config");
    net.run(&mut flow, until);
    let r = flow.report();
    (flow, r)
}

/// Milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
