//! The open-model schedule: the intended send time of request `i`, from a rate function.
//!
//! Request `i` is due when the integral of the rate function reaches `i`; inverting that integral
//! (instead of accumulating per-request gaps) keeps the schedule exact over any length of run.

use std::time::Duration;

use crate::units::{parse_duration, Rate, UnitError};

/// How the request rate changes over the attack.
#[derive(Debug, Clone, PartialEq)]
pub enum Ramp {
    /// The same rate throughout.
    Constant(Rate),
    /// Rises (or falls) linearly from `from` at t = 0 to `to` at the end of the duration.
    Linear {
        /// Rate at the start.
        from: Rate,
        /// Rate at the end of the duration.
        to: Rate,
    },
    /// Each rate in turn for `step`; after the last step the last rate holds.
    Steps {
        /// The rates, in order.
        rates: Vec<Rate>,
        /// How long each rate lasts.
        step: Duration,
    },
}

/// A bad `--ramp`, or a schedule that would never end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// A rate or duration inside the ramp was malformed.
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// The ramp text has the wrong shape.
    #[error("invalid ramp {0:?}: expected linear:FROM-TO or steps:R1,R2,...@STEP (e.g. steps:50,100,200@10s)")]
    RampSyntax(String),
    /// Neither a duration nor a request count bounds the attack.
    #[error("the attack is unbounded: give --duration or --requests")]
    Unbounded,
    /// A linear ramp needs the duration it ramps over.
    #[error("a linear ramp needs --duration")]
    LinearNeedsDuration,
    /// A rate of zero throughout would send nothing.
    #[error("the rate is zero: nothing would be sent")]
    ZeroRate,
    /// The attack would send more requests than one attack may keep.
    #[error(
        "the attack would send {requests} requests (rate x duration, or --requests); at most \
         {} per attack {}: lower --rate, --duration or --requests",
        retention.max_requests(),
        retention.why()
    )]
    TooManyRequests {
        /// Requests the schedule holds.
        requests: u64,
        /// What the attack keeps, which sets the bound.
        retention: Retention,
    },
}

/// The most requests one attack may schedule when it writes a record per request (≈ 200 bytes
/// of JSON each): 10 million is 100 s at [`MAX_RATE_PER_S`] and about 2 GB of results.
///
/// [`MAX_RATE_PER_S`]: crate::units::MAX_RATE_PER_S
pub const MAX_REQUESTS_PER_ATTACK: u64 = 10_000_000;

/// The most requests one attack may schedule when it keeps only its summary (`--summary`
/// without a results stream): memory and disk then stay flat whatever the count (histograms and
/// counters), so the bound is on time instead — one hour at [`MAX_RATE_PER_S`] (360 million),
/// which allows, e.g., a 10-minute memory run at any rate the tool accepts.
///
/// [`MAX_RATE_PER_S`]: crate::units::MAX_RATE_PER_S
pub const MAX_SUMMARY_REQUESTS: u64 = 360_000_000;

/// What an attack keeps of its requests, which decides how many it may schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// A record per request is written (results file or stdout): [`MAX_REQUESTS_PER_ATTACK`].
    Records,
    /// Only the summary's histograms and counters: [`MAX_SUMMARY_REQUESTS`].
    Summary,
}

impl Retention {
    /// The most requests one attack may schedule.
    pub fn max_requests(self) -> u64 {
        match self {
            Self::Records => MAX_REQUESTS_PER_ATTACK,
            Self::Summary => MAX_SUMMARY_REQUESTS,
        }
    }

    /// Why the bound is what it is, for the error message.
    fn why(self) -> &'static str {
        match self {
            Self::Records => "that writes a record per request (about 2 GB of results)",
            Self::Summary => "that keeps only its summary (one hour at the 100000/s rate cap)",
        }
    }
}

impl Ramp {
    /// Parses `linear:FROM-TO` (rates as in `--rate`, e.g. `linear:50/s-500/s` or `linear:50-500`)
    /// or `steps:R1,R2,...@STEP` (e.g. `steps:50,100,200@10s`).
    pub fn parse(text: &str) -> Result<Self, ScheduleError> {
        let syntax = || ScheduleError::RampSyntax(text.to_string());
        let (kind, rest) = text.trim().split_once(':').ok_or_else(syntax)?;
        match kind {
            "linear" => {
                let (from, to) = rest.split_once('-').ok_or_else(syntax)?;
                Ok(Ramp::Linear {
                    from: Rate::parse(from)?,
                    to: Rate::parse(to)?,
                })
            }
            "steps" => {
                let (rates, step) = rest.rsplit_once('@').ok_or_else(syntax)?;
                let rates = rates
                    .split(',')
                    .map(Rate::parse)
                    .collect::<Result<Vec<_>, _>>()?;
                let step = parse_duration(step)?;
                if rates.is_empty() || step.is_zero() {
                    return Err(syntax());
                }
                Ok(Ramp::Steps { rates, step })
            }
            _ => Err(syntax()),
        }
    }
}

