//! Student-t tests and intervals: the one-sample test of paired differences
//! (`scipy.stats.ttest_rel`) and Welch's test of two independent samples
//! (`scipy.stats.ttest_ind(equal_var=False)`), each with its 95% interval of the difference.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{mean, variance};

/// A t-test's two-sided p-value and 95% interval of the difference of means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TTest {
    /// Degrees of freedom.
    pub dof: f64,
    /// Two-sided p-value; None when the statistic is 0/0 (no difference and no spread, where
    /// scipy gives NaN).
    pub p: Option<f64>,
    /// 95% interval of the difference of means; None without spread (its width would be 0).
    pub ci: Option<(f64, f64)>,
}

/// Mean of `d` against 0 with n − 1 degrees of freedom; None below two values.
///
/// With every difference equal (no spread) the statistic is ±∞ and the p-value 0, as in scipy,
/// unless the differences are all 0 (0/0: no p-value).
pub fn one_sample(d: &[f64]) -> Option<TTest> {
    let n = d.len() as f64;
    let var = variance(d)?;
    let se = (var / n).sqrt();
    Some(test(mean(d), se, n - 1.0))
}

/// Welch's test of mean(a) − mean(b) with the Welch–Satterthwaite degrees of freedom; None
/// when either sample has fewer than two values.
pub fn welch(a: &[f64], b: &[f64]) -> Option<TTest> {
    let (va, vb) = (variance(a)? / a.len() as f64, variance(b)? / b.len() as f64);
    let se2 = va + vb;
    let dof = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    Some(test(mean(a) - mean(b), se2.sqrt(), dof))
}

fn test(diff: f64, se: f64, dof: f64) -> TTest {
    let t = diff / se;
    let dist = if dof.is_finite() && dof > 0.0 {
        StudentsT::new(0.0, 1.0, dof).ok()
    } else {
        None
    };
    let p = if se == 0.0 {
        (diff != 0.0).then_some(0.0)
    } else {
        dist.map(|d| (2.0 * d.sf(t.abs())).min(1.0))
    };
    let ci = dist.filter(|_| se > 0.0).map(|d| {
        let q = d.inverse_cdf(0.975);
        (diff - q * se, diff + q * se)
    });
    TTest { dof, p, ci }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
    }

    #[test]
    fn one_sample_matches_scipy() {
        // scipy.stats.ttest_1samp([1, 2, 3, 4, 6], 0): pvalue and confidence_interval()
        let t = one_sample(&[1.0, 2.0, 3.0, 4.0, 6.0]).unwrap();
        assert_eq!(t.dof, 4.0);
        assert!(close(t.p.unwrap(), 0.020_475_874_420_910_672), "{:?}", t.p);
        let (lo, hi) = t.ci.unwrap();
        assert!(close(lo, 0.811_611_611_900_020_1), "{lo}");
        assert!(close(hi, 5.588_388_388_099_981), "{hi}");
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy.stats.ttest_ind([1, 2, 3, 4], [2, 4, 6, 8, 10, 30], equal_var=False)
        let t = welch(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0, 8.0, 10.0, 30.0]).unwrap();
        assert!(close(t.dof, 5.238_229_023_145_547), "{}", t.dof);
        assert!(close(t.p.unwrap(), 0.132_497_619_737_568_6), "{:?}", t.p);
        let (lo, hi) = t.ci.unwrap();
        assert!(close(lo, -18.183_572_647_916_712), "{lo}");
        assert!(close(hi, 3.183_572_647_916_712), "{hi}");
    }

    #[test]
    fn no_spread_follows_scipy() {
        // scipy.stats.ttest_rel([2, 3], [1, 2]).pvalue is 0.0 (t = inf);
        // ttest_rel([1, 2], [1, 2]).pvalue is nan.
        assert_eq!(one_sample(&[1.0, 1.0]).unwrap().p, Some(0.0));
        assert_eq!(one_sample(&[1.0, 1.0]).unwrap().ci, None);
        assert_eq!(one_sample(&[0.0, 0.0]).unwrap().p, None);
        assert_eq!(one_sample(&[1.0]), None);
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
    }
}
