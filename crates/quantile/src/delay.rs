//! Distributions of delays in bounded memory: a queue's sojourn times, a flow's one-way delays,
//! a probe's round trips.
//!
//! A log-linear histogram over nanoseconds, like an HDR histogram with 64 sub-buckets per power
//! of two: delays below 64 ns have a bucket each, larger ones fall in buckets 1/64 of their
//! power of two wide, so a reported quantile (the middle of the bucket holding the nearest rank,
//! [`crate::bucket_at_rank`]) is within 0.8% of a value some sample had. Buckets are added
//! only up to the largest delay seen: about 1,900 counters (15 KiB) for delays up to 10 s, at
//! most 3,776 for any `u64` of nanoseconds, whatever the number of samples. The mean and the
//! maximum are exact.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two (and the number of exact buckets below it).
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// A distribution of delays in bounded memory (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelayHistogram {
    /// Delays per bucket, up to the highest bucket used.
    counts: Vec<u64>,
    /// Delays recorded.
    total: u64,
    /// Sum of their delays, ns (saturating: 584 years of queueing in all).
    sum_ns: u64,
    /// Largest delay, ns.
    max_ns: u64,
}

/// The summary results report (`results::DelaySummary`: probe delays, a flow's one-way
/// delay).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DelaySummary {
    /// Delays recorded.
    pub count: u64,
    /// Mean, s.
    pub mean_s: f64,
    /// Median (nearest rank, bucket middle), s.
    pub p50_s: f64,
    /// 95th percentile (nearest rank, bucket middle), s.
    pub p95_s: f64,
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

impl DelayHistogram {
    /// Records one delay.
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

    /// Delays recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The delay at quantile `q` (nearest rank; the middle of its bucket, never above the
    /// maximum); `None` without samples.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let i = crate::bucket_at_rank(&self.counts, self.total, q)?;
        let (low, width) = bounds(i);
        Some(Duration::from_nanos(
            low.saturating_add((width - 1) / 2).min(self.max_ns),
        ))
    }

    /// Count, mean, p50, p95, p99 and maximum; `None` without samples.
    pub fn summary(&self) -> Option<DelaySummary> {
        if self.total == 0 {
            return None;
        }
        let s = |d: Option<Duration>| d.unwrap_or_default().as_secs_f64();
        Some(DelaySummary {
            count: self.total,
            mean_s: self.sum_ns as f64 / self.total as f64 / 1e9,
            p50_s: s(self.quantile(0.5)),
            p95_s: s(self.quantile(0.95)),
            p99_s: s(self.quantile(0.99)),
            max_s: self.max_ns as f64 / 1e9,
        })
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
        let mut h = DelayHistogram::default();
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
    fn zero_delay_is_exact() {
        let mut h = DelayHistogram::default();
        for _ in 0..10 {
            h.record(Duration::ZERO);
        }
        let s = h.summary().expect("samples");
        assert_eq!((s.mean_s, s.p50_s, s.p99_s, s.max_s), (0.0, 0.0, 0.0, 0.0));
    }
}
