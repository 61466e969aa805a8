//! Histogram of how late the forwarder releases packets (actual send − scheduled delivery),
//! the part of the delay error the forwarder itself adds.

use serde::Serialize;

/// Bucket width below 1 ms, and the number of such buckets.
const FINE_US: u64 = 5;
const FINE: usize = 200;
/// Bucket width from 1 ms to 100 ms.
const COARSE_US: u64 = 500;
const COARSE: usize = 198;

/// Release lateness in microsecond buckets (5 µs up to 1 ms, 0.5 ms up to 100 ms, then one
/// overflow bucket).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lateness {
    counts: Vec<u64>,
    total: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            counts: vec![0; FINE + COARSE + 1],
            total: 0,
        }
    }
}

impl Lateness {
    /// Records one release `late_ns` after its scheduled time.
    pub fn record(&mut self, late_ns: u64) {
        let us = late_ns / 1_000;
        let i = if us < FINE as u64 * FINE_US {
            (us / FINE_US) as usize
        } else {
            let c = ((us - FINE as u64 * FINE_US) / COARSE_US) as usize;
            FINE + c.min(COARSE)
        };
        if let Some(slot) = self.counts.get_mut(i) {
            *slot += 1;
        }
        self.total += 1;
    }

    /// Packets recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Upper edge (µs) of the bucket holding quantile `q` (`quantile`'s nearest rank); `None`
    /// without samples.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let i = quantile::bucket_at_rank(&self.counts, self.total, q)?;
        let edge = if i < FINE {
            (i as u64 + 1) * FINE_US
        } else {
            FINE as u64 * FINE_US + (i - FINE + 1) as u64 * COARSE_US
        };
        Some(edge as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_follow_the_samples() {
        let mut h = Lateness::default();
        assert_eq!(h.quantile_us(0.5), None);
        for us in 0..100u64 {
            h.record(us * 1_000);
        }
        h.record(5_000_000); // 5 ms
        h.record(10_000_000_000); // overflow
        assert_eq!(h.count(), 102);
        let p50 = h.quantile_us(0.5).expect("samples");
        assert!((45.0..=55.0).contains(&p50), "{p50}");
        assert!(h.quantile_us(1.0).expect("samples") > 90_000.0);
    }
}
