//! Synthetic Mahimahi packet-delivery traces from a few statistics of a path, for links whose
//! measured traces are not at hand (a Wi-Fi or cellular access described only by published
//! means and spreads).
//!
//! The capacity is a log-normal level redrawn every `level_step` as a first-order
//! autoregression of `log(rate)` (correlation time `level_memory`, stationary standard
//! deviation `level_sd`), scaled so that the level's mean over the trace is exactly `mean`.
//! Optional outages (exponential gaps and lengths) zero it. Delivery opportunities of 1500 IP
//! bytes are drawn per `burst` as a Poisson count of the level's expectation and released in the
//! burst's last millisecond: 1 ms is a cellular scheduler's TTI, a few ms a Wi-Fi station's
//! aggregated transmissions. The output is `mm-link`'s format and repeats with its last line.

use std::fmt::Write as _;
use std::time::Duration;

use rand_distr::{Distribution, Exp, Normal, Poisson};

use crate::rng::stream;

/// Bits one delivery opportunity carries (1500 IP bytes).
const OPPORTUNITY_BITS: f64 = 12_000.0;

/// What a synthetic trace is made of. Durations are whole milliseconds in the output.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpec {
    /// Mean capacity over the trace, bit/s.
    pub mean_bps: f64,
    /// Length of the trace (its repetition period).
    pub duration: Duration,
    /// Stationary standard deviation of the natural log of the level (0 = constant level).
    pub level_sd: f64,
    /// How often the level is redrawn.
    pub level_step: Duration,
    /// Correlation time of the level: consecutive steps correlate by exp(−step / memory).
    pub level_memory: Duration,
    /// Opportunities are released once per burst, in its last millisecond.
    pub burst: Duration,
    /// Mean time between outages (`None` = no outages).
    pub outage_every: Option<Duration>,
    /// Mean length of an outage.
    pub outage_length: Duration,
}

/// Why a spec cannot make a trace.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SynthError {
    /// A parameter outside its range.
    #[error("{0}")]
    Invalid(String),
}

/// What a generated trace holds, for the user to compare with the statistics they targeted.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSummary {
    /// Opportunities in the trace.
    pub opportunities: u64,
    /// Mean capacity over the trace, bit/s.
    pub mean_bps: f64,
    /// 5th, 50th and 95th percentile of the capacity per second, bit/s.
    pub per_second_p5_p50_p95: [f64; 3],
    /// Milliseconds of outage.
    pub outage_ms: u64,
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

impl TraceSpec {
    fn check(&self) -> Result<(), SynthError> {
        let bad = |m: String| Err(SynthError::Invalid(m));
        if !(self.mean_bps.is_finite() && self.mean_bps > 0.0) {
            return bad(format!("mean rate {} bit/s: allowed > 0", self.mean_bps));
        }
        if !(1_000..=3_600_000).contains(&ms(self.duration)) {
            return bad("duration: allowed 1 s to 1 h".into());
        }
        if !(self.level_sd.is_finite() && (0.0..=3.0).contains(&self.level_sd)) {
            return bad(format!("level spread {}: allowed 0 to 3", self.level_sd));
        }
        for (name, d) in [
            ("level step", self.level_step),
            ("level memory", self.level_memory),
            ("burst", self.burst),
        ] {
            if ms(d) < 1 || d > self.duration {
                return bad(format!("{name}: allowed 1 ms up to the trace's duration"));
            }
        }
        if let Some(every) = self.outage_every {
            if ms(every) < 1 || ms(self.outage_length) < 1 {
                return bad("outages: the mean gap and length must be at least 1 ms".into());
            }
        }
        Ok(())
    }

    /// The capacity per millisecond (bit/s), before opportunities are drawn.
    fn levels(&self, seed: u64) -> Vec<f64> {
        let n = ms(self.duration) as usize;
        let step = ms(self.level_step) as usize;
        let mut rng = stream(seed, 0);
        let phi = (-(step as f64) / ms(self.level_memory) as f64).exp();
        let innovation =
            Normal::new(0.0, self.level_sd * (1.0 - phi * phi).sqrt()).expect("finite spread");
        let mut x = Normal::new(0.0, self.level_sd)
            .expect("finite spread")
            .sample(&mut rng);
        let mut level = Vec::with_capacity(n);
        while level.len() < n {
            let r = x.exp();
            level.extend(std::iter::repeat_n(r, step.min(n - level.len())));
            x = phi * x + innovation.sample(&mut rng);
        }
        if let Some(every) = self.outage_every {
            let mut rng = stream(seed, 1);
            let gap = Exp::new(1.0 / ms(every) as f64).expect("positive mean");
            let length = Exp::new(1.0 / ms(self.outage_length) as f64).expect("positive mean");
            let mut t = gap.sample(&mut rng);
            while (t as usize) < n {
                let end = (t + length.sample(&mut rng).max(1.0)) as usize;
                level[t as usize..end.min(n)].fill(0.0);
                t = end as f64 + gap.sample(&mut rng);
            }
        }
        let mean = level.iter().sum::<f64>() / n as f64;
        let scale = if mean > 0.0 {
            self.mean_bps / mean
        } else {
            0.0
        };
        level.iter_mut().for_each(|r| *r *= scale);
        level
    }

