//! Holm–Bonferroni adjustment: p-values of several comparisons made adjusted so that the chance
//! of any false rejection among them stays at the level, whatever their dependence.

/// Holm-adjusted `p`, in the input's order. Absent p-values take no part and stay absent; the
/// m present ones are sorted ascending, the i-th (0-based) multiplied by m − i, made
/// non-decreasing in that order and capped at 1 (as `statsmodels`' `multipletests(p,
/// method="holm")`).
pub fn holm(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut present: Vec<(usize, f64)> = p
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.filter(|p| !p.is_nan()).map(|p| (i, p)))
        .collect();
    present.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let m = present.len();
    let mut out = vec![None; p.len()];
    let mut running = 0.0_f64;
    for (rank, (i, p)) in present.into_iter().enumerate() {
        running = running.max(((m - rank) as f64 * p).min(1.0));
        out[i] = Some(running);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjusts_by_hand() {
        // Sorted 0.01, 0.02, 0.03, 0.04 (m = 4): 0.04, 0.06, 0.06 (monotone), 0.06 (monotone:
        // 1 · 0.04 < 0.06); absent stays absent.
        let got = holm(&[Some(0.03), None, Some(0.01), Some(0.04), Some(0.02)]);
        let want = [Some(0.06), None, Some(0.04), Some(0.06), Some(0.06)];
        for (g, w) in got.iter().zip(want) {
            match (g, w) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-12, "{got:?}"),
                (g, w) => assert_eq!(*g, w),
            }
        }
        assert_eq!(holm(&[Some(0.6), Some(0.7)]), [Some(1.0), Some(1.0)]);
        assert_eq!(holm(&[]), []);
    }
}
