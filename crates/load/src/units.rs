//! Units at the command-line edge: durations (`30s`, `500ms`, `1m`) and request rates (`100/s`),
//! both read by the one parser of the `units` crate (its module doc has the grammar).

pub use units::{parse_duration, UnitError};

/// The highest request rate an attack accepts, requests per second. One timing thread releases
/// every request and each becomes a tokio task plus a record: on a 2-core machine that path
/// keeps up with about this rate; above it requests would leave late (or, at absurd rates, all
/// at 0 ns) and the records would fill the disk, so it is refused instead.
pub const MAX_RATE_PER_S: f64 = 100_000.0;

/// A request rate in requests per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(f64);

impl Rate {
    /// A rate of `per_second` requests per second: finite, `0 ..= MAX_RATE_PER_S`.
    pub fn per_second(per_second: f64) -> Result<Self, UnitError> {
        if !(per_second.is_finite() && per_second >= 0.0) {
            return Err(UnitError(format!(
                "{per_second} is not a request rate: it must be a finite number >= 0"
            )));
        }
        if per_second > MAX_RATE_PER_S {
            return Err(UnitError(format!(
                "{per_second}/s is above the highest rate the scheduler can honour: allowed \
                 0 to {MAX_RATE_PER_S}/s"
            )));
        }
        Ok(Self(per_second))
    }

    /// Requests per second.
    pub fn hz(self) -> f64 {
        self.0
    }

    /// Parses vegeta's forms `100/s`, `100/1s`, `6000/1m`, `5/500ms`, or a bare `100` (per second).
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        Self::per_second(units::parse_per_second(text)?)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/s", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("2").is_err(), "a bare number has no unit");
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("3 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn rates_in_vegeta_forms() {
        assert_eq!(Rate::parse("100/s").unwrap().hz(), 100.0);
        assert_eq!(Rate::parse("100/1s").unwrap().hz(), 100.0);
        assert_eq!(Rate::parse("6000/1m").unwrap().hz(), 100.0);
        assert_eq!(Rate::parse("5/500ms").unwrap().hz(), 10.0);
        assert_eq!(Rate::parse("42").unwrap().hz(), 42.0);
        assert!(Rate::parse("fast").is_err());
        assert!(Rate::parse("10/0s").is_err());
        assert!(Rate::parse("-1/s").is_err());
        assert!(Rate::per_second(f64::NAN).is_err());
    }

    #[test]
    fn rates_above_the_schedulers_limit_are_refused() {
        assert_eq!(Rate::parse("100000/s").unwrap().hz(), MAX_RATE_PER_S);
        for text in ["1000000000/s", "18446744073709551616/s", "100001", "1/1ns"] {
            let err = Rate::parse(text).unwrap_err().to_string();
            assert!(err.contains("allowed 0 to 100000/s"), "{text}: {err}");
        }
    }
}
