//! Inference for comparisons: a variant against a baseline over paired repetitions, and two
//! independent samples (simulator against emulator), with the p-values adjusted for the number
//! of comparisons a table shows.
//!
//! Conventions are scipy's (1.18), so a number here can be checked with one scipy call:
//! two-sided tests, `ttest_rel`, `ttest_ind(equal_var=False)`, `wilcoxon` and `mannwhitneyu`
//! with their default `method` (see [`rank`] for what "auto" picks). Every function returns
//! `None` where the quantity does not exist (fewer than two values, no spread, a zero
//! denominator): never a 0 that would read as a measurement.
//!
//! `docs/statistics.md` describes every interval and test for users.

pub mod bootstrap;
pub mod effect;
pub mod holm;
pub mod rank;
pub mod ttest;

pub use bootstrap::{bootstrap_mean_ci, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED};
pub use holm::holm;

use serde::Serialize;

/// Why two samples could not be compared at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InferenceError {
    /// Paired samples of different lengths.
    #[error("paired samples differ in length ({0} and {1})")]
    Length(usize, usize),
    /// A sample has no values.
    #[error("a sample has no values")]
    Empty,
    /// A value is NaN or infinite.
    #[error("value {0} is not finite")]
    NonFinite(f64),
}

/// A variant compared with its baseline over paired repetitions (variant − baseline).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paired {
    /// Number of pairs.
    pub n: usize,
    /// Mean of the differences (variant − baseline).
    pub diff: f64,
    /// Student-t 95% interval of the mean difference (n − 1 degrees of freedom).
    pub diff_ci: Option<(f64, f64)>,
    /// Mean of the variant over mean of the baseline (None when the baseline's mean is 0).
    pub ratio: Option<f64>,
    /// Percentile bootstrap 95% interval of the ratio, pairs resampled together.
    pub ratio_ci: Option<(f64, f64)>,
    /// Paired t-test p-value (`scipy.stats.ttest_rel`).
    pub p_t: Option<f64>,
    /// Wilcoxon signed-rank p-value (`scipy.stats.wilcoxon`).
    pub p_wilcoxon: Option<f64>,
    /// Cohen's d_z: mean difference over the standard deviation of the differences.
    pub effect_size: Option<f64>,
}

/// Two independent samples compared (a − b).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unpaired {
    /// Size of `a`.
    pub n_a: usize,
    /// Size of `b`.
    pub n_b: usize,
    /// Mean of `a` minus mean of `b`.
    pub diff: f64,
    /// Welch 95% interval of the difference of means.
    pub diff_ci: Option<(f64, f64)>,
    /// Mean of `a` over mean of `b` (None when `b`'s mean is 0).
    pub ratio: Option<f64>,
    /// Percentile bootstrap 95% interval of the ratio, each sample resampled on its own.
    pub ratio_ci: Option<(f64, f64)>,
    /// Welch t-test p-value (`scipy.stats.ttest_ind(equal_var=False)`).
    pub p_welch: Option<f64>,
    /// Mann–Whitney U p-value (`scipy.stats.mannwhitneyu`).
    pub p_mann_whitney: Option<f64>,
    /// Hedges' g: the difference over the pooled standard deviation, bias-corrected.
    pub effect_size: Option<f64>,
}

fn check(values: &[f64]) -> Result<(), InferenceError> {
    if values.is_empty() {
        return Err(InferenceError::Empty);
    }
    match values.iter().find(|v| !v.is_finite()) {
        Some(&v) => Err(InferenceError::NonFinite(v)),
        None => Ok(()),
    }
}

pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Relative spread below which values count as equal: differences of two simulated metrics
/// that are the same in every repetition come out equal only up to rounding (1e-16 of the
/// value), and a test or effect size on that rounding would report t ≈ 10¹⁵ instead of "no
/// spread".
const ROUNDING: f64 = 1e-12;

/// Sample variance (divisor n − 1); None below two values; 0 when the values agree to within
/// [`ROUNDING`] of their magnitude.
pub(crate) fn variance(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values);
    let var = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (values.len() - 1) as f64;
    let scale = values.iter().fold(0.0_f64, |a, v| a.max(v.abs()));
    Some(if var.sqrt() <= ROUNDING * scale {
        0.0
    } else {
        var
    })
}

/// `num / den` when `den` is not 0.
fn ratio(num: f64, den: f64) -> Option<f64> {
    (den != 0.0).then(|| num / den).filter(|r| r.is_finite())
}

/// Compares `variant` with `baseline`, value `i` of one paired with value `i` of the other
/// (the same repetition), with bootstrap resamples drawn from `seed`.
pub fn paired(variant: &[f64], baseline: &[f64], seed: u64) -> Result<Paired, InferenceError> {
    if variant.len() != baseline.len() {
        return Err(InferenceError::Length(variant.len(), baseline.len()));
    }
    check(variant)?;
    check(baseline)?;
    let d: Vec<f64> = variant.iter().zip(baseline).map(|(v, b)| v - b).collect();
    let t = ttest::one_sample(&d);
    Ok(Paired {
        n: d.len(),
        diff: mean(&d),
        diff_ci: t.and_then(|t| t.ci),
        ratio: ratio(mean(variant), mean(baseline)),
        ratio_ci: bootstrap::paired_ratio_ci(variant, baseline, seed),
        p_t: t.and_then(|t| t.p),
        p_wilcoxon: rank::wilcoxon(&d),
        effect_size: effect::cohen_dz(&d),
    })
}

