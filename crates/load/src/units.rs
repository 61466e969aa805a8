//! Human units at the command-line edge: durations (`30s`, `500ms`, `1m`) and rates (`100/s`).

use std::time::Duration;

/// A malformed duration or rate given by the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {text:?}: {why}")]
pub struct UnitError {
    /// What was being parsed ("duration", "rate", …).
    pub what: &'static str,
    /// The text as given.
    pub text: String,
    /// Why it was rejected.
    pub why: &'static str,
}

impl UnitError {
    fn new(what: &'static str, text: &str, why: &'static str) -> Self {
        Self {
            what,
            text: text.to_string(),
            why,
        }
    }
}

/// Parses `250ms`, `30s`, `1.5m`, `2h`, `100us`, `10ns`; a bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty() {
        return Err(UnitError::new("duration", text, "expected a number first"));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| UnitError::new("duration", text, "not a number"))?;
    let seconds_per_unit = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(UnitError::new(
                "duration",
                text,
                "unit must be ns, us, ms, s, m or h",
            ))
        }
    };
    let seconds = value * seconds_per_unit;
    if !seconds.is_finite() || seconds > 1e9 {
        return Err(UnitError::new("duration", text, "out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A request rate in requests per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(f64);

impl Rate {
    /// A rate of `per_second` requests per second (finite, non-negative).
    pub fn per_second(per_second: f64) -> Result<Self, UnitError> {
        if per_second.is_finite() && per_second >= 0.0 {
            Ok(Self(per_second))
        } else {
            Err(UnitError::new(
                "rate",
                &per_second.to_string(),
                "must be a finite number >= 0",
            ))
        }
    }

    /// Requests per second.
    pub fn hz(self) -> f64 {
        self.0
    }

    /// Parses vegeta's forms `100/s`, `100/1s`, `6000/1m`, `5/500ms`, or a bare `100` (per second).
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        let t = text.trim();
        let (count, per) = match t.split_once('/') {
            Some((c, p)) => (c.trim(), p.trim()),
            None => (t, "1s"),
        };
        let count: f64 = count
            .parse()
            .map_err(|_| UnitError::new("rate", text, "expected COUNT/PERIOD, e.g. 100/s"))?;
        // `/s` means `/1s`: a unit with no number counts one of it.
        let per = if per.starts_with(|c: char| c.is_ascii_digit()) {
            per.to_string()
        } else {
            format!("1{per}")
        };
        let period = parse_duration(&per).map_err(|_| {
            UnitError::new("rate", text, "period must be a duration such as s, 1s, 1m")
        })?;
        if period.is_zero() {
            return Err(UnitError::new("rate", text, "period must be > 0"));
        }
        if !count.is_finite() || count < 0.0 {
            return Err(UnitError::new("rate", text, "count must be >= 0"));
        }
        Ok(Self(count / period.as_secs_f64()))
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/s", self.0)
    }
}

/// Renders a duration compactly for labels and tables (`1.5s`, `250ms`).
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s}s")
    } else {
        format!("{}ms", s * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
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
    }
}
