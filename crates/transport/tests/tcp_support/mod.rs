//! A tiny deterministic network for driving a `TcpFlow` in tests: a line of links (client —
//! server, or client — middle — server), each a FIFO per direction with a rate and a fixed
//! propagation delay, no queue limit, and a hook that drops chosen segments. The middle node
//! is the PEP when the flow has one, and a plain store-and-forward router otherwise, so the
//! same path serves both. It calls the agent the way the engine does: every same-instant
//! arrival, then timers that are due, then `poll_transmit` until `None`; it panics if a
//! segment is addressed to a side that should not get it.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use transport::agent::{FlowAgent, FlowReport, Side};
use transport::cc_adapter::CcChoice;
use transport::flow::FlowPlan;
use transport::tcp::segment::Segment;
use transport::tcp::{PepSpec, TcpFlow, TcpFlowConfig, TcpKnobs, TlsMode};
use transport::workload::Workload;

/// Direction of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Towards the server.
    Up,
    /// Towards the client.
    Down,
}

/// What the drop hook sees about a segment entering a link.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// The link: 0 next to the client, 1 next to the server (a one-link path has only 0).
    pub link: usize,
    /// Direction.
    pub dir: Dir,
    /// Index among segments with data on this link in this direction, from 0.
    pub data_index: Option<u64>,
    /// Index among all segments on this link in this direction, from 0.
    pub index: u64,
    /// The decoded header.
    pub seg: Segment,
}

/// A segment on a link: (arrival time, sender, addressee, bytes).
type InFlight = (Duration, Side, Side, Vec<u8>);

/// One link of the line: a FIFO per direction (0 up, 1 down).
struct Link {
    delay: Duration,
    rate_bps: u64,
    busy: [Duration; 2],
    queue: [VecDeque<InFlight>; 2],
    counts: [u64; 2],
    data_counts: [u64; 2],
}

impl Link {
    fn new(rate_bps: u64, delay: Duration) -> Link {
        Link {
            delay,
            rate_bps,
            busy: [Duration::ZERO; 2],
            queue: [VecDeque::new(), VecDeque::new()],
            counts: [0; 2],
            data_counts: [0; 2],
        }
    }
}

/// The test network.
pub struct Net {
    links: Vec<Link>,
    /// Returns true to drop a segment.
    pub drop: Box<dyn FnMut(&Seen) -> bool>,
    /// Segments dropped by the hook or by chaos.
    pub dropped: u64,
    /// Largest number of segments queued in one direction of one link.
    pub max_queue: usize,
    /// Every segment that entered a link, with the time, when `Some`.
    pub trace: Option<Vec<(Duration, Seen)>>,
    /// Keep running after the flow finishes, until nothing is left to do (closing handshakes).
    pub until_idle: bool,
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
    /// A clean client — server path.
    pub fn new(rate_bps: u64, one_way: Duration) -> Net {
        Net::line(vec![Link::new(rate_bps, one_way)])
    }

    /// A clean client — middle — server path, both links at `rate_bps`.
    pub fn split(rate_bps: u64, client_one_way: Duration, server_one_way: Duration) -> Net {
        Net::line(vec![
            Link::new(rate_bps, client_one_way),
            Link::new(rate_bps, server_one_way),
        ])
    }

    fn line(links: Vec<Link>) -> Net {
        Net {
            links,
            drop: Box::new(|_| false),
            dropped: 0,
            max_queue: 0,
            trace: None,
            until_idle: false,
            chaos: None,
        }
    }

    /// The same path with seeded random loss, duplication and up to `jitter` of extra delay
    /// (which reorders segments) on every link.
    pub fn chaotic(mut self, seed: u64, loss: f64, duplicate: f64, jitter: Duration) -> Net {
        self.chaos = Some(Chaos {
            rng: ChaCha8Rng::seed_from_u64(seed),
            loss,
            duplicate,
            jitter,
        });
        self
    }

    /// The same path dropping what `f` selects.
    pub fn dropping(mut self, f: impl FnMut(&Seen) -> bool + 'static) -> Net {
        self.drop = Box::new(f);
        self
    }

    /// The same path recording every segment in `trace`.
    pub fn traced(mut self) -> Net {
        self.trace = Some(Vec::new());
        self
    }

    fn has_middle(&self) -> bool {
        self.links.len() == 2
    }

    /// Position on the line: client 0, middle 1, server 2 (or 1 without a middle).
    fn pos(&self, side: Side) -> usize {
        match side {
            Side::Client => 0,
            Side::Middle => 1,
            Side::Server => self.links.len(),
        }
    }

    fn enqueue(&mut self, l: usize, d: usize, at: Duration, from: Side, to: Side, bytes: Vec<u8>) {
        let q = &mut self.links[l].queue[d];
        let i = q.partition_point(|(t, ..)| *t <= at);
        q.insert(i, (at, from, to, bytes));
        self.max_queue = self.max_queue.max(q.len());
    }

