//! The distribution of the queue delay (sojourn time) of the packets a link forwards, in bounded
//! memory: delay under load, the figure bufferbloat is about.
//!
//! A log-linear histogram over nanoseconds, like an HDR histogram with 64 sub-buckets per power
//! of two: delays below 64 ns have a bucket each, larger ones fall in buckets 1/64 of their
//! power of two wide, so a reported quantile (the middle of the bucket holding the nearest rank,
//! [`quantile::bucket_at_rank`]) is within 0.8% of a value some packet had. Buckets are added
//! only up to the largest delay seen: about 1,900 counters (15 KiB) for delays up to 10 s, at
//! most 3,776 for any `u64` of nanoseconds, whatever the number of packets. The mean and the
//! maximum are exact.
//!
//! [`DelayWindow`] keeps only the count, sum and maximum of the packets of one time bin (the
//! simulator's series).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two (and the number of exact buckets below it).
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// Queue delays of forwarded packets (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueDelay {
    /// Packets per bucket, up to the highest bucket used.
    counts: Vec<u64>,
    /// Packets recorded.
    total: u64,
    /// Sum of their delays, ns (saturating: 584 years of queueing in all).
    sum_ns: u64,
    /// Largest delay, ns.
    max_ns: u64,
}

/// The summary the results report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueDelaySummary {
    /// Mean, s.
    pub mean_s: f64,
    /// Median (nearest rank, bucket middle), s.
    pub p50_s: f64,
    /// 99th percentile (nearest rank, bucket middle), s.
    pub p99_s: f64,
    /// Largest, s (exact).
    pub max_s: f64,
}

fn bucket(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros(); // ≥ SUB_BITS
    let shift = e - SUB_BITS;
    (SUB + u64::from(shift) * SUB + ((ns >> shift) - SUB)) as usize
}

/// Lowest value and width of bucket `i`, ns.
fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, 1);
    }
    let shift = (i - SUB) / SUB;
    let m = (i - SUB) % SUB + SUB;
    (m << shift, 1 << shift)
}

impl QueueDelay {
    /// Records one packet that waited `delay`.
    pub fn record(&mut self, delay: Duration) {
        let ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        let i = bucket(ns);
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Packets recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The delay at quantile `q` (nearest rank; the middle of its bucket, never above the
    /// maximum); `None` without packets.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let i = quantile::bucket_at_rank(&self.counts, self.total, q)?;
        let (low, width) = bounds(i);
        Some(Duration::from_nanos(
            low.saturating_add((width - 1) / 2).min(self.max_ns),
        ))
    }

    /// Mean, p50, p99 and maximum; `None` without packets.
    pub fn summary(&self) -> Option<QueueDelaySummary> {
        if self.total == 0 {
            return None;
        }
        let s = |d: Option<Duration>| d.unwrap_or_default().as_secs_f64();
        Some(QueueDelaySummary {
            mean_s: self.sum_ns as f64 / self.total as f64 / 1e9,
            p50_s: s(self.quantile(0.5)),
            p99_s: s(self.quantile(0.99)),
            max_s: self.max_ns as f64 / 1e9,
        })
    }
}

/// Count, exact mean and maximum of the queue delays of the packets of one time bin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DelayWindow {
    /// Packets recorded.
    pub packets: u64,
    /// Sum of their delays, ns.
    sum_ns: u128,
    /// Largest delay.
    max: Duration,
}

impl DelayWindow {
    /// Records one packet that waited `delay`.
    pub fn record(&mut self, delay: Duration) {
        self.packets += 1;
        self.sum_ns = self.sum_ns.saturating_add(delay.as_nanos());
        self.max = self.max.max(delay);
    }

    /// Mean delay, s; `None` without packets.
    pub fn mean_s(&self) -> Option<f64> {
        (self.packets > 0).then(|| self.sum_ns as f64 / self.packets as f64 / 1e9)
    }

    /// Largest delay, s; `None` without packets.
    pub fn max_s(&self) -> Option<f64> {
        (self.packets > 0).then_some(self.max.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_narrow() {
        let mut last = None;
        for ns in (0..5000u64).chain([1 << 20, (1 << 20) + 1, u64::MAX / 2, u64::MAX]) {
            let i = bucket(ns);
            let (low, width) = bounds(i);
            assert!(
                low <= ns && ns - low < width,
                "{ns} in bucket {i} = {low}+{width}"
            );
            assert!(width == 1 || (width as f64) / (low as f64) <= 1.0 / 64.0);
            if let (true, Some(l)) = (ns < 5000, last) {
                assert!(i == l || i == l + 1, "{ns}: bucket {i} after {l}");
            }
            last = Some(i);
        }
        assert!(bucket(u64::MAX) < 3776);
    }

    #[test]
    fn quantiles_mean_and_max_follow_the_samples() {
        let mut h = QueueDelay::default();
        assert_eq!(h.summary(), None);
        // 1..=100 ms: p50 = 50 ms, p99 = 99 ms (nearest rank), mean 50.5 ms, max 100 ms.
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.summary().expect("samples");
        assert!((s.mean_s - 0.0505).abs() < 1e-12, "{s:?}");
        assert_eq!(s.max_s, 0.1);
        assert!((s.p50_s / 0.050 - 1.0).abs() < 0.008, "{s:?}");
        assert!((s.p99_s / 0.099 - 1.0).abs() < 0.008, "{s:?}");
        assert_eq!(h.count(), 100);
        // Memory is bounded by the largest delay, not the number of packets.
        let len = h.counts.len();
        for _ in 0..100_000 {
            h.record(Duration::from_millis(7));
        }
        assert_eq!(h.counts.len(), len);
        assert!(len < 2000, "{len} buckets for 100 ms");
        let p = h.quantile(0.5).expect("samples");
        assert!((p.as_secs_f64() / 0.007 - 1.0).abs() < 0.008, "{p:?}");
    }

    #[test]
    fn a_window_has_no_values_until_a_packet_comes() {
        let mut w = DelayWindow::default();
        assert_eq!((w.mean_s(), w.max_s()), (None, None));
        w.record(Duration::ZERO);
        assert_eq!((w.mean_s(), w.max_s()), (Some(0.0), Some(0.0)));
        w.record(Duration::from_millis(3));
        w.record(Duration::from_millis(1));
        assert_eq!(w.packets, 3);
        assert!((w.mean_s().expect("mean") - 4e-3 / 3.0).abs() < 1e-15);
        assert_eq!(w.max_s(), Some(0.003));
    }

    #[test]
    fn zero_delay_is_exact() {
        let mut h = QueueDelay::default();
        for _ in 0..10 {
            h.record(Duration::ZERO);
        }
        let s = h.summary().expect("samples");
        assert_eq!((s.mean_s, s.p50_s, s.p99_s, s.max_s), (0.0, 0.0, 0.0, 0.0));
    }
}
