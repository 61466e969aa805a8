//! Queue disciplines: the queue in front of a link's serializer, and ECN marking.
//!
//! Each discipline is a small state machine with Linux's `enqueue` / `dequeue` split:
//! [`crate::link::Link`] offers every arriving packet to `enqueue` at its arrival time and calls
//! `dequeue` exactly when the serializer becomes free (the instant the previous packet's last bit
//! left), so dequeue-time decisions (CoDel, DualPI2) see the same sojourn times a Linux qdisc
//! would see on a NIC without a transmit ring. Periodic work (PIE's and DualPI2's probability
//! updates, adaptive RED's `max_p`) runs from timers that the link replays lazily at their exact
//! virtual times, interleaved in time order with the serializations (a timer due at the same
//! instant as a dequeue runs after it), so results never depend on how often the caller polls.
//!
//! | discipline | module | follows |
//! |---|---|---|
//! | drop-tail | [`droptail`] | today's FIFO with [`crate::config::QueueLimit`] |
//! | RED / adaptive RED | [`red`] | `sch_red.c`, `red.h`; Floyd & Jacobson 1993; Floyd et al. 2001 |
//! | CoDel | [`codel`] | RFC 8289; `sch_codel.c`, `codel.h`, `codel_impl.h` |
//! | FQ-CoDel | [`fq_codel`] | RFC 8290; `sch_fq_codel.c` |
//! | PIE | [`pie`] | RFC 8033; `sch_pie.c`, `pie.h` |
//! | DualPI2 | [`dualpi2`] | RFC 9332; `sch_dualpi2.c` |
//!
//! # Common differences from Linux
//!
//! - **Lengths are IP bytes.** Linux counts `qdisc_pkt_len`, which includes the 14-byte Ethernet
//!   header, and its defaults derived from the device MTU use `psched_mtu` = 1500 + 14 = 1514.
//!   Here every size is at the IP layer (the link's accounting), so those defaults become 1500:
//!   one full-size packet is one MTU, exactly as a 1514-byte frame is on Linux.
//! - **Memory limits count IP bytes**, not `skb->truesize` (the kernel's buffer allocation,
//!   which depends on the driver). With the default packet limits they are never the binding
//!   limit, as on Linux with ordinary (non-GSO) packets.
//! - **Time is exact nanoseconds.** CoDel's 1024 ns clock, PIE's 64 ns `psched` ticks and
//!   jiffies-based timers are not reproduced; probabilities are `f64` instead of Linux's fixed
//!   point (same formulas, rounding differs in the last bits).
//! - **No transmit ring.** Linux dequeues when the driver's ring has room; here dequeue happens
//!   when the serializer is free, as the link model always assumed.
//! - **Bypass** follows Linux: CoDel and FQ-CoDel set `TCQ_F_CAN_BYPASS`, so a packet that finds
//!   the qdisc empty and the serializer idle goes straight to the serializer without touching
//!   the discipline's state (drop-tail behaves the same); PIE, RED and DualPI2 do not, so such a
//!   packet is enqueued and dequeued at the same instant.
//! - Random draws come from the link's own qdisc stream (stream id 5 of the link's seed), never
//!   from the streams of the wire impairments, so choosing a discipline shifts no other draw.

pub mod codel;
pub mod droptail;
pub mod dualpi2;
pub mod fq_codel;
pub mod pie;
pub mod red;

use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::config::QueueLimit;
use crate::link::{EnqueueResult, LinkStats};
use crate::rng::{stream, streams};

pub use codel::CodelConfig;
pub use dualpi2::DualPi2Config;
pub use fq_codel::FqCodelConfig;
pub use pie::PieConfig;
pub use red::RedConfig;

/// The ECN field of the IP header (RFC 3168): the two low bits of the TOS / traffic class byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Ecn {
    /// `00`: the transport does not support ECN; an AQM must drop, not mark.
    #[default]
    NotEct,
    /// `01`: ECN-capable, L4S identifier (RFC 9331).
    Ect1,
    /// `10`: ECN-capable, classic.
    Ect0,
    /// `11`: Congestion Experienced.
    Ce,
}

impl Ecn {
    /// The codepoint for the two header bits (only the low two bits of `bits` are read).
    pub fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two header bits of this codepoint.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// Whether a router may set CE instead of dropping (ECT(0), ECT(1), or already CE), as
    /// Linux's `INET_ECN_set_ce` succeeds for exactly these.
    pub fn can_mark(self) -> bool {
        self != Ecn::NotEct
    }
}

