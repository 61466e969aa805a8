//! RTT estimation and the retransmission timeout (RFC 6298), with Linux's RTO floor.

use std::time::Duration;

/// Largest RTO (RFC 6298 allows an upper bound of at least 60 s; Linux uses 120 s).
const MAX_RTO: Duration = Duration::from_secs(120);
/// Smallest RTO ever used, so a zero `min_rto` cannot make timers fire in a loop.
const FLOOR: Duration = Duration::from_millis(1);

/// Smoothed RTT, variance and the RTO derived from them.
#[derive(Debug, Clone)]
pub(crate) struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    latest: Duration,
    min: Duration,
    initial_rto: Duration,
    min_rto: Duration,
}

impl RttEstimator {
    /// An estimator with no samples: the RTO is `initial_rto` until the first sample.
    pub(crate) fn new(initial_rto: Duration, min_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            latest: Duration::ZERO,
            min: Duration::MAX,
            initial_rto,
            min_rto,
        }
    }

    /// Feeds one RTT sample (RFC 6298 §2).
    pub(crate) fn on_sample(&mut self, r: Duration) {
        self.latest = r;
        self.min = self.min.min(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(r);
                self.rttvar = (self.rttvar * 3 + err) / 4;
                self.srtt = Some((srtt * 7 + r) / 8);
            }
        }
    }

    /// The base RTO. Linux floors the variance term rather than the sum (RTO = SRTT +
    /// max(4·RTTVAR, rto_min)), so a 200 ms floor keeps RTO above the RTT by 200 ms.
    pub(crate) fn rto(&self) -> Duration {
        let rto = match self.srtt {
            None => self.initial_rto,
            Some(srtt) => srtt + (self.rttvar * 4).max(self.min_rto),
        };
        rto.clamp(FLOOR, MAX_RTO)
    }

    /// RTO after `backoff` expirations (doubling, capped).
    pub(crate) fn backed_off(&self, backoff: u32) -> Duration {
        let factor = 1u32 << backoff.min(16);
        self.rto().saturating_mul(factor).min(MAX_RTO)
    }

    /// The RTO floor (Linux's rto_min).
    pub(crate) fn min_rto(&self) -> Duration {
        self.min_rto
    }

    /// Smoothed RTT (zero before the first sample).
    pub(crate) fn smoothed(&self) -> Duration {
        self.srtt.unwrap_or(Duration::ZERO)
    }

    /// The sample set the controllers see.
    pub(crate) fn sample(&self) -> congestion::RttSample {
        congestion::RttSample {
            latest: self.latest,
            smoothed: self.smoothed(),
            min: if self.min == Duration::MAX {
                Duration::ZERO
            } else {
                self.min
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn rfc6298_with_linux_floor() {
        let mut r = RttEstimator::new(1000 * MS, 200 * MS);
        assert_eq!(r.rto(), 1000 * MS);
        r.on_sample(100 * MS);
        assert_eq!(r.smoothed(), 100 * MS);
        // 4 · 50 ms = 200 ms: the floor and the variance agree.
        assert_eq!(r.rto(), 300 * MS);
        r.on_sample(100 * MS);
        // rttvar = 37.5 ms → 150 ms < floor.
        assert_eq!(r.rto(), 300 * MS);
        assert_eq!(r.backed_off(2), 1200 * MS);
        assert_eq!(r.backed_off(40), MAX_RTO);
        r.on_sample(500 * MS);
        assert_eq!(r.smoothed(), 150 * MS);
        assert_eq!(r.sample().min, 100 * MS);
    }
}
