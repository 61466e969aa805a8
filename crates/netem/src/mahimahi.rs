//! Mahimahi packet-delivery traces as a [`RateProfile`].
//!
//! A trace, as Mahimahi's `mm-link` reads it, lists delivery opportunities one per line: the
//! time in milliseconds at which the link may deliver up to [`OPPORTUNITY_BYTES`]. Times never
//! decrease; several lines with the same time are several opportunities in that millisecond.
//! The trace loops with a period equal to its last time `P`: the opportunity at `t` recurs at
//! `t + k·P` for every k.
//!
//! The profile spreads each millisecond's opportunities evenly over it: `n` opportunities in
//! millisecond `m` of the period give the rate `n · 1500 · 8` bits per millisecond
//! (`n` × [`OPPORTUNITY_RATE_BPS`]) over `[m, m + 1)` ms. Consecutive milliseconds with the
//! same rate are one step, and the schedule repeats every `P` ms, so every period carries
//! exactly as many bytes as the trace has opportunities × 1500. The last line (time `P`) is
//! the start of the next loop: its opportunities add to millisecond 0 of the period. The
//! profile is the trace's steady state from the first period on (in `mm-link`'s first loop
//! the opportunities of time `P` have not happened yet at time 0).
//!
//! [`TraceBuilder`] converts line by line, holding only the merged steps, so a long trace is
//! never held whole.

use std::time::Duration;

use crate::config::RateProfile;

/// Bytes one delivery opportunity may carry (at the IP layer here).
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// The rate of one opportunity per millisecond: 1500 bytes × 8 bits / 1 ms = 12 Mbit/s.
pub const OPPORTUNITY_RATE_BPS: u64 = OPPORTUNITY_BYTES * 8 * 1000;

/// Why a trace cannot be a rate profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// A time earlier than the line before it.
    #[error("timestamps must not decrease: {now} ms after {before} ms")]
    Decreasing {
        /// The previous line's time, ms.
        before: u64,
        /// This line's time, ms.
        now: u64,
    },
    /// More steps (after merging equal neighbours) than the caller allows.
    #[error("the trace makes more than {0} rate steps")]
    TooManySteps(usize),
    /// No line at all.
    #[error("the trace has no timestamps")]
    Empty,
    /// Every line is at 0 ms: the trace lasts no time, so it cannot loop.
    #[error("the last timestamp is 0 ms: a trace must last at least 1 ms to repeat")]
    ZeroLength,
}

/// Builds the rate profile of a trace fed one timestamp at a time (see the module docs).
#[derive(Debug, Clone)]
pub struct TraceBuilder {
    /// Merged steps so far: (start ms, opportunities per ms), covering every millisecond before
    /// the one in progress.
    steps: Vec<(u64, u64)>,
    /// The millisecond being counted and its opportunities so far.
    current: Option<(u64, u64)>,
    max_steps: usize,
}

impl TraceBuilder {
    /// A builder that refuses traces of more than `max_steps` steps.
    pub fn new(max_steps: usize) -> Self {
        TraceBuilder {
            steps: Vec::new(),
            current: None,
            max_steps: max_steps.max(1),
        }
    }

    /// Adds one delivery opportunity at `ms`.
    pub fn push(&mut self, ms: u64) -> Result<(), TraceError> {
        match self.current {
            Some((at, n)) if ms == at => self.current = Some((at, n.saturating_add(1))),
            Some((at, _)) if ms < at => {
                return Err(TraceError::Decreasing {
                    before: at,
                    now: ms,
                })
            }
            Some((at, n)) => {
                self.emit(at, n)?;
                if ms > at + 1 {
                    // The milliseconds between two opportunities have none.
                    self.emit(at + 1, 0)?;
                }
                self.current = Some((ms, 1));
            }
            None => {
                if ms > 0 {
                    self.emit(0, 0)?;
                }
                self.current = Some((ms, 1));
            }
        }
        Ok(())
    }

    /// The repeating schedule of the trace.
    pub fn finish(mut self) -> Result<RateProfile, TraceError> {
        let (period, last) = self.current.ok_or(TraceError::Empty)?;
        if period == 0 {
            return Err(TraceError::ZeroLength);
        }
        // The last line's opportunities open the next loop: they belong to millisecond 0.
        // `steps` is not empty: the first line (before `period`) emitted the step at 0.
        let first = self.steps[0].1;
        let zero = first.saturating_add(last);
        if self.steps.get(1).is_some_and(|s| s.0 == 1) || period == 1 {
            self.steps[0].1 = zero;
            if self.steps.get(1).is_some_and(|s| s.1 == zero) {
                self.steps.remove(1);
            }
        } else {
            self.steps[0].1 = zero;
            self.steps.insert(1, (1, first));
            if self.steps.len() > self.max_steps {
                return Err(TraceError::TooManySteps(self.max_steps));
            }
        }
        Ok(RateProfile::Schedule {
            steps: self
                .steps
                .into_iter()
                .map(|(ms, n)| {
                    (
                        Duration::from_millis(ms),
                        n.saturating_mul(OPPORTUNITY_RATE_BPS),
                    )
                })
                .collect(),
            repeat_every: Some(Duration::from_millis(period)),
        })
    }