/// One scheduled request: its sequence number, intended time since the start, and phase index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// 0-based request number.
    pub seq: u64,
    /// Intended send time, measured from the attack start.
    pub at: Duration,
    /// Index of the ramp step (0 for constant and linear ramps).
    pub phase: usize,
}

/// The complete, bounded schedule of an attack.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    ramp: Ramp,
    /// Requests are due strictly before this time.
    end: Duration,
    max_requests: Option<u64>,
}

impl Schedule {
    /// A schedule of `ramp` bounded by `duration` and/or `max_requests` (a steps ramp bounds
    /// itself: its steps' total length is the default duration), for an attack that writes a
    /// record per request (at most [`MAX_REQUESTS_PER_ATTACK`]).
    pub fn new(
        ramp: Ramp,
        duration: Option<Duration>,
        max_requests: Option<u64>,
    ) -> Result<Self, ScheduleError> {
        Self::keeping(ramp, duration, max_requests, Retention::Records)
    }

    /// Like [`Schedule::new`], bounded by what the attack keeps: `retention` sets the most
    /// requests it may schedule ([`Retention::max_requests`]).
    pub fn keeping(
        ramp: Ramp,
        duration: Option<Duration>,
        max_requests: Option<u64>,
        retention: Retention,
    ) -> Result<Self, ScheduleError> {
        let implicit = match &ramp {
            Ramp::Steps { rates, step } => Some(*step * rates.len() as u32),
            _ => None,
        };
        if matches!(ramp, Ramp::Linear { .. }) && duration.is_none() {
            return Err(ScheduleError::LinearNeedsDuration);
        }
        let all_zero = match &ramp {
            Ramp::Constant(r) => r.hz() == 0.0,
            Ramp::Linear { from, to } => from.hz() == 0.0 && to.hz() == 0.0,
            Ramp::Steps { rates, .. } => rates.iter().all(|r| r.hz() == 0.0),
        };
        if all_zero {
            return Err(ScheduleError::ZeroRate);
        }
        let end = match (duration.or(implicit), max_requests) {
            (Some(d), _) => d,
            (None, Some(_)) => Duration::MAX,
            (None, None) => return Err(ScheduleError::Unbounded),
        };
        let schedule = Self {
            ramp,
            end,
            max_requests,
        };
        let due = if end == Duration::MAX {
            f64::INFINITY
        } else {
            schedule.integral(end.as_secs_f64()).ceil()
        };
        let requests = match max_requests {
            Some(m) => due.min(m as f64),
            None => due,
        };
        if requests > retention.max_requests() as f64 {
            return Err(ScheduleError::TooManyRequests {
                requests: if requests.is_finite() {
                    requests as u64
                } else {
                    u64::MAX
                },
                retention,
            });
        }
        Ok(schedule)
    }

    /// The ramp this schedule follows.
    pub fn ramp(&self) -> &Ramp {
        &self.ramp
    }

    /// The slot of request `seq`, or `None` when the schedule has ended before it.
    pub fn slot(&self, seq: u64) -> Option<Slot> {
        if self.max_requests.is_some_and(|max| seq >= max) {
            return None;
        }
        let (seconds, phase) = self.invert(seq as f64)?;
        let at = Duration::try_from_secs_f64(seconds).ok()?;
        (at < self.end).then_some(Slot { seq, at, phase })
    }

    /// A human label for phase `phase` ("" when the ramp has a single phase).
    pub fn phase_label(&self, phase: usize) -> String {
        match &self.ramp {
            Ramp::Steps { rates, .. } => {
                let rate = rates.get(phase).or(rates.last()).map_or(0.0, |r| r.hz());
                format!("step{}@{rate}/s", phase + 1)
            }
            _ => String::new(),
        }
    }

    /// The mean requested rate over the schedule (requests per second), for reports.
    pub fn mean_rate(&self) -> f64 {
        let end = self.end.as_secs_f64();
        match &self.ramp {
            Ramp::Constant(r) => r.hz(),
            Ramp::Linear { from, to } => (from.hz() + to.hz()) / 2.0,
            Ramp::Steps { .. } if end.is_finite() && end > 0.0 => self.integral(end) / end,
            Ramp::Steps { rates, .. } => rates.last().map_or(0.0, |r| r.hz()),
        }
    }

