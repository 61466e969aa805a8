//! Descriptive statistics: mean with Student-t confidence interval, Jain's fairness index and
//! least-squares line fits.
//!
//! Non-finite inputs are errors rather than silently filtered: a NaN goodput means a run
//! measured nothing, and hiding it would shrink n and bias the mean without anyone noticing.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Why a set of values could not be summarised.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// There were no values at all.
    #[error("no values to summarise")]
    Empty,
    /// A value was NaN or infinite.
    #[error("value #{index} is not finite ({value})")]
    NonFinite {
        /// Position of the offending value in the input.
        index: usize,
        /// The offending value.
        value: f64,
    },
}

/// n, mean, sample standard deviation, 95% confidence interval of the mean, and order statistics.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); 0 when n = 1.
    pub sd: f64,
    /// Lower end of the 95% Student-t confidence interval of the mean.
    pub ci95_low: f64,
    /// Upper end of the 95% Student-t confidence interval of the mean.
    pub ci95_high: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Median (`quantile::median`: the mean of the two middle values when n is even).
    pub median: f64,
}

impl Summary {
    /// Half-width of the confidence interval, the "±" part of "mean ± ci".
    pub fn ci95_half_width(&self) -> f64 {
        (self.ci95_high - self.ci95_low) / 2.0
    }

    /// The 95% interval as quiclab shows and writes it: None for a single value (no spread to
    /// estimate, so no interval, rather than a zero-width one); otherwise the Student-t
    /// interval, its lower end clipped at 0 when no value is negative. That rule (every
    /// observation ≥ 0) marks the quantities that cannot be negative: rates, bytes, times,
    /// counts. The symmetric interval of a few values near 0 would reach below 0, a value
    /// such a metric cannot take.
    pub fn ci95(&self) -> Option<(f64, f64)> {
        if self.n < 2 {
            return None;
        }
        let low = if self.min >= 0.0 {
            self.ci95_low.max(0.0)
        } else {
            self.ci95_low
        };
        Some((low, self.ci95_high))
    }
}

/// Summarises `values`.
///
/// With n = 1 there is no spread to estimate: sd is reported as 0 and the interval collapses
/// to the mean. Callers that present results must still show n, so a single run is visible as such.
pub fn summarize(values: &[f64]) -> Result<Summary, StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty);
    }
    if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NonFinite { index, value });
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = quantile::median(&sorted).unwrap_or(f64::NAN);
    let (sd, half) = if n == 1 {
        (0.0, 0.0)
    } else {
        let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        let sd = (ss / (n - 1) as f64).sqrt();
        (sd, t_975(n - 1) * sd / (n as f64).sqrt())
    };
    Ok(Summary {
        n,
        mean,
        sd,
        ci95_low: mean - half,
        ci95_high: mean + half,
        min: sorted[0],
        max: sorted[n - 1],
        median,
    })
}

/// The 0.975 quantile of Student's t with `dof` ≥ 1 degrees of freedom.
fn t_975(dof: usize) -> f64 {
    match StudentsT::new(0.0, 1.0, dof as f64) {
        Ok(t) => t.inverse_cdf(0.975),
        // Unreachable for dof ≥ 1; the normal quantile is the honest limit if it ever happens.
        Err(_) => 1.959_963_984_540_054,
    }
}

/// A distribution-free 95% confidence interval for the median: the order statistics
/// (x₍ⱼ₎, x₍ₖ₎) with the narrowest symmetric rank pair whose binomial coverage
/// P(j ≤ B < k), B ~ Bin(n, ½), is at least 95%.
///
/// Medians are what sim-vs-emu comparisons report (download times are skewed by the odd
/// retransmission timeout); the interval needs no normality. None for n < 6: with fewer values no
/// rank pair reaches 95% coverage (the widest pair, min..max, covers 1 − 2·½ⁿ = 93.75% at n = 5).
pub fn median_ci95(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 6 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    // pmf of Bin(n, 1/2) computed in log space so large n does not overflow.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0_f64;
    let mut pmf = Vec::with_capacity(n + 1);
    for i in 0..=n {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        pmf.push((ln_choose + ln_half_n).exp());
    }
    // Widen a symmetric rank window [j, n - 1 - j] (0-based) until it covers 95%:
    // the interval between x₍ⱼ₎ and x₍ₙ₋₁₋ⱼ₎ (0-based) covers the median with probability
    // P(j + 1 ≤ B ≤ n − 1 − j) where B counts values below the median.
    let mut j = n / 2;
    loop {
        let (lo, hi) = (j + 1, n - 1 - j);
        let coverage: f64 = if lo <= hi {
            pmf[lo..=hi].iter().sum()
        } else {
            0.0
        };
        if coverage >= 0.95 {
            return Some((sorted[j], sorted[n - 1 - j]));
        }
        if j == 0 {
            return None;
        }
        j -= 1;
    }
}

/// Jain's fairness index: the one implementation lives in `results` (the engines fill each
/// run's fairness with it); re-exported here for the summaries and `validate`.
pub use results::jain_index;

/// A least-squares line y = slope·x + intercept and its coefficient of determination.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Fit {
    /// Slope of the fitted line.
    pub slope: f64,
    /// Value of the line at x = 0.
    pub intercept: f64,
    /// Coefficient of determination R² = 1 − SS_res / SS_tot.
    pub r2: f64,
}

