//! One direction of a link: queue discipline → serializer → wire impairments → delay.
//!
//! The link is lazy: nothing happens between calls, but [`Link::poll`] and [`Link::enqueue`]
//! first replay every serialization that ended before `now`, chaining each queued packet from
//! the exact end of the previous one, and every timer of the queue discipline that fell due
//! before `now` (in time order; a timer due at the instant a serialization ends runs after that
//! dequeue). The results therefore do not depend on when (or how often) the caller polls, only
//! on the arrival times. Timers never need a wakeup of their own: they change no delivery by
//! themselves, only the decisions taken at the next arrival or dequeue.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::blackout::in_blackout;
use crate::config::{Blackout, Jitter, LinkConfig, RateProfile, Reorder};
use crate::loss::LossModel;
use crate::qdisc::{Ecn, Packet, PacketMeta, Qdisc};
use crate::rate::Serializer;
use crate::rng::{stream, streams};
use quantile::DelayHistogram;

use crate::sojourn::DelayWindow;

/// Outcome of offering a packet to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueResult {
    /// The packet is in the queue or already being serialized.
    Accepted,
    /// The queue was full (drop-tail limit, or a discipline's hard limit); the packet is gone.
    DroppedQueueFull,
    /// An active queue management decision dropped the packet on arrival (RED, PIE, DualPI2
    /// with early drop); it is counted in [`LinkStats::aqm_dropped_packets`].
    DroppedAqm,
}

/// A packet leaving the far end of the link.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery<T> {
    /// The caller's packet.
    pub item: T,
    /// Delivery time (may be earlier than the `now` given to `poll`, never later).
    pub at: Duration,
    /// Size the link accounted for.
    pub ip_bytes: u32,
    /// The packet was hit by a bit error; the receiver should see `flip_bit` flipped.
    pub corrupted: bool,
    /// Index of the bit to flip, uniform in `[0, 8·ip_bytes)`; meaningful only if `corrupted`.
    pub flip_bit: u64,
    /// This is the extra copy made by duplication.
    pub duplicate: bool,
    /// The ECN codepoint on arrival: CE if the queue discipline marked it, else as offered.
    pub ecn: Ecn,
    /// Time the packet waited in the queue (from its arrival to the start of its
    /// serialization); zero if it found the serializer idle.
    pub queue_delay: Duration,
}

/// Counters for one link direction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LinkStats {
    /// Packets offered to `enqueue`.
    pub offered_packets: u64,
    /// IP bytes offered to `enqueue`.
    pub offered_bytes: u64,
    /// Packets dropped because the queue was full: the drop-tail limit, a discipline's hard
    /// limit, or FQ-CoDel's overflow drops from its fattest flow.
    pub dropped_queue_packets: u64,
    /// IP bytes of those packets.
    pub dropped_queue_bytes: u64,
    /// Packets dropped by an active queue management decision (RED, CoDel, PIE, DualPI2).
    #[serde(default)]
    pub aqm_dropped_packets: u64,
    /// IP bytes of those packets.
    #[serde(default)]
    pub aqm_dropped_bytes: u64,
    /// Packets the queue discipline marked CE (each packet counted once).
    #[serde(default)]
    pub ce_marked_packets: u64,
    /// IP bytes of those packets.
    #[serde(default)]
    pub ce_marked_bytes: u64,
    /// Packets dropped by the loss model (outside blackouts).
    pub lost_packets: u64,
    /// Packets dropped because they left the serializer during a blackout.
    pub blackout_packets: u64,
    /// Packets delivered with a bit error.
    pub corrupted_packets: u64,
    /// Extra copies created by duplication.
    pub duplicated_packets: u64,
    /// Packets held back so later ones overtake them.
    pub reordered_packets: u64,
    /// Packets returned by `poll` (including corrupted ones and duplicate copies).
    pub forwarded_packets: u64,
    /// IP bytes returned by `poll`.
    pub forwarded_bytes: u64,
    /// Total time the serializer spent transmitting (finished packets only), for utilisation.
    pub busy_time: Duration,
    /// Most packets ever waiting in the queue.
    pub max_queue_packets: u64,
    /// Most IP bytes ever waiting in the queue.
    pub max_queue_bytes: u64,
    /// Queue delay (arrival to start of serialization) of every packet `poll` returned, a
    /// duplicate copy counted once: delay under load, in bounded memory.
    #[serde(default)]
    pub queue_delay: DelayHistogram,
}

