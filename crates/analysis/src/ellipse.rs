//! The 95% confidence region of a bivariate mean: the ellipse Pantheon draws around each
//! scheme's (delay, throughput) point, here computed exactly from Hotelling's T² rather than
//! as a one-standard-deviation contour, so it shrinks with more repetitions as an interval does.
//!
//! For n pairs with mean m and sample covariance S, the region is every μ with
//! (μ − m)ᵀ S⁻¹ (μ − m) ≤ c, c = 2(n − 1) / (n(n − 2)) · F₂,ₙ₋₂(0.95). Its boundary is
//! m + √(c·λᵢ) along each eigenvector of S. A variable without spread gives a flat ellipse
//! (a segment, or the point itself): the data cannot say more.

use statrs::distribution::{ContinuousCDF, FisherSnedecor};

/// The 95% confidence ellipse of the mean of (x, y) pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanEllipse {
    /// Number of pairs.
    pub n: usize,
    /// Mean of x.
    pub mean_x: f64,
    /// Mean of y.
    pub mean_y: f64,
    /// Semi-axis lengths, the larger first.
    pub semi_axes: (f64, f64),
    /// Angle of the larger semi-axis from the x axis, radians.
    pub angle: f64,
}

impl MeanEllipse {
    /// `points` points on the boundary, counter-clockwise from the end of the larger semi-axis.
    pub fn boundary(&self, points: usize) -> Vec<(f64, f64)> {
        let (a, b) = self.semi_axes;
        let (sin, cos) = self.angle.sin_cos();
        (0..points)
            .map(|k| {
                let t = std::f64::consts::TAU * k as f64 / points as f64;
                let (u, v) = (a * t.cos(), b * t.sin());
                (
                    self.mean_x + u * cos - v * sin,
                    self.mean_y + u * sin + v * cos,
                )
            })
            .collect()
    }
}

/// The ellipse of `pairs`; `None` with fewer than three pairs (two leave no degree of freedom
/// for the F quantile) or any non-finite value.
pub fn mean_ellipse95(pairs: &[(f64, f64)]) -> Option<MeanEllipse> {
    let n = pairs.len();
    if n < 3 || pairs.iter().any(|(x, y)| !x.is_finite() || !y.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mean_x = pairs.iter().map(|p| p.0).sum::<f64>() / nf;
    let mean_y = pairs.iter().map(|p| p.1).sum::<f64>() / nf;
    let (mut sxx, mut syy, mut sxy) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        let (dx, dy) = (x - mean_x, y - mean_y);
        sxx += dx * dx;
        syy += dy * dy;
        sxy += dx * dy;
    }
    let (sxx, syy, sxy) = (sxx / (nf - 1.0), syy / (nf - 1.0), sxy / (nf - 1.0));
    let f = FisherSnedecor::new(2.0, nf - 2.0).ok()?.inverse_cdf(0.95);
    let c = 2.0 * (nf - 1.0) / (nf * (nf - 2.0)) * f;
    // Eigenvalues of the symmetric 2×2 covariance matrix.
    let half_trace = (sxx + syy) / 2.0;
    let root = (((sxx - syy) / 2.0).powi(2) + sxy * sxy).sqrt();
    let (l1, l2) = (half_trace + root, (half_trace - root).max(0.0));
    let angle = if sxy == 0.0 {
        if sxx >= syy {
            0.0
        } else {
            std::f64::consts::FRAC_PI_2
        }
    } else {
        (l1 - sxx).atan2(sxy)
    };
    Some(MeanEllipse {
        n,
        mean_x,
        mean_y,
        semi_axes: ((c * l1).sqrt(), (c * l2).sqrt()),
        angle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncorrelated_axes_are_the_marginal_intervals_scaled_by_hotelling() {
        // x: 1,2,3,4 (variance 5/3), y: 10,10,12,12 … make y uncorrelated with x.
        let pairs = [(1.0, 10.0), (2.0, 12.0), (3.0, 12.0), (4.0, 10.0)];
        let e = mean_ellipse95(&pairs).expect("four pairs");
        assert_eq!((e.mean_x, e.mean_y), (2.5, 11.0));
        // var x = 5/3, var y = 4/3, cov = 0; F(2, 2; 0.95) = 19; c = 2·3/(4·2)·19 = 14.25.
        let c = 14.25;
        assert!(
            (e.semi_axes.0 - (c * 5.0 / 3.0_f64).sqrt()).abs() < 1e-9,
            "{e:?}"
        );
        assert!(
            (e.semi_axes.1 - (c * 4.0 / 3.0_f64).sqrt()).abs() < 1e-9,
            "{e:?}"
        );
        assert_eq!(e.angle, 0.0);
    }

    #[test]
    fn perfectly_correlated_pairs_give_a_segment_along_the_line() {
        let pairs: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 2.0 * i as f64 + 1.0)).collect();
        let e = mean_ellipse95(&pairs).expect("ten pairs");
        assert!(e.semi_axes.1.abs() < 1e-9, "{e:?}");
        assert!((e.angle - 2.0_f64.atan()).abs() < 1e-9, "{e:?}");
        for (x, y) in e.boundary(16) {
            assert!(
                (y - (2.0 * x + 1.0)).abs() < 1e-9,
                "({x}, {y}) off the line"
            );
        }
    }

    #[test]
    fn the_region_shrinks_with_more_pairs_of_the_same_spread() {
        let few = [(0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0)];
        let many: Vec<(f64, f64)> = few.iter().cycle().take(40).copied().collect();
        let a = mean_ellipse95(&few).expect("few");
        let b = mean_ellipse95(&many).expect("many");
        assert!(b.semi_axes.0 < a.semi_axes.0 / 3.0, "{a:?} vs {b:?}");
    }

    #[test]
    fn fewer_than_three_pairs_or_a_nan_give_none() {
        assert!(mean_ellipse95(&[(1.0, 1.0), (2.0, 2.0)]).is_none());
        assert!(mean_ellipse95(&[(1.0, 1.0), (2.0, f64::NAN), (3.0, 1.0)]).is_none());
    }

    #[test]
    fn identical_pairs_collapse_to_the_point() {
        let e = mean_ellipse95(&[(3.0, 4.0); 5]).expect("five pairs");
        assert_eq!(e.semi_axes, (0.0, 0.0));
        assert!(e.boundary(8).iter().all(|&p| p == (3.0, 4.0)));
    }
}
