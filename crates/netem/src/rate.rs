//! Serialization time under a [`RateProfile`], in exact integer arithmetic.
//!
//! Capacity is counted in *units* of 1 bit × 10⁹: one nanosecond at `R` bit/s provides `R` units
//! and a packet of `B` bytes needs `8·B·10⁹` units. Everything stays in `u128`, so a packet that
//! straddles any number of rate changes finishes at an exact nanosecond (rounded up once).

use std::time::Duration;

use crate::config::RateProfile;

/// Nanoseconds per second, also the unit scale (units per bit).
const NS_PER_S: u128 = 1_000_000_000;

/// Converts a [`Duration`] to nanoseconds.
pub(crate) fn to_ns(d: Duration) -> u128 {
    d.as_nanos()
}

/// Converts nanoseconds back to a [`Duration`], saturating far beyond any run length.
pub(crate) fn from_ns(ns: u128) -> Duration {
    let secs = u64::try_from(ns / NS_PER_S).unwrap_or(u64::MAX);
    // The remainder is < 10^9 and always fits.
    Duration::new(secs, (ns % NS_PER_S) as u32)
}

/// Capacity units a packet of `ip_bytes` needs.
fn units_for(ip_bytes: u32) -> u128 {
    u128::from(ip_bytes) * 8 * NS_PER_S
}

/// Repetition period in ns, if the schedule repeats (a zero period is treated as no repetition).
fn period_ns(repeat_every: &Option<Duration>) -> Option<u128> {
    repeat_every.map(to_ns).filter(|&p| p > 0)
}

impl RateProfile {
    /// Rate in bit/s at time `t`; `None` for [`RateProfile::Unlimited`].
    pub fn rate_at(&self, t: Duration) -> Option<u64> {
        match self {
            RateProfile::Unlimited => None,
            _ => Some(self.segment(to_ns(t)).0),
        }
    }

    /// Time to serialize `ip_bytes` starting at `start`; `None` if capacity never returns.
    pub fn serialization_time(&self, start: Duration, ip_bytes: u32) -> Option<Duration> {
        let start_ns = to_ns(start);
        let cap = self.period_capacity();
        finish(self, cap, start_ns, units_for(ip_bytes)).map(|(end, _)| from_ns(end - start_ns))
    }

    /// The constant-rate piece containing `t` (ns): its rate and the absolute time it ends
    /// (`None` = never ends). The end is always after `t`, so callers always make progress.
    fn segment(&self, t: u128) -> (u64, Option<u128>) {
        let (steps, repeat) = match self {
            RateProfile::Unlimited => return (u64::MAX, None),
            RateProfile::Fixed(r) => return (*r, None),
            RateProfile::Schedule {
                steps,
                repeat_every,
            } => (steps, period_ns(repeat_every)),
        };
        let Some(first) = steps.first() else {
            return (0, None);
        };
        let (base, local) = match repeat {
            Some(p) => (t - t % p, t % p),
            None => (0, t),
        };
        let idx = steps.partition_point(|(from, _)| to_ns(*from) <= local);
        // Before the first step (only in invalid schedules) the first rate applies.
        let rate = if idx == 0 { first.1 } else { steps[idx - 1].1 };
        let next = match (steps.get(idx), repeat) {
            (Some((from, _)), Some(p)) if to_ns(*from) < p => Some(base + to_ns(*from)),
            (Some((from, _)), None) => Some(base + to_ns(*from)),
            (_, Some(p)) => Some(base + p),
            (None, None) => None,
        };
        (rate, next.map(|n| n.max(t + 1)))
    }

    /// Capacity units in one full period of a repeating schedule.
    fn period_capacity(&self) -> Option<u128> {
        let RateProfile::Schedule { repeat_every, .. } = self else {
            return None;
        };
        let p = period_ns(repeat_every)?;
        let mut t = 0u128;
        let mut total = 0u128;
        while t < p {
            let (rate, end) = self.segment(t);
            let end = end.unwrap_or(p).min(p);
            total = total.saturating_add((end - t).saturating_mul(u128::from(rate)));
            t = end;
        }
        Some(total)
    }
}

