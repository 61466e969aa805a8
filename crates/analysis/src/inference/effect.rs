//! Standardised effect sizes: how large a difference is against the spread, whatever the unit.

use statrs::function::gamma::ln_gamma;

use super::{mean, variance};

/// Cohen's d_z of paired differences `d`: mean(d) / sd(d) (sd with divisor n − 1). None below
/// two values or when the differences do not vary.
pub fn cohen_dz(d: &[f64]) -> Option<f64> {
    let sd = variance(d)?.sqrt();
    (sd > 0.0).then(|| mean(d) / sd)
}

/// Hedges' g of two independent samples: (mean(a) − mean(b)) / s_pooled, times the exact
/// small-sample correction J(ν) = Γ(ν/2) / (√(ν/2) · Γ((ν − 1)/2)) with ν = n_a + n_b − 2
/// (Hedges 1981; the familiar 1 − 3/(4ν − 1) approximates it). None when either sample has
/// fewer than two values or neither varies.
pub fn hedges_g(a: &[f64], b: &[f64]) -> Option<f64> {
    let (va, vb) = (variance(a)?, variance(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let dof = na + nb - 2.0;
    let pooled = (((na - 1.0) * va + (nb - 1.0) * vb) / dof).sqrt();
    if pooled == 0.0 {
        return None;
    }
    let j = (ln_gamma(dof / 2.0) - ln_gamma((dof - 1.0) / 2.0)).exp() / (dof / 2.0).sqrt();
    Some(j * (mean(a) - mean(b)) / pooled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cohen_dz_by_hand() {
        // mean 2, sd 1.
        assert!((cohen_dz(&[1.0, 2.0, 3.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(cohen_dz(&[1.0, 1.0]), None);
        assert_eq!(cohen_dz(&[1.0]), None);
    }

    #[test]
    fn hedges_g_by_hand() {
        // a = [1, 2, 3], b = [3, 4, 5]: means differ by −2, pooled sd 1, ν = 4,
        // J(4) = Γ(2) / (√2 · Γ(1.5)) = 1 / (√2 · √π / 2) = 0.797 884 560 802 865 4.
        let g = hedges_g(&[1.0, 2.0, 3.0], &[3.0, 4.0, 5.0]).unwrap();
        assert!((g + 2.0 * 0.797_884_560_802_865_4).abs() < 1e-12, "{g}");
        assert_eq!(hedges_g(&[1.0, 1.0], &[1.0, 1.0]), None);
        assert_eq!(hedges_g(&[1.0], &[1.0, 2.0]), None);
    }
}