    /// The trace's lines (one millisecond timestamp per opportunity, ms 1 to the duration) and
    /// what it holds. The same spec and seed give the same bytes.
    pub fn generate(&self, seed: u64) -> Result<(String, TraceSummary), SynthError> {
        self.check()?;
        let level = self.levels(seed);
        let n = level.len();
        let burst = ms(self.burst) as usize;
        let mut rng = stream(seed, 2);
        let mut counts = vec![0u64; n];
        for start in (0..n).step_by(burst) {
            let end = (start + burst).min(n);
            let expected: f64 = level[start..end].iter().sum::<f64>() / 1_000.0 / OPPORTUNITY_BITS;
            if expected > 0.0 {
                let k = Poisson::new(expected)
                    .expect("positive mean")
                    .sample(&mut rng);
                counts[end - 1] = k as u64;
            }
        }
        // The last line sets the period: the trace must end with an opportunity.
        if counts[n - 1] == 0 {
            counts[n - 1] = 1;
        }
        let mut text = String::new();
        for (i, &k) in counts.iter().enumerate() {
            for _ in 0..k {
                let _ = writeln!(text, "{}", i + 1);
            }
        }
        Ok((text, summarize(&counts, &level)))
    }
}

fn summarize(counts: &[u64], level: &[f64]) -> TraceSummary {
    let opportunities: u64 = counts.iter().sum();
    let seconds = counts.len() as f64 / 1_000.0;
    let mut per_second: Vec<f64> = counts
        .chunks(1_000)
        .filter(|c| c.len() == 1_000)
        .map(|c| c.iter().sum::<u64>() as f64 * OPPORTUNITY_BITS)
        .collect();
    per_second.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        let i = ((per_second.len() - 1) as f64 * q).round() as usize;
        per_second.get(i).copied().unwrap_or(0.0)
    };
    TraceSummary {
        opportunities,
        mean_bps: opportunities as f64 * OPPORTUNITY_BITS / seconds,
        per_second_p5_p50_p95: [pick(0.05), pick(0.5), pick(0.95)],
        outage_ms: level.iter().filter(|&&r| r == 0.0).count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mahimahi;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn spec() -> TraceSpec {
        TraceSpec {
            mean_bps: 13e6,
            duration: ms(60_000),
            level_sd: 0.6,
            level_step: ms(100),
            level_memory: ms(1_000),
            burst: ms(1),
            outage_every: None,
            outage_length: ms(200),
        }
    }

    #[test]
    fn the_trace_has_the_mean_and_spread_asked_for_and_reads_back_as_that_rate() {
        let (text, s) = spec().generate(5).expect("trace");
        assert!((s.mean_bps / 13e6 - 1.0).abs() < 0.01, "{s:?}");
        let [p5, p50, p95] = s.per_second_p5_p50_p95;
        // log-normal with σ = 0.6: the 5th–95th percentile span is e^(2·1.645·0.6) ≈ 7.2,
        // less once averaged over a second of a 1 s memory.
        assert!(p95 / p5 > 3.0 && p95 / p5 < 10.0, "{p5} {p50} {p95}");
        let stamps = text.lines().map(|l| l.parse::<u64>().expect("a timestamp"));
        let profile = mahimahi::profile(stamps, 1_000_000).expect("a valid trace");
        assert_eq!(profile.period(), Some(ms(60_000)));
        let mean = profile.mean_rate(ms(0), ms(60_000)).expect("rate");
        assert!((mean / s.mean_bps - 1.0).abs() < 1e-9, "{mean} {s:?}");
    }

    #[test]
    fn the_same_spec_and_seed_give_the_same_bytes_and_another_seed_another_trace() {
        let a = spec().generate(5).unwrap().0;
        assert_eq!(a, spec().generate(5).unwrap().0);
        assert_ne!(a, spec().generate(6).unwrap().0);
    }

    #[test]
    fn bursts_release_opportunities_only_at_their_last_millisecond_and_outages_are_silent() {
        let s = TraceSpec {
            burst: ms(4),
            outage_every: Some(ms(5_000)),
            outage_length: ms(300),
            ..spec()
        };
        let (text, summary) = s.generate(9).unwrap();
        for line in text.lines() {
            let t: u64 = line.parse().unwrap();
            assert!(t.is_multiple_of(4) || t == 60_000, "{t}");
        }
        assert!(
            summary.outage_ms > 1_000 && summary.outage_ms < 10_000,
            "{summary:?}"
        );
        assert!((summary.mean_bps / 13e6 - 1.0).abs() < 0.01, "{summary:?}");
    }

    #[test]
    fn parameters_out_of_range_are_refused_by_name() {
        let e = TraceSpec {
            mean_bps: 0.0,
            ..spec()
        }
        .generate(1)
        .unwrap_err();
        assert!(e.to_string().contains("mean rate"), "{e}");
        let e = TraceSpec {
            burst: ms(0),
            ..spec()
        }
        .generate(1)
        .unwrap_err();
        assert!(e.to_string().contains("burst"), "{e}");
    }
}
