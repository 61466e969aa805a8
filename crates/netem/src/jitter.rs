//! Per-packet delay variation drawn from a [`Jitter`] distribution.

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::config::Jitter;

impl Jitter {
    /// Draws one extra delay (never negative: a Normal draw below zero counts as zero).
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> Duration {
        match *self {
            Jitter::None => Duration::ZERO,
            Jitter::Uniform { max } => {
                let max = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
                Duration::from_nanos(rng.random_range(0..=max))
            }
            Jitter::Normal { sd } => {
                let z: f64 = rng.sample(StandardNormal);
                // Float → int `as` saturates, and clamping negatives at zero truncates the normal.
                Duration::from_nanos((z * sd.as_nanos() as f64).max(0.0) as u64)
            }
        }
    }

    /// Whether this jitter never adds delay (lets the link skip the draw entirely).
    pub fn is_none(&self) -> bool {
        match *self {
            Jitter::None => true,
            Jitter::Uniform { max } => max.is_zero(),
            Jitter::Normal { sd } => sd.is_zero(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn uniform_stays_in_range_and_has_the_right_mean() {
        let j = Jitter::Uniform {
            max: Duration::from_millis(10),
        };
        let mut rng = stream(1, 0);
        let n = 100_000;
        let mut sum = 0u128;
        for _ in 0..n {
            let d = j.sample(&mut rng);
            assert!(d <= Duration::from_millis(10));
            sum += d.as_nanos();
        }
        let mean_ms = sum as f64 / n as f64 / 1e6;
        assert!((mean_ms - 5.0).abs() < 0.05, "mean {mean_ms}");
    }

    #[test]
    fn normal_is_truncated_at_zero() {
        let j = Jitter::Normal {
            sd: Duration::from_millis(2),
        };
        let mut rng = stream(2, 0);
        let n = 100_000;
        let draws: Vec<Duration> = (0..n).map(|_| j.sample(&mut rng)).collect();
        let zeros = draws.iter().filter(|d| d.is_zero()).count() as f64 / n as f64;
        assert!((zeros - 0.5).abs() < 0.01, "zero share {zeros}");
        // Mean of max(0, N(0, sd)) is sd / sqrt(2π).
        let mean = draws.iter().map(|d| d.as_nanos() as f64).sum::<f64>() / n as f64;
        let expect = 2e6 / (2.0 * std::f64::consts::PI).sqrt();
        assert!(
            (mean - expect).abs() < 0.02 * expect,
            "mean {mean} vs {expect}"
        );
        assert!(Jitter::None.is_none() && !j.is_none());
    }
}