/// When `need` units starting at `start` (ns) are done, and the capacity left unused in the last
/// nanosecond (so back-to-back packets lose nothing to rounding). `None` if never.
fn finish(
    profile: &RateProfile,
    period_capacity: Option<u128>,
    start: u128,
    mut need: u128,
) -> Option<(u128, u128)> {
    if need == 0 || matches!(profile, RateProfile::Unlimited) {
        return Some((start, 0));
    }
    let period = match profile {
        RateProfile::Schedule { repeat_every, .. } => period_ns(repeat_every),
        _ => None,
    };
    let mut t = start;
    // `u128::is_multiple_of` needs Rust 1.87; the workspace MSRV is 1.85.
    #[allow(clippy::manual_is_multiple_of, unknown_lints)]
    loop {
        // Skip whole periods at once so a long outage or a huge packet costs O(steps), not O(time).
        if let (Some(p), Some(cap)) = (period, period_capacity) {
            if t % p == 0 && need > cap {
                if cap == 0 {
                    return None;
                }
                let n = (need - 1) / cap;
                need -= n * cap;
                t += n * p;
            }
        }
        let (rate, end) = profile.segment(t);
        let rate = u128::from(rate);
        let available = match end {
            Some(e) => (e - t).saturating_mul(rate),
            None if rate == 0 => return None,
            None => u128::MAX,
        };
        if available >= need {
            let dt = need.div_ceil(rate);
            return Some((t + dt, dt * rate - need));
        }
        need -= available;
        // `available < need` implies the segment has an end.
        t = end?;
    }
}

/// The serializer of one link direction: transmits packets back to back under a [`RateProfile`].
#[derive(Debug, Clone)]
pub struct Serializer {
    profile: RateProfile,
    period_capacity: Option<u128>,
    /// When the previous packet's last bit left (ns).
    free_at: u128,
    /// Capacity left over in the nanosecond before `free_at`.
    credit: u128,
}

impl Serializer {
    /// A serializer that has transmitted nothing yet.
    pub fn new(profile: RateProfile) -> Self {
        let period_capacity = profile.period_capacity();
        Serializer {
            profile,
            period_capacity,
            free_at: 0,
            credit: 0,
        }
    }

    /// The rate profile this serializer follows.
    pub fn profile(&self) -> &RateProfile {
        &self.profile
    }