/// What the link needs to know about a packet besides its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketMeta {
    /// Size at the IP layer (headers included), as the link accounts it.
    pub ip_bytes: u32,
    /// Hash of the packet's 5-tuple, computed by the engine; FQ-CoDel classifies on it.
    pub flow: u64,
    /// The ECN codepoint the packet arrives with.
    pub ecn: Ecn,
}

impl PacketMeta {
    /// A Not-ECT packet of flow 0 (what [`crate::link::Link::enqueue`] offers).
    pub fn plain(ip_bytes: u32) -> Self {
        PacketMeta {
            ip_bytes,
            flow: 0,
            ecn: Ecn::NotEct,
        }
    }
}

/// The flow of a packet as both engines compute it for [`PacketMeta::flow`]: a fixed mix of
/// its 5-tuple (IPv4 source and destination, protocol, ports; ports 0 for other protocols).
/// Deterministic across runs and machines; FQ-CoDel keys it once more with a per-link random
/// value, as Linux keys its `jhash`, so which flows share a bucket still varies with the seed.
pub fn flow_hash(
    src: std::net::Ipv4Addr,
    dst: std::net::Ipv4Addr,
    protocol: u8,
    src_port: u16,
    dst_port: u16,
) -> u64 {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let addrs = (u64::from(u32::from(src)) << 32) | u64::from(u32::from(dst));
    let rest = (u64::from(protocol) << 32) | (u64::from(src_port) << 16) | u64::from(dst_port);
    mix(mix(addrs) ^ rest)
}

/// Which queue discipline a link direction runs, with its parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub enum QdiscConfig {
    /// First in, first out, dropping arrivals beyond [`crate::config::LinkConfig::queue`].
    #[default]
    DropTail,
    /// Random Early Detection, optionally adaptive (`sch_red`).
    Red(RedConfig),
    /// Controlled Delay (RFC 8289, `sch_codel`).
    Codel(CodelConfig),
    /// Flow-queue CoDel (RFC 8290, `sch_fq_codel`).
    FqCodel(FqCodelConfig),
    /// Proportional Integral controller Enhanced (RFC 8033, `sch_pie`).
    Pie(PieConfig),
    /// Coupled dual queue with PI2 for L4S (RFC 9332, `sch_dualpi2`).
    DualPi2(DualPi2Config),
}

/// A packet inside a discipline.
#[derive(Debug)]
pub(crate) struct Packet<T> {
    pub(crate) item: T,
    pub(crate) meta: PacketMeta,
    /// When it was offered to the discipline (its sojourn starts here).
    pub(crate) enqueued: Duration,
    /// This link already counted a CE mark for it (a second mark is not a second event).
    pub(crate) marked: bool,
}

impl<T> Packet<T> {
    pub(crate) fn len(&self) -> u64 {
        u64::from(self.meta.ip_bytes)
    }
}

/// Sets CE on an ECN-capable packet and counts the mark; `false` (and no change) for Not-ECT,
/// which the caller must drop instead (Linux's `INET_ECN_set_ce`).
pub(crate) fn mark_ce<T>(p: &mut Packet<T>, stats: &mut LinkStats) -> bool {
    if !p.meta.ecn.can_mark() {
        return false;
    }
    p.meta.ecn = Ecn::Ce;
    if !p.marked {
        p.marked = true;
        stats.ce_marked_packets += 1;
        stats.ce_marked_bytes += p.len();
    }
    true
}

/// Counts a packet an AQM decided to drop (not a queue overflow).
pub(crate) fn count_aqm_drop<T>(p: &Packet<T>, stats: &mut LinkStats) {
    stats.aqm_dropped_packets += 1;
    stats.aqm_dropped_bytes += p.len();
}

/// Counts a packet dropped because the queue was full (the drop-tail counters).
pub(crate) fn count_tail_drop(bytes: u64, stats: &mut LinkStats) {
    stats.dropped_queue_packets += 1;
    stats.dropped_queue_bytes += bytes;
}

/// The discipline of one link direction (static dispatch: no allocation, no `'static` bound).
#[derive(Debug)]
pub(crate) enum Qdisc<T> {
    DropTail(droptail::DropTail<T>),
    Red(Box<red::Red<T>>),
    Codel(Box<codel::Codel<T>>),
    FqCodel(Box<fq_codel::FqCodel<T>>),
    Pie(Box<pie::Pie<T>>),
    DualPi2(Box<dualpi2::DualPi2<T>>),
}

