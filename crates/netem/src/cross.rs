//! Cross-traffic sources: UDP datagrams injected at the bottleneck and discarded after it.
//!
//! [`CrossSpec`] describes a source; [`CrossSource`] turns it into a seeded schedule of
//! (emission time, UDP payload size). The simulator injects those datagrams at the bottleneck
//! in virtual time; the emulator sends them from real sockets on the same schedule.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::wire::IPV4_UDP_OVERHEAD;

/// Cross traffic: UDP datagrams injected at the bottleneck, sent from the left (up) or right (down).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossSpec {
    /// Name of the source in results.
    pub name: String,
    /// `true`: crosses the bottleneck in the up (client → server) direction.
    pub up: bool,
    /// When the source starts sending.
    pub start: Duration,
    /// When it stops (`None` = end of the run).
    pub stop: Option<Duration>,
    /// How it sends.
    pub pattern: CrossPattern,
}

/// How a cross-traffic source emits datagrams (sizes are UDP payload bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CrossPattern {
    /// Constant bit rate (IP layer) with fixed payload size.
    Cbr {
        /// Rate in bit/s at the IP layer.
        rate_bps: u64,
        /// UDP payload bytes per datagram.
        payload: u32,
    },
    /// Size uniform in [min, max] bytes, gap uniform in [min, max] (seed 001's fourth sender).
    Uniform {
        /// Smallest UDP payload.
        payload_min: u32,
        /// Largest UDP payload.
        payload_max: u32,
        /// Shortest gap between datagrams.
        gap_min: Duration,
        /// Longest gap between datagrams.
        gap_max: Duration,
    },
    /// CBR during `on`, silent during `off`, repeating.
    OnOff {
        /// Rate in bit/s at the IP layer while on.
        rate_bps: u64,
        /// UDP payload bytes per datagram.
        payload: u32,
        /// Length of a burst.
        on: Duration,
        /// Silence between bursts.
        off: Duration,
    },
}

/// A seeded generator of (emission time, UDP payload size).
pub struct CrossSource {
    spec: CrossSpec,
    rng: ChaCha8Rng,
    /// Time of the next datagram, or `None` once finished.
    next: Option<Duration>,
    /// Counters for the results.
    pub sent_packets: u64,
    /// IP bytes emitted.
    pub sent_bytes: u64,
    /// Packets that made it through the bottleneck.
    pub delivered_packets: u64,
}

fn cbr_gap(rate_bps: u64, payload: u32) -> Duration {
    let bits = u128::from(payload + IPV4_UDP_OVERHEAD) * 8;
    Duration::from_nanos((bits * 1_000_000_000 / u128::from(rate_bps.max(1))) as u64)
}

impl CrossSource {
    /// A source that starts at `spec.start`.
    pub fn new(spec: CrossSpec, seed: u64) -> Self {
        let next = Some(spec.start);
        CrossSource {
            spec,
            rng: ChaCha8Rng::seed_from_u64(seed),
            next,
            sent_packets: 0,
            sent_bytes: 0,
            delivered_packets: 0,
        }
    }

    /// The source's configuration.
    pub fn spec(&self) -> &CrossSpec {
        &self.spec
    }

    /// When the next datagram leaves.
    pub fn next_time(&self) -> Option<Duration> {
        self.next.filter(|t| self.spec.stop.is_none_or(|s| *t < s))
    }

    /// Emits the datagram due at `next_time()`: returns its UDP payload size and schedules the next.
    pub fn emit(&mut self) -> Option<u32> {
        let now = self.next_time()?;
        let (size, gap) = match &self.spec.pattern {
            CrossPattern::Cbr { rate_bps, payload } => (*payload, cbr_gap(*rate_bps, *payload)),
            CrossPattern::Uniform {
                payload_min,
                payload_max,
                gap_min,
                gap_max,
            } => {
                let size = self
                    .rng
                    .random_range(*payload_min..=(*payload_max).max(*payload_min));
                let lo = gap_min.as_nanos() as u64;
                let hi = (gap_max.as_nanos() as u64).max(lo);
                (size, Duration::from_nanos(self.rng.random_range(lo..=hi)))
            }
            CrossPattern::OnOff {
                rate_bps,
                payload,
                on,
                off,
            } => {
                let gap = cbr_gap(*rate_bps, *payload);
                let period = *on + *off;
                let phase = Duration::from_nanos(
                    ((now - self.spec.start).as_nanos() % period.as_nanos().max(1)) as u64,
                );
                // Skip the off period when the next packet would fall into it.
                let gap = if phase + gap >= *on {
                    period - phase
                } else {
                    gap
                };
                (*payload, gap)
            }
        };
        self.next = Some(now + gap.max(Duration::from_nanos(1)));
        self.sent_packets += 1;
        self.sent_bytes += u64::from(size + IPV4_UDP_OVERHEAD);
        Some(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: CrossPattern) -> CrossSpec {
        CrossSpec {
            name: "x".into(),
            up: false,
            start: Duration::ZERO,
            stop: Some(Duration::from_secs(10)),
            pattern,
        }
    }

    #[test]
    fn cbr_rate_is_exact() {
        let mut s = CrossSource::new(
            spec(CrossPattern::Cbr {
                rate_bps: 1_000_000,
                payload: 97,
            }),
            1,
        );
        while s.emit().is_some() {}
        // 125 B per packet at 1 Mbit/s = 1 ms gap: 10 s → 10000 packets.
        assert_eq!(s.sent_packets, 10_000);
        assert_eq!(s.sent_bytes * 8, 10_000_000);
    }

    #[test]
    fn uniform_respects_bounds_and_mean() {
        let p = CrossPattern::Uniform {
            payload_min: 100,
            payload_max: 1000,
            gap_min: Duration::from_millis(25),
            gap_max: Duration::from_millis(100),
        };
        let mut s = CrossSource::new(spec(p), 3);
        let mut sizes = Vec::new();
        while let Some(sz) = s.emit() {
            assert!((100..=1000).contains(&sz));
            sizes.push(sz);
        }
        // Mean gap 62.5 ms → about 160 packets in 10 s.
        assert!((140..=180).contains(&sizes.len()), "{}", sizes.len());
    }

    #[test]
    fn onoff_is_silent_when_off() {
        let p = CrossPattern::OnOff {
            rate_bps: 1_000_000,
            payload: 97,
            on: Duration::from_secs(1),
            off: Duration::from_secs(1),
        };
        let mut s = CrossSource::new(spec(p), 1);
        let mut times = Vec::new();
        while let Some(t) = s.next_time() {
            times.push(t);
            s.emit();
        }
        assert!(
            times.iter().all(|t| t.as_secs() % 2 == 0),
            "packets only in even seconds"
        );
        assert!((4900..=5100).contains(&times.len()), "{}", times.len());
    }
}
