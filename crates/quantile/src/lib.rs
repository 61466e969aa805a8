//! The one definition of a quantile (a percentile is a quantile times 100) every part of
//! quiclab reports: the **nearest rank**. The `q` quantile (0 ≤ q ≤ 1) of n values is the
//! value of rank ⌈q·n⌉ (1-based) in ascending order, rank at least 1: the smallest value with at
//! least a fraction `q` of the values at or below it. It is always one of the values (never an
//! interpolation between two), so a p99 latency is a latency some request had; it is the
//! definition HDR histograms use, so the load tester's histogram percentiles agree with it.
//!
//! Histograms ([`DelayHistogram`]: queue delays, one-way delays, probe round trips; the
//! emulator's release lateness) find the
//! bucket holding that rank with [`bucket_at_rank`] and report a value of the bucket (its
//! middle, or its upper edge: each histogram documents which).
//!
//! The *median* of a summary ([`median`]: `summary.csv`, `compare`, `calibrate`) is the
//! conventional sample median instead: the middle value, or the mean of the two middle values
//! for an even count, the estimate the order-statistic interval around it
//! (`analysis::stats::median_ci95`) is built for. It is the one quantile that is not the nearest
//! rank, and it has its own name so that no caller mistakes one for the other.

#![warn(missing_docs)]

mod delay;

pub use delay::{DelayHistogram, DelaySummary};

/// The 1-based rank of the `q` quantile among `n` values: ⌈q·n⌉, `q` clamped to [0, 1], the
/// rank clamped to [1, n]; 0 only when `n` is 0.
pub fn nearest_rank(n: u64, q: f64) -> u64 {
    if n == 0 {
        return 0;
    }
    ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n)
}

/// The `q` quantile of ascending `sorted` values; NaN when there are none.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match nearest_rank(sorted.len() as u64, q) {
        0 => f64::NAN,
        rank => sorted[rank as usize - 1],
    }
}

/// The `q` quantile of `values` in any order, non-finite values left out; NaN when none is
/// left.
pub fn quantile_of(values: &[f64], q: f64) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    quantile(&sorted, q)
}

/// The sample median of ascending `sorted` values: the middle one, or the mean of the two
/// middle ones for an even count; `None` when there are none.
pub fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The index of the bucket holding the `q` quantile of a histogram whose buckets, in ascending
/// order of value, hold `counts` values (`total` in all); `None` when `total` is 0 or the
/// counts sum to less than the rank.
pub fn bucket_at_rank(counts: &[u64], total: u64, q: f64) -> Option<usize> {
    let rank = nearest_rank(total, q);
    if rank == 0 {
        return None;
    }
    let mut seen = 0;
    counts.iter().position(|&c| {
        seen += c;
        seen >= rank
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_is_the_ceiling_of_q_n() {
        assert_eq!(nearest_rank(0, 0.5), 0);
        assert_eq!(nearest_rank(10, 0.0), 1);
        assert_eq!(nearest_rank(10, 0.5), 5);
        assert_eq!(nearest_rank(10, 0.51), 6);
        assert_eq!(nearest_rank(10, 0.99), 10);
        assert_eq!(nearest_rank(10, 1.0), 10);
        assert_eq!(nearest_rank(10, 7.0), 10);
        assert_eq!(nearest_rank(1000, 0.999), 999);
    }

    #[test]
    fn quantiles_are_sample_values() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 5.0);
        assert_eq!(quantile(&v, 0.9), 9.0);
        assert_eq!(quantile(&v, 0.91), 10.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(quantile_of(&[3.0, f64::NAN, 1.0, 2.0], 0.5), 2.0);
        assert!(quantile_of(&[f64::NAN], 0.5).is_nan());
    }

    #[test]
    fn the_median_is_the_middle_or_the_mean_of_the_middle_pair() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0, 3.0, 9.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        // Unlike the nearest-rank 0.5 quantile of an even count.
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 9.0], 0.5), 2.0);
    }

    #[test]
    fn histogram_rank_walks_the_buckets() {
        let counts = [2, 0, 5, 3];
        assert_eq!(bucket_at_rank(&counts, 10, 0.1), Some(0));
        assert_eq!(bucket_at_rank(&counts, 10, 0.2), Some(0));
        assert_eq!(bucket_at_rank(&counts, 10, 0.3), Some(2));
        assert_eq!(bucket_at_rank(&counts, 10, 0.7), Some(2));
        assert_eq!(bucket_at_rank(&counts, 10, 0.71), Some(3));
        assert_eq!(bucket_at_rank(&counts, 0, 0.5), None);
        assert_eq!(bucket_at_rank(&counts, 11, 1.0), None);
    }
}
