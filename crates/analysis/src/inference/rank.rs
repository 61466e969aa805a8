//! Rank tests with scipy's default method choice (scipy 1.18, `method="auto"`):
//!
//! - Wilcoxon signed-rank (`scipy.stats.wilcoxon(d)`, zero differences dropped, no continuity
//!   correction): more than 50 differences → normal approximation (with the tie correction);
//!   otherwise no ties and no zeros → the exact null distribution; ties or zeros with at most
//!   13 differences → the exact permutation distribution of the signs (what scipy's
//!   permutation test enumerates); ties or zeros with 14 to 50 → normal approximation.
//! - Mann–Whitney U (`scipy.stats.mannwhitneyu(a, b)`, continuity correction on): both
//!   samples larger than 8 → normal approximation (with the tie correction); otherwise ties
//!   → normal approximation; otherwise the exact null distribution.
//!
//! Both are two-sided. A sample of fewer than two values has no test (None), and so has the
//! normal approximation when every value is tied (zero variance, NaN in scipy).

use statrs::distribution::{ContinuousCDF, Normal};

/// Average ranks (1-based) of `values` and the sizes of the groups of equal values.
fn average_ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut groups = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Ranks start+1 ..= end share their average.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        groups.push(end - start);
        start = end;
    }
    (ranks, groups)
}

/// Σ (t³ − t) over the tie groups.
fn tie_term(groups: &[usize]) -> f64 {
    groups.iter().map(|&t| (t * t * t - t) as f64).sum()
}

/// Two-sided p-value of a standard normal statistic; None when it is not a number.
fn normal_p(z: f64) -> Option<f64> {
    if !z.is_finite() {
        return None;
    }
    let n = Normal::new(0.0, 1.0).ok()?;
    Some((2.0 * n.sf(z.abs())).min(1.0))
}

/// Two-sided p-value of the Wilcoxon signed-rank test of the paired differences `d`.
pub fn wilcoxon(d: &[f64]) -> Option<f64> {
    if d.len() < 2 || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let nonzero: Vec<f64> = d.iter().copied().filter(|&x| x != 0.0).collect();
    let zeros = d.len() - nonzero.len();
    let abs: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let (ranks, groups) = average_ranks(&abs);
    let ties = groups.iter().any(|&t| t > 1);
    let exact = d.len() <= 50 && ((!ties && zeros == 0) || d.len() <= 13);
    if exact {
        // Ranks are multiples of ½: doubled, the statistic is an integer.
        let doubled: Vec<usize> = ranks.iter().map(|r| (r * 2.0).round() as usize).collect();
        let observed: usize = nonzero
            .iter()
            .zip(&doubled)
            .filter(|(x, _)| **x > 0.0)
            .map(|(_, r)| r)
            .sum();
        return Some(sign_flip_p(&doubled, observed));
    }
    let n = nonzero.len() as f64;
    let r_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let mean = n * (n + 1.0) / 4.0;
    let se = ((n * (n + 1.0) * (2.0 * n + 1.0) - tie_term(&groups) / 2.0) / 24.0).sqrt();
    if se == 0.0 {
        return None;
    }
    normal_p((r_plus - mean) / se)
}

/// P-value of `observed`, a sum of some of `weights`, when each weight is in the sum with
/// probability ½ independently: 2·min(P(S ≤ observed), P(S ≥ observed)), at most 1.
fn sign_flip_p(weights: &[usize], observed: usize) -> f64 {
    let total: usize = weights.iter().sum();
    // counts[s]: subsets with sum s. At most 2⁵⁰ subsets: exact in f64.
    let mut counts = vec![0.0_f64; total + 1];
    counts[0] = 1.0;
    let mut reach = 0;
    for &w in weights {
        for s in (0..=reach).rev() {
            if counts[s] != 0.0 {
                counts[s + w] += counts[s];
            }
        }
        reach += w;
    }
    let all: f64 = counts.iter().sum();
    let observed = observed.min(total);
    let le: f64 = counts[..=observed].iter().sum();
    let ge: f64 = counts[observed..].iter().sum();
    (2.0 * le.min(ge) / all).min(1.0)
}