/// Compares two independent samples `a` and `b` (a − b), with bootstrap resamples drawn from
/// `seed`.
pub fn unpaired(a: &[f64], b: &[f64], seed: u64) -> Result<Unpaired, InferenceError> {
    check(a)?;
    check(b)?;
    let t = ttest::welch(a, b);
    Ok(Unpaired {
        n_a: a.len(),
        n_b: b.len(),
        diff: mean(a) - mean(b),
        diff_ci: t.and_then(|t| t.ci),
        ratio: ratio(mean(a), mean(b)),
        ratio_ci: bootstrap::unpaired_ratio_ci(a, b, seed),
        p_welch: t.and_then(|t| t.p),
        p_mann_whitney: rank::mann_whitney(a, b),
        effect_size: effect::hedges_g(a, b),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
    }

    #[test]
    fn differences_equal_but_for_rounding_have_no_spread() {
        // The same two values in every repetition, as a deterministic path gives them.
        let b = [6.292_3, 6.292_3 * (1.0 + 2e-16), 6.292_3];
        let v = [7.416_1, 7.416_1, 7.416_1 * (1.0 - 2e-16)];
        let p = paired(&v, &b, BOOTSTRAP_SEED).unwrap();
        assert_eq!(p.effect_size, None, "{p:?}");
        assert_eq!(p.diff_ci, None, "{p:?}");
        assert_eq!(p.p_t, Some(0.0), "a constant non-zero difference");
        // A real spread of one part in 10⁶ is kept.
        let spread = paired(
            &[1.0, 1.000_001, 0.999_999],
            &[0.5, 0.5, 0.5],
            BOOTSTRAP_SEED,
        )
        .unwrap();
        assert!(spread.effect_size.is_some(), "{spread:?}");
    }

    #[test]
    fn paired_matches_scipy() {
        let b = [10.1, 9.8, 10.4, 10.0, 9.7, 10.2, 10.3, 9.9];
        let v = [10.9, 10.1, 11.0, 10.2, 10.4, 10.6, 11.2, 10.0];
        let p = paired(&v, &b, BOOTSTRAP_SEED).unwrap();
        assert_eq!(p.n, 8);
        assert!(close(p.diff, 0.5), "{}", p.diff);
        // scipy.stats.ttest_rel(v, b).pvalue
        assert!(
            close(p.p_t.unwrap(), 0.001_898_465_720_770_195_5),
            "{:?}",
            p.p_t
        );
        // scipy.stats.ttest_rel(v, b).confidence_interval()
        let (lo, hi) = p.diff_ci.unwrap();
        assert!(close(lo, 0.255_238_136_478_519_1), "{lo}");
        assert!(close(hi, 0.744_761_863_521_480_4), "{hi}");
        // scipy.stats.wilcoxon(v, b).pvalue (no ties, n ≤ 50: exact)
        assert!(
            close(p.p_wilcoxon.unwrap(), 0.0078125),
            "{:?}",
            p.p_wilcoxon
        );
        // d = v - b; d.mean() / d.std(ddof=1)
        assert!(
            close(p.effect_size.unwrap(), 1.707_825_127_659_931_2),
            "{:?}",
            p.effect_size
        );
        let r = p.ratio.unwrap();
        assert!(close(r, 84.4 / 80.4), "{r}");
        let (lo, hi) = p.ratio_ci.unwrap();
        assert!(lo < r && r < hi && lo > 1.0, "{lo} {r} {hi}");
    }

    #[test]
    fn unpaired_matches_scipy() {
        let a = [1.2, 3.4, 2.2, 5.1, 4.4, 3.3];
        let b = [2.0, 2.5, 1.9, 2.2, 2.8, 2.1, 2.4];
        let u = unpaired(&a, &b, BOOTSTRAP_SEED).unwrap();
        // scipy.stats.ttest_ind(a, b, equal_var=False).pvalue
        assert!(
            close(u.p_welch.unwrap(), 0.148_733_130_457_199_52),
            "{:?}",
            u.p_welch
        );
        // scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval()
        let (lo, hi) = u.diff_ci.unwrap();
        assert!(close(lo, -0.490_444_725_833_061_1), "{lo}");
        assert!(close(hi, 2.480_920_916_309_25), "{hi}");
        // scipy.stats.mannwhitneyu(a, b).pvalue (2.2 in both samples is a tie: normal approximation)
        assert!(
            close(u.p_mann_whitney.unwrap(), 0.152_562_723_636_577_1),
            "{:?}",
            u.p_mann_whitney
        );
        assert_eq!((u.n_a, u.n_b), (6, 7));
    }

    #[test]
    fn too_few_values_give_no_interval_and_no_test() {
        let p = paired(&[2.0], &[1.0], 0).unwrap();
        assert_eq!((p.n, p.diff), (1, 1.0));
        assert_eq!((p.diff_ci, p.p_t, p.effect_size), (None, None, None));
        let u = unpaired(&[2.0], &[1.0, 3.0], 0).unwrap();
        assert_eq!((u.diff_ci, u.p_welch, u.effect_size), (None, None, None));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert_eq!(
            paired(&[1.0], &[1.0, 2.0], 0),
            Err(InferenceError::Length(1, 2))
        );
        assert_eq!(paired(&[], &[], 0), Err(InferenceError::Empty));
        assert!(matches!(
            unpaired(&[f64::NAN], &[1.0], 0),
            Err(InferenceError::NonFinite(_))
        ));
    }
}