    /// Number of requests due in `[0, t)` seconds, as a real number (the rate's integral).
    fn integral(&self, t: f64) -> f64 {
        match &self.ramp {
            Ramp::Constant(r) => r.hz() * t,
            Ramp::Linear { from, to } => {
                let d = self.end.as_secs_f64();
                from.hz() * t + (to.hz() - from.hz()) * t * t / (2.0 * d)
            }
            Ramp::Steps { rates, step } => {
                let s = step.as_secs_f64();
                let mut total = 0.0;
                for (j, r) in rates.iter().enumerate() {
                    let start = j as f64 * s;
                    let is_last = j + 1 == rates.len();
                    let stop = if is_last { t } else { (start + s).min(t) };
                    if stop > start {
                        total += r.hz() * (stop - start);
                    }
                }
                total
            }
        }
    }

    /// Solves integral(t) = n for t (seconds) and the phase it falls in.
    fn invert(&self, n: f64) -> Option<(f64, usize)> {
        match &self.ramp {
            Ramp::Constant(r) => Some((n / r.hz(), 0)),
            Ramp::Linear { from, to } => {
                let a = from.hz();
                let k = (to.hz() - a) / (2.0 * self.end.as_secs_f64());
                if n == 0.0 {
                    return Some((0.0, 0));
                }
                // Roots of k t² + a t − n = 0 written as 2n / (a + √(a² + 4kn)): stable when k → 0
                // and when a = 0. A negative discriminant means a falling ramp never reaches n.
                let disc = a * a + 4.0 * k * n;
                if disc < 0.0 {
                    return None;
                }
                let denom = a + disc.sqrt();
                (denom > 0.0).then(|| (2.0 * n / denom, 0))
            }
            Ramp::Steps { rates, step } => {
                let s = step.as_secs_f64();
                let mut before = 0.0;
                for (j, r) in rates.iter().enumerate() {
                    let is_last = j + 1 == rates.len();
                    let in_step = r.hz() * s;
                    if r.hz() > 0.0 && (is_last || n < before + in_step) {
                        return Some((j as f64 * s + (n - before) / r.hz(), j));
                    }
                    before += in_step;
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(hz: f64) -> Rate {
        Rate::per_second(hz).unwrap()
    }

    #[test]
    fn an_attack_is_bounded_in_requests() {
        let d = |s| Some(Duration::from_secs(s));
        // 100000/s for 100 s is exactly the cap; one second more is refused.
        Schedule::new(Ramp::Constant(rate(100_000.0)), d(100), None).unwrap();
        let err = Schedule::new(Ramp::Constant(rate(100_000.0)), d(101), None).unwrap_err();
        assert_eq!(
            err,
            ScheduleError::TooManyRequests {
                requests: 10_100_000,
                retention: Retention::Records,
            }
        );
        assert!(err.to_string().contains("at most 10000000 per attack"));
        // --requests bounds it below the cap even over a long duration.
        Schedule::new(Ramp::Constant(rate(100_000.0)), d(3600), Some(1000)).unwrap();
        assert!(Schedule::new(Ramp::Constant(rate(1.0)), None, Some(10_000_001)).is_err());
        let steps = Ramp::Steps {
            rates: vec![rate(100_000.0); 3],
            step: Duration::from_secs(40),
        };
        assert!(Schedule::new(steps, None, None).is_err());
    }

    #[test]
    fn a_summary_only_attack_is_bounded_in_time_not_records() {
        let d = |s| Some(Duration::from_secs(s));
        let summary = |ramp, duration, requests| {
            Schedule::keeping(ramp, duration, requests, Retention::Summary)
        };
        // 10 minutes at the 100000/s rate cap (60 M requests): refused with records, accepted
        // when only the summary is kept (checked without running it).
        let ten_minutes = Ramp::Constant(rate(100_000.0));
        let err = Schedule::new(ten_minutes.clone(), d(600), None).unwrap_err();
        assert!(matches!(
            err,
            ScheduleError::TooManyRequests {
                requests: 60_000_000,
                retention: Retention::Records
            }
        ));
        let s = summary(ten_minutes.clone(), d(600), None).unwrap();
        assert_eq!(s.slot(59_999_999).map(|s| s.seq), Some(59_999_999));
        assert_eq!(s.slot(60_000_000), None);
        // Just above 10 M with records is still refused; with the summary, an hour at the cap
        // is the bound, and one second more is refused too.
        assert!(Schedule::new(ten_minutes.clone(), d(101), None).is_err());
        summary(ten_minutes.clone(), d(3600), None).unwrap();
        let err = summary(ten_minutes, d(3601), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("at most 360000000 per attack that keeps only its summary"),
            "{err}"
        );
        assert!(summary(Ramp::Constant(rate(1.0)), None, Some(360_000_001)).is_err());
    }

    fn all_slots(s: &Schedule) -> Vec<Slot> {
        (0..).map_while(|i| s.slot(i)).collect()
    }

    #[test]
    fn constant_rate_is_i_over_rate() {
        let s = Schedule::new(
            Ramp::Constant(rate(200.0)),
            Some(Duration::from_secs(2)),
            None,
        )
        .unwrap();
        let slots = all_slots(&s);
        assert_eq!(slots.len(), 400);
        assert_eq!(slots[0].at, Duration::ZERO);
        assert_eq!(slots[1].at, Duration::from_millis(5));
        assert_eq!(slots[399].at, Duration::from_millis(1995));
    }

    #[test]
    fn request_count_bounds_the_schedule() {
        let s = Schedule::new(Ramp::Constant(rate(10.0)), None, Some(7)).unwrap();
        assert_eq!(all_slots(&s).len(), 7);
        assert_eq!(
            Schedule::new(Ramp::Constant(rate(10.0)), None, None),
            Err(ScheduleError::Unbounded)
        );
    }

    #[test]
    fn linear_ramp_inverts_the_integral() {
        // 0 → 100/s over 10 s: integral(t) = 5 t², so request n is due at sqrt(n / 5).
        let s = Schedule::new(
            Ramp::Linear {
                from: rate(0.0),
                to: rate(100.0),
            },
            Some(Duration::from_secs(10)),
            None,
        )
        .unwrap();
        let slots = all_slots(&s);
        assert_eq!(slots.len(), 500);
        for slot in &slots {
            let expect = (slot.seq as f64 / 5.0).sqrt();
            assert!((slot.at.as_secs_f64() - expect).abs() < 1e-9, "{slot:?}");
        }
        // The local rate near the end approaches 100/s: gaps shrink to ~10 ms.
        let gap = slots[499].at - slots[498].at;
        assert!(gap < Duration::from_micros(10_100), "{gap:?}");
    }

    #[test]
    fn falling_linear_ramp_ends_cleanly() {
        let s = Schedule::new(
            Ramp::Linear {
                from: rate(100.0),
                to: rate(0.0),
            },
            Some(Duration::from_secs(2)),
            None,
        )
        .unwrap();
        // Integral over 2 s = 100 requests; all strictly inside the duration.
        let n = all_slots(&s).len();
        assert!((99..=100).contains(&n), "{n}");
    }

    #[test]
    fn steps_hold_each_rate_for_its_step() {
        let ramp = Ramp::parse("steps:10,20,0,40@1s").unwrap();
        let s = Schedule::new(ramp, None, None).unwrap();
        let slots = all_slots(&s);
        let per_phase = |p| slots.iter().filter(|x| x.phase == p).count();
        assert_eq!(
            (per_phase(0), per_phase(1), per_phase(2), per_phase(3)),
            (10, 20, 0, 40)
        );
        let first_of_step4 = slots.iter().find(|x| x.phase == 3).unwrap();
        assert_eq!(first_of_step4.at, Duration::from_secs(3));
        assert_eq!(s.phase_label(1), "step2@20/s");
        assert!((s.mean_rate() - 17.5).abs() < 1e-9);
    }

    #[test]
    fn ramp_syntax_errors_are_reported() {
        assert!(matches!(
            Ramp::parse("wobble:1-2"),
            Err(ScheduleError::RampSyntax(_))
        ));
        assert!(matches!(
            Ramp::parse("linear:10"),
            Err(ScheduleError::RampSyntax(_))
        ));
        assert!(matches!(
            Ramp::parse("steps:10,x@1s"),
            Err(ScheduleError::Unit(_))
        ));
        assert_eq!(
            Ramp::parse("linear:50/s-500/s").unwrap(),
            Ramp::Linear {
                from: rate(50.0),
                to: rate(500.0)
            }
        );
    }

    #[test]
    fn rate_accuracy_on_a_simulated_clock() {
        // A sender that is released at each intended time and counts sends per second must see
        // the requested rate in every full second.
        let s = Schedule::new(
            Ramp::Constant(rate(1000.0)),
            Some(Duration::from_secs(5)),
            None,
        )
        .unwrap();
        let mut per_second = [0u32; 5];
        for slot in all_slots(&s) {
            per_second[slot.at.as_secs() as usize] += 1;
        }
        assert_eq!(per_second, [1000; 5]);
    }
}