    /// Puts a segment at `at_pos` on the link towards `to`.
    fn hop(&mut self, at_pos: usize, now: Duration, from: Side, to: Side, bytes: Vec<u8>) {
        let (l, d, dir) = if self.pos(to) > at_pos {
            (at_pos, 0, Dir::Up)
        } else {
            (at_pos - 1, 1, Dir::Down)
        };
        let seg = Segment::decode(&bytes).expect("the model emits valid segments");
        let link = &mut self.links[l];
        let index = link.counts[d];
        link.counts[d] += 1;
        let data_index = (seg.len > 0).then(|| {
            link.data_counts[d] += 1;
            link.data_counts[d] - 1
        });
        let wire_len = seg.header_wire_len() + seg.len;
        let start = now.max(link.busy[d]);
        let tx = Duration::from_nanos(u64::from(wire_len) * 8 * 1_000_000_000 / link.rate_bps);
        link.busy[d] = start + tx;
        let mut at = start + tx + link.delay;
        let seen = Seen {
            link: l,
            dir,
            data_index,
            index,
            seg,
        };
        if let Some(t) = self.trace.as_mut() {
            t.push((now, seen));
        }
        if (self.drop)(&seen) {
            self.dropped += 1;
            return;
        }
        if let Some(c) = self.chaos.as_mut() {
            if c.rng.random_bool(c.loss) {
                self.dropped += 1;
                return;
            }
            let jitter = c.jitter.mul_f64(c.rng.random::<f64>());
            if c.rng.random_bool(c.duplicate) {
                let again = at + c.jitter.mul_f64(c.rng.random::<f64>());
                self.enqueue(l, d, again, from, to, bytes.clone());
            }
            at += jitter;
        }
        self.enqueue(l, d, at, from, to, bytes);
    }

    /// Checks the addressee the flow chose, then sends.
    fn send(&mut self, pep: bool, from: Side, to: Side, now: Duration, bytes: Vec<u8>) {
        let ok = match (pep, from) {
            (true, Side::Middle) => to != Side::Middle,
            (true, _) => to == Side::Middle,
            (false, Side::Middle) => false,
            (false, _) => to == from.opposite(),
        };
        assert!(ok, "{from:?} addressed a segment to {to:?} (PEP: {pep})");
        assert!(
            !pep || self.has_middle(),
            "a PEP flow needs a path with a middle node"
        );
        let at = self.pos(from);
        self.hop(at, now, from, to, bytes);
    }

    fn sides(&self) -> &'static [Side] {
        if self.has_middle() {
            &[Side::Client, Side::Server, Side::Middle]
        } else {
            &[Side::Client, Side::Server]
        }
    }

    /// Runs until the flow finishes (or, with `until_idle`, nothing is left to do) or
    /// `until`; returns the final virtual time.
    pub fn run(&mut self, flow: &mut TcpFlow, until: Duration) -> Duration {
        let pep = flow.has_pep();
        let mut now = Duration::ZERO;
        loop {
            let mut next: Option<Duration> = None;
            let mut consider = |t: Duration| next = Some(next.map_or(t, |n: Duration| n.min(t)));
            for link in &self.links {
                for q in &link.queue {
                    if let Some(&(t, ..)) = q.front() {
                        consider(t);
                    }
                }
            }
            for &side in self.sides() {
                if let Some(t) = flow.poll_timeout(side) {
                    consider(t);
                }
            }
            let Some(t) = next else { return now };
            if t > until {
                return now;
            }
            now = t.max(now);
            for l in 0..self.links.len() {
                for d in 0..2 {
                    while self.links[l].queue[d]
                        .front()
                        .is_some_and(|(t, ..)| *t <= now)
                    {
                        let Some((_, from, to, bytes)) = self.links[l].queue[d].pop_front() else {
                            break;
                        };
                        let here = if d == 0 { l + 1 } else { l };
                        if here == self.pos(to) {
                            flow.handle_datagram(to, from, now, bytes);
                        } else {
                            // The middle node routes what is not addressed to it.
                            self.hop(here, now, from, to, bytes);
                        }
                    }
                }
            }
            for &side in self.sides() {
                if flow.poll_timeout(side).is_some_and(|t| t <= now) {
                    flow.handle_timeout(side, now);
                }
            }
            for &side in self.sides() {
                while let Some(tx) = flow.poll_transmit(side, now) {
                    self.send(pep, side, tx.to, now, tx.bytes);
                }
            }
            if flow.is_finished() && !self.until_idle {
                return now;
            }
        }
    }

    /// The recorded segments on `link` in `dir` (needs [`Net::traced`]).
    pub fn seen(&self, link: usize, dir: Dir) -> Vec<(Duration, Segment)> {
        let trace = self.trace.as_ref().expect("a traced net");
        trace
            .iter()
            .filter(|(_, s)| s.link == link && s.dir == dir)
            .map(|(t, s)| (*t, s.seg))
            .collect()
    }
}

/// Linux's defaults (but plain TCP and a 6 MiB window cap): CUBIC without HyStart, SACK,
/// timestamps, delayed ACK.
pub fn config(workload: Workload) -> TcpFlowConfig {
    TcpFlowConfig {
        plan: FlowPlan {
            name: "test".into(),
            workload,
            start: Duration::ZERO,
            stop: None,
            cc: CcChoice::Ours(cubic(10)),
        },
        knobs: TcpKnobs {
            tls: TlsMode::None,
            receive_window_max: 6 << 20,
            initial_receive_window: 64 * 1024,
            ..TcpKnobs::default()
        },
        pep: None,
        seed: 0,
    }
}

/// CUBIC without HyStart and an initial window of `iw` segments.
pub fn cubic(iw: u64) -> congestion::config::CcConfig {
    congestion::config::CcConfig::Cubic {
        hystart: false,
        profile: congestion::config::CubicProfile::Linux,
        common: congestion::config::CommonCcConfig {
            initial_window_packets: iw,
            loss_reduction_factor: 0.7,
            minimum_window_packets: 2,
        },
    }
}

/// A PEP holding `buffer` bytes per direction, with the flow's defaults otherwise.
pub fn pep(buffer: u64) -> PepSpec {
    PepSpec {
        buffer,
        cc: cubic(10),
        receive_window_max: 6 << 20,
        send_buffer: 4 << 20,
        ..PepSpec::default()
    }
}

/// A download of `size` bytes over one stream and one connection.
pub fn download(size: u64) -> Workload {
    Workload::Download {
        size,
        streams: 1,
        connections: 1,
    }
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