impl LinkStats {
    /// These counters as the results schema's link, for a run that lasted `end_s` seconds, with
    /// the engine's count of packets whose bit error hit a header (`corrupt_header_drops`: the
    /// receiving host's checksum drops them, which the link itself does not see).
    ///
    /// It lives here, beside the counters, because both engines convert the same counters:
    /// `results` is serde-only and cannot know netem, and netem depending on that schema crate
    /// is a downward arrow that adds no I/O and nothing beyond serde.
    pub fn to_result(&self, end_s: f64, corrupt_header_drops: u64) -> results::Link {
        let busy_time_s = self.busy_time.as_secs_f64();
        let delay = self.queue_delay.summary();
        results::Link {
            offered_packets: self.offered_packets,
            offered_bytes: self.offered_bytes,
            dropped_queue_packets: self.dropped_queue_packets,
            dropped_queue_bytes: self.dropped_queue_bytes,
            lost_packets: self.lost_packets,
            blackout_packets: self.blackout_packets,
            corrupted_packets: self.corrupted_packets,
            duplicated_packets: self.duplicated_packets,
            reordered_packets: self.reordered_packets,
            forwarded_packets: self.forwarded_packets,
            forwarded_bytes: self.forwarded_bytes,
            busy_time_s,
            max_queue_packets: self.max_queue_packets,
            max_queue_bytes: self.max_queue_bytes,
            utilisation: results::Link::utilisation_of(busy_time_s, end_s),
            corrupt_header_drops,
            aqm_dropped_packets: self.aqm_dropped_packets,
            aqm_dropped_bytes: self.aqm_dropped_bytes,
            ce_marked_packets: self.ce_marked_packets,
            ce_marked_bytes: self.ce_marked_bytes,
            queue_delay_mean_s: delay.map(|d| d.mean_s),
            queue_delay_p50_s: delay.map(|d| d.p50_s),
            queue_delay_p95_s: delay.map(|d| d.p95_s),
            queue_delay_p99_s: delay.map(|d| d.p99_s),
            queue_delay_max_s: delay.map(|d| d.max_s),
        }
    }
}

/// The packet being serialized.
#[derive(Debug)]
struct InService<T> {
    item: T,
    ip_bytes: u32,
    ecn: Ecn,
    queue_delay: Duration,
    start: Duration,
    /// When its last bit leaves; `None` if the rate never comes back.
    end: Option<Duration>,
}

/// A packet propagating, ordered for a min-heap on (delivery time, sequence).
#[derive(Debug)]
struct InFlight<T> {
    seq: u64,
    delivery: Delivery<T>,
}

impl<T> InFlight<T> {
    fn key(&self) -> Reverse<(Duration, u64)> {
        Reverse((self.delivery.at, self.seq))
    }
}

impl<T> PartialEq for InFlight<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<T> Eq for InFlight<T> {}
impl<T> PartialOrd for InFlight<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for InFlight<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// The per-packet random decisions taken when a packet leaves the serializer.
struct Fate {
    lost: bool,
    corrupt_bit: Option<u64>,
    duplicate: bool,
    jitter: Duration,
    reorder: bool,
}

