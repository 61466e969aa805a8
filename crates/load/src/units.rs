//! Units at the command-line edge: durations (`30s`, `500ms`, `1m`) and request rates (`100/s`),
//! both read by the one parser of the `units` crate (its module doc has the grammar).

pub use units::{parse_duration, UnitError};

/// A request rate in requests per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(f64);

impl Rate {
    /// A rate of `per_second` requests per second (finite, non-negative).
    pub fn per_second(per_second: f64) -> Result<Self, UnitError> {
        if per_second.is_finite() && per_second >= 0.0 {
            Ok(Self(per_second))
        } else {
            Err(UnitError(format!(
                "{per_second} is not a request rate: it must be a finite number >= 0"
            )))
        }
    }

    /// Requests per second.
    pub fn hz(self) -> f64 {
        self.0
    }

    /// Parses vegeta's forms `100/s`, `100/1s`, `6000/1m`, `5/500ms`, or a bare `100` (per second).
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        units::parse_per_second(text).map(Self)
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
}