    /// Appends a step unless it repeats the previous one's rate.
    fn emit(&mut self, ms: u64, n: u64) -> Result<(), TraceError> {
        if self.steps.last().is_some_and(|s| s.1 == n) {
            return Ok(());
        }
        if self.steps.len() == self.max_steps {
            return Err(TraceError::TooManySteps(self.max_steps));
        }
        self.steps.push((ms, n));
        Ok(())
    }
}

/// The rate profile of a trace given as its timestamps in ms (see the module docs).
pub fn profile(
    timestamps: impl IntoIterator<Item = u64>,
    max_steps: usize,
) -> Result<RateProfile, TraceError> {
    let mut b = TraceBuilder::new(max_steps);
    for ms in timestamps {
        b.push(ms)?;
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    const R: u64 = OPPORTUNITY_RATE_BPS;

    fn schedule(steps: &[(u64, u64)], period: u64) -> RateProfile {
        RateProfile::Schedule {
            steps: steps.iter().map(|&(m, n)| (ms(m), n * R)).collect(),
            repeat_every: Some(ms(period)),
        }
    }

    #[test]
    fn one_line_is_one_opportunity_per_period() {
        // `mm-link`'s constant traces: "1" is 12 Mbit/s.
        assert_eq!(profile([1], 10), Ok(schedule(&[(0, 1)], 1)));
        // One opportunity every 4 ms, at ms 0 of each period (the loop's start).
        assert_eq!(profile([4], 10), Ok(schedule(&[(0, 1), (1, 0)], 4)));
        // Five in the same ms every 2 ms: 30 Mbit/s on average.
        assert_eq!(
            profile([2, 2, 2, 2, 2], 10),
            Ok(schedule(&[(0, 5), (1, 0)], 2))
        );
    }

    #[test]
    fn every_millisecond_once_is_a_constant_rate() {
        assert_eq!(profile(1..=100, 10), Ok(schedule(&[(0, 1)], 100)));
        // A line at 0 and one at P both land on ms 0 of the steady state.
        assert_eq!(profile(0..=3, 10), Ok(schedule(&[(0, 2), (1, 1)], 3)));
    }

    #[test]
    fn gaps_are_outages_and_equal_neighbours_merge() {
        // ms 0: 2 (at 0) + 1 (at P=9); ms 1-2: none; ms 3-4: 3 each; ms 5-6: none; ms 7-8: 1.
        let t = [0, 0, 3, 3, 3, 4, 4, 4, 7, 8, 9];
        assert_eq!(
            profile(t, 10),
            Ok(schedule(&[(0, 3), (1, 0), (3, 3), (5, 0), (7, 1)], 9))
        );
        // Millisecond 0 gains the last line's opportunity and no longer matches ms 1.
        assert_eq!(
            profile([0, 1, 2, 3, 4, 5], 10),
            Ok(schedule(&[(0, 2), (1, 1)], 5))
        );
        // ... or comes to match it: 0, 1, 1, 2 loops into two opportunities every ms.
        assert_eq!(profile([0, 1, 1, 2], 10), Ok(schedule(&[(0, 2)], 2)));
        assert_eq!(
            profile([1, 2, 2, 3, 3], 10),
            Ok(schedule(&[(0, 2), (1, 1), (2, 2)], 3))
        );
    }

    #[test]
    fn every_period_carries_the_traces_bytes() {
        let t: Vec<u64> = [0, 0, 5, 5, 5, 6, 13, 13, 20, 21, 21, 40]
            .into_iter()
            .collect();
        let p = profile(t.iter().copied(), 100).expect("valid");
        let RateProfile::Schedule {
            steps,
            repeat_every: Some(period),
        } = &p
        else {
            panic!("{p:?}")
        };
        p.validate().expect("a valid schedule");
        let mut bits = 0u128;
        for (i, (from, rate)) in steps.iter().enumerate() {
            let to = steps.get(i + 1).map_or(*period, |s| s.0);
            bits += (to - *from).as_nanos() * u128::from(*rate) / 1_000_000_000;
        }
        assert_eq!(bits, t.len() as u128 * 1500 * 8);
    }

    #[test]
    fn bad_traces_are_refused() {
        assert_eq!(profile([], 10), Err(TraceError::Empty));
        assert_eq!(profile([0, 0, 0], 10), Err(TraceError::ZeroLength));
        assert_eq!(
            profile([1, 5, 3], 10),
            Err(TraceError::Decreasing { before: 5, now: 3 })
        );
        // 1 on, 1 off, … needs a step per ms.
        assert_eq!(
            profile((0..10).map(|i| 2 * i), 5),
            Err(TraceError::TooManySteps(5))
        );
        // The split of ms 0 at the end counts too: [(0,2),(1,1)] is two steps.
        assert_eq!(profile([0, 1, 2], 1), Err(TraceError::TooManySteps(1)));
        assert!(profile([0, 1, 2], 2).is_ok());
    }
}