/// One direction of a link (see the crate docs for the order of operations).
#[derive(Debug)]
pub struct Link<T> {
    serializer: Serializer,
    delay: Duration,
    jitter: Jitter,
    blackouts: Vec<Blackout>,
    corrupt: f64,
    /// ln(1 − bit_error_rate), so the per-packet error probability costs one `exp`.
    ln_bit_ok: f64,
    duplicate: f64,
    reorder: Reorder,
    loss: LossModel,
    corrupt_rng: ChaCha8Rng,
    duplicate_rng: ChaCha8Rng,
    jitter_rng: ChaCha8Rng,
    reorder_rng: ChaCha8Rng,
    qdisc: Qdisc<T>,
    /// When the discipline's next timer is due, cached so the inlined check in `advance` stays
    /// cheap.
    timer_at: Option<Duration>,
    in_service: Option<InService<T>>,
    /// Packets propagating in order. Their delivery times never decrease (each is at least
    /// `last_in_order`) and their sequence numbers rise, so a FIFO is already sorted by
    /// (delivery time, sequence): O(1) per packet instead of a heap's sift of whole packets.
    in_order: VecDeque<InFlight<T>>,
    /// Packets held back by reordering, whose delivery times may precede earlier packets'.
    reordered: BinaryHeap<InFlight<T>>,
    /// Latest delivery time of a non-reordered packet: later packets may not arrive before it.
    last_in_order: Duration,
    seq: u64,
    now: Duration,
    stats: LinkStats,
    /// Queue delays of the packets that left the queue since [`Link::take_queue_delays`].
    window: DelayWindow,
}

impl<T: Clone> Link<T> {
    /// A link that has seen no packets; every random stream derives from `seed`.
    pub fn new(mut config: LinkConfig, seed: u64) -> Self {
        if config.random_phase {
            if let Some(period) = config.rate.period() {
                let offset = stream(seed, streams::PHASE).random_range(0..period.as_nanos());
                config.rate = config.rate.starting_at(crate::rate::from_ns(offset));
            }
        }
        let nominal_rate = match &config.rate {
            RateProfile::Unlimited => None,
            RateProfile::Fixed(r) => Some(*r),
            RateProfile::Schedule { steps, .. } => steps.iter().map(|s| s.1).max(),
        };
        let qdisc = Qdisc::new(&config.qdisc, config.queue, nominal_rate, seed);
        let timer_at = qdisc.next_timer();
        Link {
            serializer: Serializer::new(config.rate),
            delay: config.delay,
            jitter: config.jitter,
            blackouts: config.blackouts,
            corrupt: config.corrupt,
            ln_bit_ok: (-config.bit_error_rate).ln_1p(),
            duplicate: config.duplicate,
            reorder: config.reorder,
            loss: LossModel::new(&config.loss, seed),
            corrupt_rng: stream(seed, streams::CORRUPT),
            duplicate_rng: stream(seed, streams::DUPLICATE),
            jitter_rng: stream(seed, streams::JITTER),
            reorder_rng: stream(seed, streams::REORDER),
            qdisc,
            timer_at,
            in_service: None,
            in_order: VecDeque::new(),
            reordered: BinaryHeap::new(),
            last_in_order: Duration::ZERO,
            seq: 0,
            now: Duration::ZERO,
            stats: LinkStats::default(),
            window: DelayWindow::default(),
        }
    }

    /// Offers a Not-ECT packet of flow 0 with `ip_bytes` at `now` (see [`Link::enqueue_packet`]).
    pub fn enqueue(&mut self, now: Duration, ip_bytes: u32, item: T) -> EnqueueResult {
        self.enqueue_packet(now, PacketMeta::plain(ip_bytes), item)
    }

    /// Offers a packet at `now` (non-decreasing; an earlier `now` is treated as the latest one
    /// seen). A packet finding the serializer idle and a discipline that allows it (drop-tail,
    /// CoDel, FQ-CoDel) starts at once, never counting against the queue limit; otherwise the
    /// discipline decides, and an idle serializer takes its next packet at the same instant.
    pub fn enqueue_packet(&mut self, now: Duration, meta: PacketMeta, item: T) -> EnqueueResult {
        self.advance(now);
        self.stats.offered_packets += 1;
        self.stats.offered_bytes += u64::from(meta.ip_bytes);
        let packet = Packet {
            item,
            meta,
            enqueued: self.now,
            marked: false,
        };
        if self.in_service.is_none() && self.qdisc.can_bypass() && self.qdisc.len().0 == 0 {
            self.start_service(packet, self.now);
            return EnqueueResult::Accepted;
        }
        let result = self.qdisc.enqueue(self.now, packet, &mut self.stats);
        if self.in_service.is_none() {
            if let Some(next) = self.qdisc.dequeue(self.now, &mut self.stats) {
                self.start_service(next, self.now);
            }
        }
        let (packets, bytes) = self.qdisc.len();
        self.stats.max_queue_packets = self.stats.max_queue_packets.max(packets);
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(bytes);
        result
    }