    /// Starts `ip_bytes` at `start` and returns when its last bit leaves (`None` = never).
    /// `start` must not precede the previous packet's end; starting exactly at that end reuses
    /// the capacity left in its last nanosecond, so a saturated link runs at exactly its rate.
    pub fn transmit(&mut self, start: Duration, ip_bytes: u32) -> Option<Duration> {
        let start = to_ns(start);
        let mut need = units_for(ip_bytes);
        if start == self.free_at {
            if self.credit >= need {
                self.credit -= need;
                return Some(from_ns(start));
            }
            need -= self.credit;
        }
        match finish(&self.profile, self.period_capacity, start, need) {
            Some((end, credit)) => {
                self.free_at = end;
                self.credit = credit;
                Some(from_ns(end))
            }
            None => {
                self.free_at = u128::MAX;
                self.credit = 0;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }
    fn us(x: u64) -> Duration {
        Duration::from_micros(x)
    }

    #[test]
    fn fixed_rate_1500_bytes_at_12_mbit_is_one_ms() {
        let r = RateProfile::Fixed(12_000_000);
        assert_eq!(r.serialization_time(ms(7), 1500), Some(ms(1)));
        assert_eq!(r.rate_at(ms(7)), Some(12_000_000));
    }

    #[test]
    fn unlimited_takes_no_time() {
        let r = RateProfile::Unlimited;
        assert_eq!(r.serialization_time(ms(3), 9000), Some(Duration::ZERO));
        assert_eq!(r.rate_at(ms(3)), None);
    }

    #[test]
    fn inexact_time_rounds_up() {
        // 8 bits at 3 bit/ns = 2.67 ns → 3 ns.
        let r = RateProfile::Fixed(3_000_000_000);
        assert_eq!(
            r.serialization_time(Duration::ZERO, 1),
            Some(Duration::from_nanos(3))
        );
    }

    #[test]
    fn back_to_back_packets_do_not_accumulate_rounding() {
        let mut s = Serializer::new(RateProfile::Fixed(3_000_000_000));
        let mut t = Duration::ZERO;
        for _ in 0..100 {
            t = s.transmit(t, 1).expect("finite");
        }
        // 800 bits at 3 bit/ns = 266.67 ns, rounded up once.
        assert_eq!(t, Duration::from_nanos(267));
        // A gap forfeits the credit: 2.67 ns → 3 ns from the new start.
        let t2 = t + Duration::from_nanos(10);
        assert_eq!(s.transmit(t2, 1), Some(t2 + Duration::from_nanos(3)));
    }

    #[test]
    fn packet_straddling_a_rate_change_is_integrated() {
        let r = RateProfile::Schedule {
            steps: vec![(Duration::ZERO, 12_000_000), (us(500), 6_000_000)],
            repeat_every: None,
        };
        // 6000 bits in the first 0.5 ms, the other 6000 at 6 Mbit/s take 1 ms.
        assert_eq!(r.serialization_time(Duration::ZERO, 1500), Some(us(1500)));
        assert_eq!(r.rate_at(us(499)), Some(12_000_000));
        assert_eq!(r.rate_at(us(500)), Some(6_000_000));
    }

    #[test]
    fn outage_holds_the_packet_until_capacity_returns() {
        let r = RateProfile::Schedule {
            steps: vec![
                (Duration::ZERO, 12_000_000),
                (ms(1), 0),
                (ms(2), 12_000_000),
            ],
            repeat_every: None,
        };
        // Half the bits before the outage, the other half after it.
        assert_eq!(r.serialization_time(us(500), 1500), Some(ms(2)));
        // Starting inside the outage waits for its end.
        assert_eq!(r.serialization_time(us(1200), 1500), Some(us(1800)));
    }

    #[test]
    fn permanent_outage_never_finishes() {
        let r = RateProfile::Schedule {
            steps: vec![(Duration::ZERO, 12_000_000), (ms(1), 0)],
            repeat_every: None,
        };
        assert_eq!(r.serialization_time(ms(5), 1), None);
        assert_eq!(RateProfile::Fixed(0).serialization_time(ms(5), 1), None);
        let all_off = RateProfile::Schedule {
            steps: vec![(Duration::ZERO, 0)],
            repeat_every: Some(ms(10)),
        };
        assert_eq!(all_off.serialization_time(ms(5), 1), None);
    }

    #[test]
    fn repeating_schedule_wraps_and_skips_periods() {
        // 1 ms at 8 Mbit/s then 9 ms off, every 10 ms: 1000 bytes per period.
        let r = RateProfile::Schedule {
            steps: vec![(Duration::ZERO, 8_000_000), (ms(1), 0)],
            repeat_every: Some(ms(10)),
        };
        assert_eq!(r.rate_at(ms(20) + us(500)), Some(8_000_000));
        assert_eq!(r.rate_at(ms(25)), Some(0));
        // 500 bytes fit in the first half of the next on-phase: done at 10.5 ms.
        assert_eq!(r.serialization_time(ms(5), 500), Some(ms(5) + us(500)));
        // 10 000 bytes need ten on-phases: the last ends at 9·10 ms + 1 ms.
        assert_eq!(r.serialization_time(Duration::ZERO, 10_000), Some(ms(91)));
        // Starting mid on-phase: 500 bytes now, 9000 in nine full on-phases, 500 in the tenth,
        // which ends at 100.5 ms.
        assert_eq!(r.serialization_time(us(500), 10_000), Some(ms(100)));
    }
}