/// Two-sided p-value of the Mann–Whitney U test of `a` against `b`.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (ranks, groups) = average_ranks(&all);
    let r1: f64 = ranks[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let ties = groups.iter().any(|&t| t > 1);
    if (n1 <= 8 || n2 <= 8) && !ties {
        // Without ties U is an integer.
        if let Some(p) = u_exact_sf(n1, n2, u1.max(u2).round() as usize) {
            return Some((2.0 * p).min(1.0));
        }
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let n = f1 + f2;
    let s = (f1 * f2 / 12.0 * ((n + 1.0) - tie_term(&groups) / (n * (n - 1.0)))).sqrt();
    let mut num = u1 - f1 * f2 / 2.0;
    num -= 0.5
        * if num > 0.0 {
            1.0
        } else if num < 0.0 {
            -1.0
        } else {
            0.0
        };
    if s == 0.0 {
        return None;
    }
    normal_p(num / s)
}

/// P(U ≥ u) under the null hypothesis for samples of `n1` and `n2` values without ties. The
/// frequencies of U are the coefficients of the Gaussian binomial coefficient
/// ∏ᵢ₌₁..ₘ (1 − q^(k+i)) / (1 − q^i) with m = min(n1, n2), k = max(n1, n2), computed in
/// integers; None if they overflow (beyond any sample the exact test is chosen for).
fn u_exact_sf(n1: usize, n2: usize, u: usize) -> Option<f64> {
    let (m, k) = (n1.min(n2), n1.max(n2));
    let degree = m.checked_mul(k)?;
    let mut c = vec![0_i128; degree + 1];
    c[0] = 1;
    for i in 1..=m {
        let up = k + i;
        for j in (up..=degree).rev() {
            c[j] = c[j].checked_sub(c[j - up])?;
        }
        for j in i..=degree {
            c[j] = c[j].checked_add(c[j - i])?;
        }
    }
    let total = c.iter().try_fold(0_i128, |acc, x| acc.checked_add(*x))?;
    let tail = c
        .get(u.min(degree + 1)..)
        .unwrap_or_default()
        .iter()
        .try_fold(0_i128, |acc, x| acc.checked_add(*x))?;
    Some(tail as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() <= 1e-10 * b.abs().max(1e-300))
    }

    #[test]
    fn wilcoxon_matches_scipy_in_each_method() {
        // scipy.stats.wilcoxon([0.8, 0.3, 0.6, 0.2, 0.7, 0.4, 0.9, -0.1]).pvalue: exact
        let p = wilcoxon(&[0.8, 0.3, 0.6, 0.2, 0.7, 0.4, 0.9, -0.1]);
        assert!(close(p, 0.015_625), "{p:?}");
        // scipy.stats.wilcoxon([1, -2, 2, 0, 3, 0]).pvalue: ties and zeros, n ≤ 13: permutation
        let p = wilcoxon(&[1.0, -2.0, 2.0, 0.0, 3.0, 0.0]);
        assert!(close(p, 0.5), "{p:?}");
        // d = np.arange(1, 15.); d[3] = -4; d[10] = 10; scipy.stats.wilcoxon(d).pvalue:
        // ties, 14 values: normal approximation
        let mut d: Vec<f64> = (1..=14).map(f64::from).collect();
        d[3] = -4.0;
        d[10] = 10.0;
        let p = wilcoxon(&d);
        assert!(close(p, REF_WILCOXON_ASYMPTOTIC_TIES), "{p:?}");
        // scipy.stats.wilcoxon(np.arange(-20, 41) + 0.5).pvalue: 61 values: normal approximation
        let d: Vec<f64> = (-20..=40).map(|x| f64::from(x) + 0.5).collect();
        let p = wilcoxon(&d);
        assert!(close(p, REF_WILCOXON_ASYMPTOTIC_LARGE), "{p:?}");
    }

    const REF_WILCOXON_ASYMPTOTIC_TIES: f64 = 0.002_323_636_405_841_994;
    const REF_WILCOXON_ASYMPTOTIC_LARGE: f64 = 0.000_119_756_315_551_904_66;

    #[test]
    fn wilcoxon_edge_cases() {
        // scipy.stats.wilcoxon([0, 0, 0]).pvalue is 1.0; with 15 zeros it is nan.
        assert_eq!(wilcoxon(&[0.0, 0.0, 0.0]), Some(1.0));
        assert_eq!(wilcoxon(&[0.0; 15]), None);
        assert_eq!(wilcoxon(&[1.0]), None);
    }

    #[test]
    fn mann_whitney_matches_scipy_in_each_method() {
        // scipy.stats.mannwhitneyu([1, 4, 7, 9], [2, 3, 5, 6, 8, 10, 11]).pvalue: exact
        let p = mann_whitney(
            &[1.0, 4.0, 7.0, 9.0],
            &[2.0, 3.0, 5.0, 6.0, 8.0, 10.0, 11.0],
        );
        assert!(close(p, REF_MWU_EXACT), "{p:?}");
        // scipy.stats.mannwhitneyu([1, 2, 2, 3], [2, 4, 5]).pvalue: ties: normal approximation
        let p = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 4.0, 5.0]);
        assert!(close(p, REF_MWU_TIES), "{p:?}");
        // scipy.stats.mannwhitneyu(np.arange(12), np.arange(12) * 1.5 + 0.25).pvalue:
        // both larger than 8: normal approximation
        let a: Vec<f64> = (0..12).map(f64::from).collect();
        let b: Vec<f64> = (0..12).map(|x| f64::from(x) * 1.5 + 0.25).collect();
        let p = mann_whitney(&a, &b);
        assert!(close(p, REF_MWU_LARGE), "{p:?}");
        assert_eq!(mann_whitney(&[1.0, 1.0], &[1.0, 1.0, 1.0]), None);
        assert_eq!(mann_whitney(&[1.0], &[1.0, 2.0, 3.0]), None);
    }

    const REF_MWU_EXACT: f64 = 0.648_484_848_484_848_4;
    const REF_MWU_TIES: f64 = 0.199_089_852_148_204_63;
    const REF_MWU_LARGE: f64 = 0.174_853_306_893_292_7;

    #[test]
    fn exact_u_distribution_is_symmetric_and_sums_to_one() {
        assert_eq!(u_exact_sf(3, 4, 0), Some(1.0));
        // P(U ≥ 12) = P(U = 12) = 1 / C(7, 3).
        assert!((u_exact_sf(3, 4, 12).unwrap() - 1.0 / 35.0).abs() < 1e-15);
        assert_eq!(u_exact_sf(3, 4, 13), Some(0.0));
    }
}