    /// Earliest time at which `poll` may return something or the state changes (end of a
    /// serialization, next delivery); `None` if nothing will ever happen without new packets.
    pub fn next_wakeup(&self) -> Option<Duration> {
        let serialized = self.in_service.as_ref().and_then(|s| s.end);
        let delivered = self.next_in_flight().map(|(f, _)| f.delivery.at);
        match (serialized, delivered) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Advances to `now` and returns the next packet delivered at or before `now`, in
    /// (delivery time, sequence) order; call repeatedly until `None`.
    pub fn poll(&mut self, now: Duration) -> Option<Delivery<T>> {
        self.advance(now);
        let (next, in_order) = self.next_in_flight()?;
        if next.delivery.at > self.now {
            return None;
        }
        let delivery = if in_order {
            self.in_order.pop_front()?.delivery
        } else {
            self.reordered.pop()?.delivery
        };
        self.stats.forwarded_packets += 1;
        self.stats.forwarded_bytes += u64::from(delivery.ip_bytes);
        if !delivery.duplicate {
            self.stats.queue_delay.record(delivery.queue_delay);
        }
        Some(delivery)
    }

    /// Counters so far.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Mean rate of the link's serializer over `[from, to)`, bit/s; `None` when unlimited.
    pub fn mean_rate(&self, from: Duration, to: Duration) -> Option<f64> {
        self.serializer.mean_rate(from, to)
    }

    /// Advances to `now` and returns the queue delays of the packets that left the queue
    /// (started their serialization) since the previous call, or since the start: every
    /// packet that left at or before `now`, whether the wire then lost it or not. Advancing
    /// is what a `poll` does, so calling this changes nothing else.
    pub fn take_queue_delays(&mut self, now: Duration) -> DelayWindow {
        self.advance(now);
        std::mem::take(&mut self.window)
    }

    /// Packets and IP bytes waiting in the queue (not counting the one in service).
    pub fn queue_len(&self) -> (u64, u64) {
        self.qdisc.len()
    }

    /// Replays every serialization that ended at or before `now`.
    ///
    /// Split in two because most calls (every `poll` of a delivery burst, `enqueue` on a busy
    /// serializer) find nothing finished: the inlined check spares them the call into the
    /// large replay loop (measured with callgrind: its prologue alone was ~1% of a research
    /// model run).
    #[inline]
    fn advance(&mut self, now: Duration) {
        self.now = self.now.max(now);
        if self.timer_at.is_some_and(|t| t <= self.now)
            || self
                .in_service
                .as_ref()
                .and_then(|s| s.end)
                .is_some_and(|end| end <= self.now)
        {
            self.replay_serializations();
        }
    }

    /// Replays, in time order, every serialization end and discipline timer due by `self.now`.
    #[inline(never)]
    fn replay_serializations(&mut self) {
        loop {
            let end = self
                .in_service
                .as_ref()
                .and_then(|s| s.end)
                .filter(|end| *end <= self.now);
            let timer = self.timer_at.filter(|t| *t <= self.now);
            match (end, timer) {
                (Some(end), timer) if timer.is_none_or(|t| end <= t) => {
                    let Some(done) = self.in_service.take() else {
                        break;
                    };
                    self.stats.busy_time += end - done.start;
                    self.put_on_wire(done, end);
                    if let Some(next) = self.qdisc.dequeue(end, &mut self.stats) {
                        // Back to back: the next packet starts exactly when the previous one ended.
                        self.start_service(next, end);
                    }
                }
                (_, Some(at)) => {
                    self.qdisc.on_timer(at, self.now);
                    self.timer_at = self.qdisc.next_timer();
                }
                (_, None) => break,
            }
        }
    }

    fn start_service(&mut self, p: Packet<T>, start: Duration) {
        let end = self.serializer.transmit(start, p.meta.ip_bytes);
        let queue_delay = start.saturating_sub(p.enqueued);
        self.window.record(queue_delay);
        self.in_service = Some(InService {
            item: p.item,
            ip_bytes: p.meta.ip_bytes,
            ecn: p.meta.ecn,
            queue_delay,
            start,
            end,
        });
    }

    /// Draws every impairment for a packet leaving the serializer. All streams are drawn for
    /// every packet (when enabled), so one impairment's setting never shifts another's choices.
    fn draw_fate(&mut self, ip_bytes: u32) -> Fate {
        let lost = self.loss.is_lost();
        let bits = u64::from(ip_bytes) * 8;
        let mut corrupt_bit = None;
        if (self.corrupt > 0.0 || self.ln_bit_ok < 0.0) && bits > 0 {
            // P(at least one error) = 1 − (1 − corrupt)·(1 − ber)^bits, computed without
            // cancellation for tiny rates.
            let p = -(bits as f64 * self.ln_bit_ok + (-self.corrupt).ln_1p()).exp_m1();
            if self.corrupt_rng.random::<f64>() < p {
                corrupt_bit = Some(self.corrupt_rng.random_range(0..bits));
            }
        }
        let duplicate = self.duplicate > 0.0 && self.duplicate_rng.random::<f64>() < self.duplicate;
        let jitter = if self.jitter.is_none() {
            Duration::ZERO
        } else {
            self.jitter.sample(&mut self.jitter_rng)
        };
        let reorder = self.reorder.p > 0.0 && self.reorder_rng.random::<f64>() < self.reorder.p;
        Fate {
            lost,
            corrupt_bit,
            duplicate,
            jitter,
            reorder,
        }
    }

    /// Applies blackout, loss, corruption, duplication, delay, jitter and reordering to a packet
    /// whose last bit left the serializer at `end`.
    fn put_on_wire(&mut self, done: InService<T>, end: Duration) {
        let InService {
            item,
            ip_bytes,
            ecn,
            queue_delay,
            ..
        } = done;
        let fate = self.draw_fate(ip_bytes);
        if in_blackout(&self.blackouts, end) {
            self.stats.blackout_packets += 1;
            return;
        }
        if fate.lost {
            self.stats.lost_packets += 1;
            return;
        }
        let base = end + self.delay + fate.jitter;
        let at = if fate.reorder {
            self.stats.reordered_packets += 1;
            base + self.reorder.extra_delay
        } else {
            self.last_in_order = self.last_in_order.max(base);
            self.last_in_order
        };
        let corrupted = fate.corrupt_bit.is_some();
        self.stats.corrupted_packets += u64::from(corrupted);
        let delivery = Delivery {
            item,
            at,
            ip_bytes,
            corrupted,
            flip_bit: fate.corrupt_bit.unwrap_or(0),
            duplicate: false,
            ecn,
            queue_delay,
        };
        if fate.duplicate {
            self.stats.duplicated_packets += 1;
            let copy = Delivery {
                duplicate: true,
                ..delivery.clone()
            };
            self.push_in_flight(delivery, fate.reorder);
            self.push_in_flight(copy, fate.reorder);
        } else {
            self.push_in_flight(delivery, fate.reorder);
        }
    }

    fn push_in_flight(&mut self, delivery: Delivery<T>, reordered: bool) {
        let f = InFlight {
            seq: self.seq,
            delivery,
        };
        self.seq += 1;
        if reordered {
            self.reordered.push(f);
        } else {
            debug_assert!(self
                .in_order
                .back()
                .is_none_or(|b| b.delivery.at <= f.delivery.at));
            self.in_order.push_back(f);
        }
    }

    /// The packet propagating that is delivered first, in (delivery time, sequence) order,
    /// and whether it is the in-order FIFO's front (else the reordered heap's top).
    fn next_in_flight(&self) -> Option<(&InFlight<T>, bool)> {
        match (self.in_order.front(), self.reordered.peek()) {
            // `key` is reversed for the max-heap: the larger key is delivered first.
            (Some(a), Some(b)) if b.key() > a.key() => Some((b, false)),
            (Some(a), _) => Some((a, true)),
            (None, b) => b.map(|b| (b, false)),
        }
    }
}

#[cfg(test)]
mod tests;