/// Ordinary least-squares fit of `ys` against `xs`.
///
/// None when the lengths differ, there are fewer than two points, any value is non-finite, or all
/// xs are equal (the slope is undefined). When all ys are equal the horizontal line fits exactly,
/// so R² is reported as 1 rather than 0/0.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    if xs.len() != ys.len() || xs.len() < 2 {
        return None;
    }
    if xs.iter().chain(ys).any(|v| !v.is_finite()) {
        return None;
    }
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_tot: f64 = ys.iter().map(|y| (y - my) * (y - my)).sum();
    let ss_res: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| {
            let e = y - (slope * x + intercept);
            e * e
        })
        .sum();
    let r2 = if ss_tot == 0.0 {
        1.0
    } else {
        1.0 - ss_res / ss_tot
    };
    Some(Fit {
        slope,
        intercept,
        r2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn ci95_matches_hand_computation() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(s.n, 5);
        assert!(close(s.mean, 3.0, 1e-12));
        // sd = sqrt(10/4); t(0.975, 4) = 2.776445; half = 2.776445 · 1.581139 / sqrt(5).
        assert!(close(s.sd, 1.581_138_8, 1e-6), "sd {}", s.sd);
        assert!(
            close(s.ci95_half_width(), 1.963_243, 1e-4),
            "half {}",
            s.ci95_half_width()
        );
        assert!(close(s.ci95_low, 3.0 - 1.963_243, 1e-4));
        assert!(close(s.ci95_high, 3.0 + 1.963_243, 1e-4));
        assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 5.0));
    }

    #[test]
    fn median_ci_matches_order_statistic_tables() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        // n = 10: the classical 95% interval is (x₍₂₎, x₍₉₎) with coverage 97.85%.
        assert_eq!(median_ci95(&v), Some((2.0, 9.0)));
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        // n = 20: (x₍₆₎, x₍₁₅₎), coverage 95.86%.
        assert_eq!(median_ci95(&v), Some((6.0, 15.0)));
        let v: Vec<f64> = (1..=6).map(f64::from).collect();
        // n = 6: only min..max reaches 95% (96.9%).
        assert_eq!(median_ci95(&v), Some((1.0, 6.0)));
        assert_eq!(median_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
        assert_eq!(median_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0, f64::NAN]), None);
        // Order of the input does not matter.
        let shuffled = [9.0, 1.0, 5.0, 3.0, 10.0, 2.0, 8.0, 4.0, 7.0, 6.0];
        assert_eq!(median_ci95(&shuffled), Some((2.0, 9.0)));
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert!(close(t_975(1), 12.7062, 1e-3), "{}", t_975(1));
        assert!(close(t_975(9), 2.2622, 1e-4), "{}", t_975(9));
        assert!(close(t_975(99), 1.9842, 1e-4), "{}", t_975(99));
    }

    #[test]
    fn median_of_even_count_is_mean_of_middle_pair() {
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.median, 2.5);
    }

    #[test]
    fn single_value_collapses_interval() {
        let s = summarize(&[7.5]).unwrap();
        assert_eq!(
            (s.sd, s.ci95_low, s.ci95_high, s.median),
            (0.0, 7.5, 7.5, 7.5)
        );
    }

    #[test]
    fn shown_interval_is_absent_for_one_value_and_clipped_for_non_negative_metrics() {
        assert_eq!(summarize(&[7.5]).unwrap().ci95(), None);
        // mean 0.4, half-width 2.776 · 0.5477 / √5 = 0.68: the raw interval starts at −0.28.
        let s = summarize(&[0.0, 0.0, 1.0, 0.0, 1.0]).unwrap();
        assert!(s.ci95_low < 0.0);
        assert_eq!(s.ci95(), Some((0.0, s.ci95_high)));
        // A metric with a negative value keeps its negative lower end.
        let s = summarize(&[-0.1, 0.0, 1.0, 0.0, 1.0]).unwrap();
        assert_eq!(s.ci95(), Some((s.ci95_low, s.ci95_high)));
        assert!(s.ci95_low < 0.0);
    }

    #[test]
    fn empty_and_nan_are_errors() {
        assert_eq!(summarize(&[]), Err(StatsError::Empty));
        assert!(matches!(
            summarize(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        assert!(matches!(
            summarize(&[f64::INFINITY]),
            Err(StatsError::NonFinite { index: 0, .. })
        ));
    }

    #[test]
    fn exact_line_has_r2_one() {
        let xs = [0.0, 1.0, 2.0, 3.0];
        let ys: Vec<f64> = xs.iter().map(|x| 2.5 * x - 1.0).collect();
        let f = linear_fit(&xs, &ys).unwrap();
        assert!(close(f.slope, 2.5, 1e-12) && close(f.intercept, -1.0, 1e-12));
        assert!(close(f.r2, 1.0, 1e-12));
    }

    #[test]
    fn noisy_line_has_r2_below_one() {
        // Hand-computed: mx = 1.5, my = 1.5, sxy = 4, sxx = 5 → slope 0.8, intercept 0.3;
        // residuals ±0.3, ±0.9 → ss_res = 1.8, ss_tot = 5 → R² = 0.64.
        let f = linear_fit(&[0.0, 1.0, 2.0, 3.0], &[0.0, 2.0, 1.0, 3.0]).unwrap();
        assert!(close(f.slope, 0.8, 1e-12) && close(f.intercept, 0.3, 1e-12));
        assert!(close(f.r2, 0.64, 1e-12), "{}", f.r2);
    }

    #[test]
    fn degenerate_fits_are_none() {
        assert_eq!(linear_fit(&[1.0], &[1.0]), None);
        assert_eq!(linear_fit(&[1.0, 2.0], &[1.0]), None);
        assert_eq!(linear_fit(&[2.0, 2.0], &[1.0, 3.0]), None);
        assert_eq!(linear_fit(&[1.0, f64::NAN], &[1.0, 3.0]), None);
    }
}