/// The nominal serialization rate a discipline may need (RED's idle-time decay), in bit/s;
/// `None` for an unlimited link.
pub(crate) type NominalRate = Option<u64>;

macro_rules! each {
    ($self:expr, $q:ident => $e:expr) => {
        match $self {
            Qdisc::DropTail($q) => $e,
            Qdisc::Red($q) => $e,
            Qdisc::Codel($q) => $e,
            Qdisc::FqCodel($q) => $e,
            Qdisc::Pie($q) => $e,
            Qdisc::DualPi2($q) => $e,
        }
    };
}

impl<T> Qdisc<T> {
    pub(crate) fn new(
        config: &QdiscConfig,
        limit: QueueLimit,
        rate: NominalRate,
        seed: u64,
    ) -> Self {
        let rng = || -> ChaCha8Rng { stream(seed, streams::QDISC) };
        match config {
            QdiscConfig::DropTail => Qdisc::DropTail(droptail::DropTail::new(limit)),
            QdiscConfig::Red(c) => Qdisc::Red(Box::new(red::Red::new(c.clone(), rate, rng()))),
            QdiscConfig::Codel(c) => Qdisc::Codel(Box::new(codel::Codel::new(c.clone()))),
            QdiscConfig::FqCodel(c) => {
                Qdisc::FqCodel(Box::new(fq_codel::FqCodel::new(c.clone(), rng())))
            }
            QdiscConfig::Pie(c) => Qdisc::Pie(Box::new(pie::Pie::new(c.clone(), rng()))),
            QdiscConfig::DualPi2(c) => {
                Qdisc::DualPi2(Box::new(dualpi2::DualPi2::new(c.clone(), rng())))
            }
        }
    }

    /// Whether a packet finding this discipline empty and the serializer idle skips it.
    pub(crate) fn can_bypass(&self) -> bool {
        matches!(
            self,
            Qdisc::DropTail(_) | Qdisc::Codel(_) | Qdisc::FqCodel(_)
        )
    }

    /// Offers a packet at `now`; the discipline counts its own drops and marks.
    pub(crate) fn enqueue(
        &mut self,
        now: Duration,
        p: Packet<T>,
        stats: &mut LinkStats,
    ) -> EnqueueResult {
        each!(self, q => q.enqueue(now, p, stats))
    }

    /// The next packet for the serializer at `now`, after any dequeue-time drops.
    pub(crate) fn dequeue(&mut self, now: Duration, stats: &mut LinkStats) -> Option<Packet<T>> {
        each!(self, q => q.dequeue(now, stats))
    }

    /// Packets and IP bytes waiting.
    pub(crate) fn len(&self) -> (u64, u64) {
        each!(self, q => q.len())
    }

    /// When the discipline's timer fires next (`None`: it has none).
    pub(crate) fn next_timer(&self) -> Option<Duration> {
        match self {
            Qdisc::Red(q) => q.next_timer(),
            Qdisc::Pie(q) => q.next_timer(),
            Qdisc::DualPi2(q) => q.next_timer(),
            Qdisc::DropTail(_) | Qdisc::Codel(_) | Qdisc::FqCodel(_) => None,
        }
    }

    /// Runs the timer due at `at` (the link calls it exactly at `next_timer`). `horizon` is the
    /// link's present: a discipline whose state is a fixed point of its timer (empty queue,
    /// nothing left to decay) may skip the no-op ticks up to it, so a long idle period costs
    /// one call instead of one per period.
    pub(crate) fn on_timer(&mut self, at: Duration, horizon: Duration) {
        match self {
            Qdisc::Red(q) => q.on_timer(at, horizon),
            Qdisc::Pie(q) => q.on_timer(at, horizon),
            Qdisc::DualPi2(q) => q.on_timer(at, horizon),
            Qdisc::DropTail(_) | Qdisc::Codel(_) | Qdisc::FqCodel(_) => {}
        }
    }
}

