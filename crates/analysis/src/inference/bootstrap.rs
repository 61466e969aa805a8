//! Percentile bootstrap intervals, drawn from a seeded ChaCha8 stream so that the same data
//! give the same interval on every machine and in every run.
//!
//! Each interval resamples the values (or the pairs) with replacement
//! [`BOOTSTRAP_RESAMPLES`] times and reports the 2.5% and 97.5% quantiles of the statistic over
//! the resamples, by quiclab's one quantile definition (the nearest rank, `quantile` crate).
//! The percentile interval, not BCa: it needs no jackknife and is what a reader can redo by hand.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::mean;

/// Resamples per interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2_000;

/// The seed every interval of `compare` and `comparisons.csv` is drawn with: one fixed seed, so
/// an interval depends on its data only, not on where it stands in a table.
pub const BOOTSTRAP_SEED: u64 = 0;

/// 95% percentile interval of `statistic` over [`BOOTSTRAP_RESAMPLES`] resamples; None when a
/// resample's statistic is not finite (a ratio whose denominator came out 0).
fn interval(seed: u64, mut statistic: impl FnMut(&mut ChaCha8Rng) -> f64) -> Option<(f64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut stats = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        let s = statistic(&mut rng);
        if !s.is_finite() {
            return None;
        }
        stats.push(s);
    }
    stats.sort_by(f64::total_cmp);
    Some((
        quantile::quantile(&stats, 0.025),
        quantile::quantile(&stats, 0.975),
    ))
}

/// Sum of `n` values of `values` drawn with replacement.
fn resampled_sum(rng: &mut ChaCha8Rng, values: &[f64]) -> f64 {
    (0..values.len())
        .map(|_| values[rng.random_range(0..values.len())])
        .sum()
}

/// 95% percentile bootstrap interval of the mean of `values`; None below two values or for a
/// value that is not finite.
pub fn bootstrap_mean_ci(values: &[f64], seed: u64) -> Option<(f64, f64)> {
    if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len() as f64;
    interval(seed, |rng| resampled_sum(rng, values) / n).map(|(lo, hi)| {
        // Sums in another order can stray an ulp past the sample's range; the mean of a
        // resample never does.
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        (lo.clamp(min, max), hi.clamp(min, max))
    })
}

/// 95% interval of mean(variant) / mean(baseline), pairs resampled together (one index draws
/// both values of a repetition).
pub(crate) fn paired_ratio_ci(variant: &[f64], baseline: &[f64], seed: u64) -> Option<(f64, f64)> {
    if variant.len() < 2 || variant.len() != baseline.len() || mean(baseline) == 0.0 {
        return None;
    }
    let n = variant.len();
    interval(seed, |rng| {
        let (mut v, mut b) = (0.0, 0.0);
        for _ in 0..n {
            let i = rng.random_range(0..n);
            v += variant[i];
            b += baseline[i];
        }
        v / b
    })
}

/// 95% interval of mean(a) / mean(b), each sample resampled on its own.
pub(crate) fn unpaired_ratio_ci(a: &[f64], b: &[f64], seed: u64) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 || mean(b) == 0.0 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    interval(seed, |rng| {
        let sa = resampled_sum(rng, a) / na;
        sa / (resampled_sum(rng, b) / nb)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_interval_other_seed_other_interval() {
        let v = [3.1, 2.7, 4.4, 3.9, 3.3, 2.2, 5.0, 3.6];
        let a = bootstrap_mean_ci(&v, 7).unwrap();
        assert_eq!(bootstrap_mean_ci(&v, 7), Some(a));
        assert_ne!(bootstrap_mean_ci(&v, 8), Some(a));
    }

    #[test]
    fn mean_interval_is_near_the_normal_one() {
        // 40 values 0..39: mean 19.5, standard error sd/√n = 11.69/6.32 = 1.85; the percentile
        // interval is close to 19.5 ± 1.96 · 1.85 (within the Monte Carlo error of 2,000 draws).
        let v: Vec<f64> = (0..40).map(f64::from).collect();
        let (lo, hi) = bootstrap_mean_ci(&v, BOOTSTRAP_SEED).unwrap();
        assert!(
            (lo - 15.9).abs() < 0.5 && (hi - 23.1).abs() < 0.5,
            "{lo} {hi}"
        );
    }

    #[test]
    fn ratio_interval_of_a_constant_ratio_is_that_ratio() {
        let b = [1.0, 2.0, 3.0, 4.0];
        let v = [2.0, 4.0, 6.0, 8.0];
        assert_eq!(paired_ratio_ci(&v, &b, 1), Some((2.0, 2.0)));
        // Unpaired, the same numbers vary the ratio.
        let (lo, hi) = unpaired_ratio_ci(&v, &b, 1).unwrap();
        assert!(lo < 2.0 && hi > 2.0, "{lo} {hi}");
    }

    #[test]
    fn a_zero_denominator_or_too_few_values_gives_none() {
        assert_eq!(paired_ratio_ci(&[1.0, 2.0], &[0.0, 0.0], 1), None);
        // Half the baselines are 0: some resample draws only those.
        assert_eq!(paired_ratio_ci(&[1.0, 2.0], &[0.0, 1.0], 1), None);
        assert_eq!(bootstrap_mean_ci(&[1.0], 1), None);
        assert_eq!(bootstrap_mean_ci(&[1.0, f64::NAN], 1), None);
    }
}
