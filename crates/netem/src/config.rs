//! Resolved (unit-free) configuration of one direction of a link.
//!
//! Everything here is already in base units: time as [`Duration`] since the start of the run,
//! sizes in bytes, rates in bit/s, probabilities as `f64` in `[0, 1]`. Parsing human units
//! ("10Mbit", "1.5%") happens in the `scenario` crate, never here.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::qdisc::QdiscConfig;

/// Capacity of one link direction over time, in bit/s at the IP layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RateProfile {
    /// No serialization delay at all (an "ideal" link).
    Unlimited,
    /// A constant rate in bit/s.
    Fixed(u64),
    /// Piecewise-constant rate: each step `(from, bit/s)` holds until the next step's `from`.
    /// The first step starts at zero; a rate of 0 is an outage (packets wait in the queue).
    /// When `repeat_every` is set, the schedule repeats with that period (bandwidth-on-demand traces).
    Schedule {
        steps: Vec<(Duration, u64)>,
        repeat_every: Option<Duration>,
    },
}

/// Extra one-way delay variation added per packet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Jitter {
    /// No variation.
    None,
    /// Uniform in `[0, max]`.
    Uniform { max: Duration },
    /// Normal with the given standard deviation, truncated at zero.
    Normal { sd: Duration },
}

/// Drop-tail queue limit. A packet is dropped on arrival when accepting it would exceed either
/// limit. The packet being serialized does not count (it has left the queue, like a NIC ring).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QueueLimit {
    /// Maximum packets waiting; `None` = no packet limit.
    pub packets: Option<u64>,
    /// Maximum IP bytes waiting; `None` = no byte limit.
    pub bytes: Option<u64>,
}

/// A time interval during which every packet on the wire is lost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Blackout {
    /// Start of the first outage.
    pub start: Duration,
    /// Length of each outage.
    pub duration: Duration,
    /// If set, the outage repeats with this period (start, start + period, ...).
    pub period: Option<Duration>,
}

/// Random or deterministic packet loss applied to packets as they leave the queue onto the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LossConfig {
    /// No loss.
    None,
    /// Independent loss with probability `p` per packet.
    Bernoulli { p: f64 },
    /// Deterministic: exactly one drop after every `round(1/p) - 1` delivered packets
    /// (the packet number `k * round(1/p)` is dropped, k = 1, 2, ...).
    Periodic { p: f64 },
    /// Gilbert-Elliott two-state model. `p` = P(Good→Bad), `r` = P(Bad→Good),
    /// loss probability is `1 - k` in Good and `1 - h` in Bad. Starts in Good.
    /// (The (γ, β, h, target) parameterisation is converted by the scenario crate using
    /// [`crate::loss::gilbert_elliott_k_for_target`].)
    GilbertElliott { p: f64, r: f64, k: f64, h: f64 },
    /// Bernoulli with probability `p`, but never more than `max_burst` consecutive drops
    /// (the packet after a burst of `max_burst` drops always passes).
    BoundedBernoulli { p: f64, max_burst: u32 },
}

/// Packet reordering: with probability `p` a packet is held back by `extra_delay`, letting later
/// packets overtake it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reorder {
    /// Probability that a packet is held back.
    pub p: f64,
    /// Extra delay of a held-back packet (it skips the FIFO clamp, so later packets pass it).
    pub extra_delay: Duration,
}

/// Everything that describes one direction of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkConfig {
    /// Serialization rate at the IP layer.
    pub rate: RateProfile,
    /// Constant one-way propagation delay.
    pub delay: Duration,
    /// Per-packet delay variation (packets keep their order unless `reorder` says otherwise).
    pub jitter: Jitter,
    /// Drop-tail queue limit in front of the serializer.
    pub queue: QueueLimit,
    /// Loss model applied on the wire.
    pub loss: LossConfig,
    /// Timed outages (all packets lost).
    pub blackouts: Vec<Blackout>,
    /// Probability that a packet is delivered with one bit flipped (per packet).
    pub corrupt: f64,
    /// Bit error rate: each bit of a packet is flipped with this probability; a packet with at
    /// least one error is delivered corrupt (one bit flipped is enough for any checksum/AEAD).
    pub bit_error_rate: f64,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Reordering.
    pub reorder: Reorder,
    /// Queue discipline in front of the serializer (drop-tail by default). Drop-tail uses
    /// `queue` as its limit; the other disciplines have their own limits in their parameters.
    #[serde(default)]
    pub qdisc: QdiscConfig,
    /// Start a repeating rate schedule at a point drawn uniformly over its period from the
    /// link's seed, so that repetitions sample different stretches of one trace (and variants,
    /// which share seeds, the same stretch). `false`: every run starts at the schedule's start.
    #[serde(default)]
    pub random_phase: bool,
}

impl LinkConfig {
    /// An ideal link: unlimited rate, no delay, no queue limit, no impairment.
    pub fn ideal() -> Self {
        LinkConfig {
            rate: RateProfile::Unlimited,
            delay: Duration::ZERO,
            jitter: Jitter::None,
            queue: QueueLimit {
                packets: None,
                bytes: None,
            },
            loss: LossConfig::None,
            blackouts: Vec::new(),
            corrupt: 0.0,
            bit_error_rate: 0.0,
            duplicate: 0.0,
            reorder: Reorder {
                p: 0.0,
                extra_delay: Duration::ZERO,
            },
            qdisc: QdiscConfig::DropTail,
            random_phase: false,
        }
    }
}
