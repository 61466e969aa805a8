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

    /// Mean rate in bit/s over `[from, to)` (the rate at `from` if the interval is empty);
    /// `None` for [`RateProfile::Unlimited`]. Exact for a fixed rate.
    pub fn mean_rate(&self, from: Duration, to: Duration) -> Option<f64> {
        mean_rate(self, self.period_capacity(), from, to)
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

    /// The repetition period of a repeating schedule.
    pub fn period(&self) -> Option<Duration> {
        match self {
            RateProfile::Schedule { repeat_every, .. } => period_ns(repeat_every).map(from_ns),
            _ => None,
        }
    }

    /// The same repeating schedule entered `offset` into its period: the rate at time `t` is
    /// this schedule's rate at `t + offset`. Profiles that do not repeat are returned as they are.
    pub fn starting_at(&self, offset: Duration) -> RateProfile {
        let RateProfile::Schedule {
            steps,
            repeat_every,
        } = self
        else {
            return self.clone();
        };
        let Some(p) = period_ns(repeat_every) else {
            return self.clone();
        };
        let offset = to_ns(offset) % p;
        let mut rotated = vec![(Duration::ZERO, self.segment(offset).0)];
        let later = steps
            .iter()
            .filter(|s| to_ns(s.0) > offset && to_ns(s.0) < p);
        rotated.extend(later.map(|&(at, rate)| (from_ns(to_ns(at) - offset), rate)));
        let earlier = steps.iter().filter(|s| to_ns(s.0) < offset);
        rotated.extend(earlier.map(|&(at, rate)| (from_ns(to_ns(at) + p - offset), rate)));
        rotated.dedup_by(|b, a| a.1 == b.1);
        RateProfile::Schedule {
            steps: rotated,
            repeat_every: *repeat_every,
        }
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

/// Mean rate of `profile` over `[from, to)`; `period_capacity` is its [`RateProfile::period_capacity`].
fn mean_rate(
    profile: &RateProfile,
    period_capacity: Option<u128>,
    from: Duration,
    to: Duration,
) -> Option<f64> {
    if matches!(profile, RateProfile::Unlimited) {
        return None;
    }
    let (from, to) = (to_ns(from), to_ns(to));
    if to <= from {
        return Some(profile.segment(from).0 as f64);
    }
    let period = match profile {
        RateProfile::Schedule { repeat_every, .. } => period_ns(repeat_every),
        _ => None,
    };
    // Capacity units (bit·10⁹) over the interval; units per ns is bit/s.
    let mut total = 0u128;
    let mut t = from;
    // `u128::is_multiple_of` needs Rust 1.87; the workspace MSRV is 1.85.
    #[allow(clippy::manual_is_multiple_of, unknown_lints)]
    while t < to {
        // Whole periods at once, so a long interval over a short period costs O(steps).
        if let (Some(p), Some(cap)) = (period, period_capacity) {
            if t % p == 0 && to - t >= p {
                let n = (to - t) / p;
                total = total.saturating_add(cap.saturating_mul(n));
                t += n * p;
                continue;
            }
        }
        let (rate, end) = profile.segment(t);
        let end = end.map_or(to, |e| e.min(to));
        total = total.saturating_add((end - t).saturating_mul(u128::from(rate)));
        t = end;
    }
    let span = to - from;
    // Integer part first, so a fixed rate comes out exact whatever the interval.
    Some((total / span) as f64 + (total % span) as f64 / span as f64)
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

    /// Mean rate in bit/s over `[from, to)`, as [`RateProfile::mean_rate`].
    pub fn mean_rate(&self, from: Duration, to: Duration) -> Option<f64> {
        mean_rate(&self.profile, self.period_capacity, from, to)
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
    fn a_repeating_schedule_entered_at_an_offset_is_the_same_schedule_shifted() {
        let r = RateProfile::Schedule {
            steps: vec![(ms(0), 1_000), (ms(1000), 2_000), (ms(3000), 3_000)],
            repeat_every: Some(ms(4000)),
        };
        for offset in [0, 500, 1000, 2999, 3000, 3999, 4500] {
            let shifted = r.starting_at(ms(offset));
            for t in (0..8000).step_by(250) {
                assert_eq!(
                    shifted.rate_at(ms(t)),
                    r.rate_at(ms(t + offset)),
                    "offset {offset} ms, t {t} ms"
                );
            }
            assert_eq!(
                shifted.mean_rate(ms(0), ms(4000)),
                r.mean_rate(ms(0), ms(4000))
            );
        }
        let once = RateProfile::Schedule {
            steps: vec![(ms(0), 1_000), (ms(1000), 2_000)],
            repeat_every: None,
        };
        assert_eq!(
            once.starting_at(ms(500)),
            once,
            "a schedule that does not repeat has no phase"
        );
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

    #[test]
    fn mean_rate_integrates_the_profile() {
        assert_eq!(RateProfile::Unlimited.mean_rate(ms(0), ms(100)), None);
        let fixed = RateProfile::Fixed(1_234_567_891);
        assert_eq!(
            fixed.mean_rate(ms(3), Duration::from_secs(7)),
            Some(1_234_567_891.0)
        );
        assert_eq!(fixed.mean_rate(ms(3), ms(3)), Some(1_234_567_891.0));
        let steps = RateProfile::Schedule {
            steps: vec![
                (Duration::ZERO, 2_000_000),
                (ms(100), 6_000_000),
                (ms(300), 0),
            ],
            repeat_every: None,
        };
        assert_eq!(steps.mean_rate(ms(0), ms(100)), Some(2_000_000.0));
        // Half at 2, half at 6 Mbit/s.
        assert_eq!(steps.mean_rate(ms(50), ms(150)), Some(4_000_000.0));
        assert_eq!(steps.mean_rate(ms(300), ms(900)), Some(0.0));
        // An empty interval: the rate at its start.
        assert_eq!(steps.mean_rate(ms(120), ms(120)), Some(6_000_000.0));
        // 1 ms at 8 Mbit/s in every 10 ms: 0.8 Mbit/s over whole periods, however many,
        // and the same when summed piece by piece from an offset.
        let on_off = RateProfile::Schedule {
            steps: vec![(Duration::ZERO, 8_000_000), (ms(1), 0)],
            repeat_every: Some(ms(10)),
        };
        assert_eq!(on_off.mean_rate(ms(0), ms(10)), Some(800_000.0));
        assert_eq!(
            on_off.mean_rate(ms(20), Duration::from_secs(3600)),
            Some(800_000.0)
        );
        assert_eq!(on_off.mean_rate(us(500), ms(10) + us(500)), Some(800_000.0));
        assert_eq!(on_off.mean_rate(us(500), us(1000)), Some(8_000_000.0));
        let s = Serializer::new(on_off.clone());
        assert_eq!(
            s.mean_rate(ms(7), ms(1007)),
            on_off.mean_rate(ms(7), ms(1007))
        );
    }
}
