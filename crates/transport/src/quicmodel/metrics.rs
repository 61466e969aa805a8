//! One-way delay of data packets in bounded memory: a log-bucket histogram with 32 buckets per
//! power of two (each bucket spans at most 1/32 of its lower bound, so a percentile is within
//! ±1.6% of the true sample when reported at the bucket's middle), exact mean and maximum.

use std::time::Duration;

use crate::agent::DelayStats;

/// Sub-buckets per power of two (log2).
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets for every `u64` nanosecond value.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// Histogram of delays.
#[derive(Debug, Clone, Default)]
pub(crate) struct DelayHist {
    counts: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

fn index(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros();
    let m = (ns >> (e - SUB_BITS)) & (SUB - 1);
    ((e - SUB_BITS + 1) as u64 * SUB + m) as usize
}

/// Middle of bucket `i` in ns.
fn value(i: usize) -> f64 {
    let i = i as u64;
    if i < SUB {
        return i as f64;
    }
    let e = i / SUB + u64::from(SUB_BITS) - 1;
    let m = i % SUB;
    let lo = (SUB + m) << (e - u64::from(SUB_BITS));
    let width = 1u64 << (e - u64::from(SUB_BITS));
    lo as f64 + width as f64 / 2.0
}

impl DelayHist {
    /// Adds a sample.
    pub(crate) fn record(&mut self, d: Duration) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.counts[index(ns)] += 1;
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// The `q` quantile (`quantile`'s nearest rank) at the middle of its bucket, at most the
    /// maximum.
    fn percentile(&self, q: f64) -> f64 {
        match quantile::bucket_at_rank(&self.counts, self.count, q) {
            Some(i) => value(i).min(self.max_ns as f64),
            None => self.max_ns as f64,
        }
    }

    /// Summary, or `None` without samples.
    pub(crate) fn stats(&self) -> Option<DelayStats> {
        if self.count == 0 {
            return None;
        }
        Some(DelayStats {
            mean_s: self.sum_ns as f64 / self.count as f64 / 1e9,
            p50_s: self.percentile(0.5) / 1e9,
            p95_s: self.percentile(0.95) / 1e9,
            p99_s: self.percentile(0.99) / 1e9,
            max_s: self.max_ns as f64 / 1e9,
            count: self.count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_within_the_bucket_resolution() {
        let mut h = DelayHist::default();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.stats().unwrap();
        assert_eq!(s.count, 100);
        assert!((s.mean_s - 0.0505).abs() < 1e-12);
        assert!((s.p50_s - 0.050).abs() / 0.050 < 0.016, "{}", s.p50_s);
        assert!((s.p95_s - 0.095).abs() / 0.095 < 0.016, "{}", s.p95_s);
        assert!((s.p99_s - 0.099).abs() / 0.099 < 0.016, "{}", s.p99_s);
        assert_eq!(s.max_s, 0.1);
        for ns in [0u64, 31, 32, 1000, 1 << 40, u64::MAX] {
            assert!(index(ns) < BUCKETS);
        }
    }
}