/// The first tick of a timer with `period`, counted from `at`, strictly after `horizon` (or
/// after `at` if `horizon` is earlier); `None` if it is beyond what a `Duration` holds.
pub(crate) fn next_tick(at: Duration, period: Duration, horizon: Duration) -> Option<Duration> {
    let period = period.as_nanos().max(1);
    let ticks = horizon.saturating_sub(at).as_nanos() / period + 1;
    let ns = at.as_nanos().checked_add(period.checked_mul(ticks)?)?;
    let secs = u64::try_from(ns / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (ns % 1_000_000_000) as u32))
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_codepoints_are_the_header_bits() {
        for (e, b) in [
            (Ecn::NotEct, 0b00),
            (Ecn::Ect1, 0b01),
            (Ecn::Ect0, 0b10),
            (Ecn::Ce, 0b11),
        ] {
            assert_eq!(e.bits(), b);
            assert_eq!(Ecn::from_bits(b), e);
            assert_eq!(
                Ecn::from_bits(b | 0b1111_0100),
                e,
                "only the low two bits count"
            );
        }
        assert!(!Ecn::NotEct.can_mark());
        assert!(Ecn::Ect0.can_mark() && Ecn::Ect1.can_mark() && Ecn::Ce.can_mark());
    }

    #[test]
    fn flow_hash_tells_5_tuples_apart() {
        use std::net::Ipv4Addr;
        let (a, b) = (Ipv4Addr::new(10, 1, 0, 1), Ipv4Addr::new(10, 2, 0, 1));
        let h = flow_hash(a, b, 6, 40000, 443);
        assert_eq!(h, flow_hash(a, b, 6, 40000, 443), "deterministic");
        for other in [
            flow_hash(b, a, 6, 40000, 443),
            flow_hash(a, b, 17, 40000, 443),
            flow_hash(a, b, 6, 40001, 443),
            flow_hash(a, b, 6, 40000, 444),
            flow_hash(a, Ipv4Addr::new(10, 2, 0, 2), 6, 40000, 443),
        ] {
            assert_ne!(h, other);
        }
    }

    #[test]
    fn marking_counts_once_and_never_marks_not_ect() {
        let mut stats = LinkStats::default();
        let mut p = testutil::pkt(0, 1000, 0, Ecn::Ect0);
        assert!(mark_ce(&mut p, &mut stats));
        assert!(mark_ce(&mut p, &mut stats));
        assert_eq!(p.meta.ecn, Ecn::Ce);
        assert_eq!((stats.ce_marked_packets, stats.ce_marked_bytes), (1, 1000));
        let mut q = testutil::pkt(1, 1000, 0, Ecn::NotEct);
        assert!(!mark_ce(&mut q, &mut stats));
        assert_eq!(q.meta.ecn, Ecn::NotEct);
        assert_eq!(stats.ce_marked_packets, 1);
    }
}

#[cfg(test)]
mod cadence {
    use proptest::prelude::*;

    use super::testutil::{drive, drive_lazily, link, meta, us};
    use super::*;

    fn config(i: usize) -> QdiscConfig {
        match i {
            0 => QdiscConfig::DropTail,
            1 => QdiscConfig::Codel(CodelConfig {
                ecn: true,
                ..CodelConfig::default()
            }),
            2 => QdiscConfig::FqCodel(FqCodelConfig::default()),
            3 => QdiscConfig::Pie(PieConfig {
                ecn: true,
                ..PieConfig::default()
            }),
            4 => QdiscConfig::Red(RedConfig {
                ecn: true,
                adaptive: true,
                min_bytes: 6000,
                max_bytes: 18_000,
                ..RedConfig::default()
            }),
            _ => QdiscConfig::DualPi2(DualPi2Config::default()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any arrival sequence gives the same deliveries and counters whether the caller polls
        /// at every wakeup or only at arbitrary times.
        #[test]
        fn deliveries_do_not_depend_on_when_the_caller_polls(
            which in 0usize..6,
            gaps in prop::collection::vec((0u64..3000, 40u32..1500, 0u8..4, 0u64..4), 50..600),
            polls in prop::collection::vec(0u64..2_000_000, 0..40),
            seed in 0u64..1000,
        ) {
            let mut t = 0;
            let arrivals: Vec<_> = gaps
                .iter()
                .map(|(gap, bytes, ecn, flow)| {
                    t += gap;
                    (us(t), meta(*bytes, *flow, Ecn::from_bits(*ecn)))
                })
                .collect();
            let mut polls: Vec<Duration> = polls.into_iter().map(us).collect();
            polls.sort();
            let mut a = link(4_000_000, config(which), seed);
            let eager = drive(&mut a, &arrivals);
            let mut b = link(4_000_000, config(which), seed);
            let lazy = drive_lazily(&mut b, &arrivals, &polls);
            prop_assert_eq!(eager, lazy);
            prop_assert_eq!(a.stats(), b.stats());
        }
    }
}
