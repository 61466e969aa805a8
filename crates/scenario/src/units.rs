//! Human units at the edge: rates, sizes, durations and probabilities, parsed and formatted.
//!
//! Numbers are parsed as exact decimals (mantissa and number of fraction digits) so that
//! "8.9MB" is exactly 8,900,000 bytes and "1.5s" exactly 1.5e9 ns; floating point would
//! round some of them one unit off.

use std::time::Duration;

/// A unit string that could not be understood; the caller adds the position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

/// A link rate in bit/s, or no rate limit at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// No serialization delay.
    Unlimited,
    /// A constant rate in bit/s.
    Bps(u64),
}

/// An exact decimal: `mantissa / 10^scale`.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    mantissa: u128,
    scale: u32,
}

impl Decimal {
    /// `self × num / den`, rounded half up; `None` on overflow.
    fn scaled(self, num: u128, den: u128) -> Option<u128> {
        let den = den.checked_mul(10u128.checked_pow(self.scale)?)?;
        let n = self.mantissa.checked_mul(num)?;
        Some((n + den / 2) / den)
    }
}

/// Splits `"  12.5 Mbit/s"` into the decimal and the trimmed unit text.
fn split_number(text: &str) -> Result<(Decimal, &str), UnitError> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    if num.is_empty() || num == "." {
        return Err(UnitError(format!("{text:?} does not start with a number")));
    }
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac_part.contains('.') {
        return Err(UnitError(format!("{text:?} is not a number")));
    }
    let digits = format!("{int_part}{frac_part}");
    let mantissa: u128 = digits
        .parse()
        .map_err(|_| UnitError(format!("{text:?}: number too large")))?;
    let scale = u32::try_from(frac_part.len())
        .map_err(|_| UnitError(format!("{text:?}: too many digits")))?;
    if scale > 18 {
        return Err(UnitError(format!("{text:?}: too many fraction digits")));
    }
    Ok((Decimal { mantissa, scale }, unit.trim()))
}

fn to_u64(v: Option<u128>, text: &str) -> Result<u64, UnitError> {
    v.and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| UnitError(format!("{text:?} is too large")))
}

/// Multiplier of an SI (`k`, `M`, `G`, `T`, any case) or binary (`Ki`, `Mi`, `Gi`, `Ti`) prefix,
/// and the rest of the unit.
fn split_prefix(unit: &str) -> (u128, &str) {
    let binary = [
        ("Ki", 1u128 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
    ];
    for (p, m) in binary {
        if let Some(rest) = unit.strip_prefix(p) {
            return (m, rest);
        }
    }
    let mut chars = unit.chars();
    let m = match chars.next() {
        Some('k' | 'K') => 1_000,
        Some('m' | 'M') => 1_000_000,
        Some('g' | 'G') => 1_000_000_000,
        Some('t' | 'T') => 1_000_000_000_000,
        _ => return (1, unit),
    };
    // "b"/"B"/"bit"/"bps" alone must not lose their first letter to a prefix.
    (m, chars.as_str())
}

const RATE_UNITS: &str = "bit, kbit, Mbit, Gbit (also with /s, or as bps, kbps, Mbps, Gbps), \
                          B/s, kB/s, MB/s, GB/s, or \"unlimited\"";

/// Parses a rate: `"10Mbit"`, `"10 Mbit/s"`, `"64kbps"` (bits), `"1.5MB/s"` (bytes ×8),
/// `"unlimited"`. A bare number is bit/s.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    if text.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(Rate::Unlimited);
    }
    let (num, unit) = split_number(text)?;
    let unit = unit.strip_suffix("/s").unwrap_or(unit).trim();
    let (mult, base) = split_prefix(unit);
    let bits_per_unit = match base {
        "" if mult == 1 => 1,
        "bit" | "bits" | "bps" | "b" => 1,
        "B" | "Bps" => 8,
        _ => {
            return Err(UnitError(format!(
                "unknown rate unit in {text:?}; use {RATE_UNITS}"
            )));
        }
    };
    to_u64(num.scaled(mult * bits_per_unit, 1), text).map(Rate::Bps)
}

/// Parses a size in bytes: `"1500B"`, `"64KB"` (SI, 64,000), `"8.9MB"`, `"1MiB"` (binary),
/// or a bare number of bytes.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text)?;
    let (mult, base) = split_prefix(unit);
    match base {
        "" if mult == 1 => {}
        "B" | "bytes" | "byte" => {}
        _ => {
            return Err(UnitError(format!(
                "unknown size unit in {text:?}; use B, KB, MB, GB (SI) or KiB, MiB, GiB"
            )))
        }
    }
    to_u64(num.scaled(mult, 1), text)
}

/// Parses a duration: `"20ms"`, `"1.5s"`, `"250us"`, `"2min"`, `"1h"`, `"10ns"`; `"0"` alone
/// needs no unit.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (num, unit) = split_number(text)?;
    let ns_per_unit: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" if num.mantissa == 0 => 1,
        "" => {
            return Err(UnitError(format!(
                "{text:?} needs a unit: ns, us, ms, s, min or h"
            )));
        }
        _ => {
            return Err(UnitError(format!(
                "unknown duration unit in {text:?}; use ns, us, ms, s, min or h"
            )))
        }
    };
    to_u64(num.scaled(ns_per_unit, 1), text).map(Duration::from_nanos)
}

/// Parses a packet count: `"10pkt"`, `"10 packets"` or a bare `"10"`.
pub fn parse_packets(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text)?;
    if !matches!(unit, "" | "pkt" | "pkts" | "packet" | "packets") {
        return Err(UnitError(format!(
            "unknown packet unit in {text:?}; use e.g. \"10pkt\""
        )));
    }
    if num.scale > 0 && num.mantissa % 10u128.pow(num.scale) != 0 {
        return Err(UnitError(format!(
            "{text:?} is not a whole number of packets"
        )));
    }
    to_u64(num.scaled(1, 1), text)
}

/// Parses a probability: `"1.5%"` or a plain number such as `"0.015"`, in `[0, 1]`.
pub fn parse_probability(text: &str) -> Result<f64, UnitError> {
    let t = text.trim();
    let (num, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let v: f64 = num.parse().map_err(|_| {
        UnitError(format!(
            "{text:?} is not a probability (e.g. \"1.5%\" or 0.015)"
        ))
    })?;
    let v = if percent { v / 100.0 } else { v };
    check_probability(v).map_err(|_| UnitError(format!("{text:?} is not within 0% and 100%")))
}

/// Accepts `v` if it is a probability in `[0, 1]`.
pub fn check_probability(v: f64) -> Result<f64, UnitError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(UnitError(format!("{v} is not a probability in [0, 1]")))
    }
}

/// Formats a decimal `value / 10^digits` without trailing zeros.
fn trim_decimal(whole: u64, divisor: u64) -> String {
    let int = whole / divisor;
    let frac = whole % divisor;
    if frac == 0 {
        return int.to_string();
    }
    let width = divisor.ilog10() as usize;
    let s = format!("{int}.{frac:0width$}");
    s.trim_end_matches('0').to_string()
}

/// Picks the largest unit whose value is at least 1 and exact with at most three fraction digits,
/// so formatting then parsing gives back the same number.
fn format_with(value: u64, units: &[(u64, &str)]) -> String {
    for &(mult, name) in units {
        let milli = u128::from(value) * 1000;
        if value >= mult && milli % u128::from(mult) == 0 {
            let scaled = u64::try_from(milli / u128::from(mult)).unwrap_or(u64::MAX);
            return format!("{}{name}", trim_decimal(scaled, 1000));
        }
    }
    format!("{value}{}", units.last().map_or("", |u| u.1))
}

/// Formats bit/s as `"10Mbit"`, `"1.5Gbit"`, `"64kbit"`, `"100bit"`.
pub fn format_rate(rate: Rate) -> String {
    match rate {
        Rate::Unlimited => "unlimited".to_string(),
        Rate::Bps(b) => format_with(
            b,
            &[
                (1_000_000_000_000, "Tbit"),
                (1_000_000_000, "Gbit"),
                (1_000_000, "Mbit"),
                (1_000, "kbit"),
                (1, "bit"),
            ],
        ),
    }
}

/// Formats bytes in SI units: `"8.9MB"`, `"1500B"`.
pub fn format_size(bytes: u64) -> String {
    format_with(
        bytes,
        &[
            (1_000_000_000_000, "TB"),
            (1_000_000_000, "GB"),
            (1_000_000, "MB"),
            (1_000, "KB"),
            (1, "B"),
        ],
    )
}

/// Formats a duration: `"20ms"`, `"1.5s"`, `"250us"`, `"0s"`.
pub fn format_duration(d: Duration) -> String {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    if ns == 0 {
        return "0s".to_string();
    }
    format_with(
        ns,
        &[
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ],
    )
}

/// Formats a probability as a percentage: `0.015` → `"1.5%"`.
pub fn format_probability(p: f64) -> String {
    let pct = format!("{:.6}", p * 100.0);
    let pct = pct.trim_end_matches('0').trim_end_matches('.');
    format!("{pct}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        let ok = [
            ("10Mbit", 10_000_000),
            ("10 Mbit/s", 10_000_000),
            ("1.5Gbit", 1_500_000_000),
            ("100kbit", 100_000),
            ("64kbps", 64_000),
            ("2Mbps", 2_000_000),
            ("1MB/s", 8_000_000),
            ("1.5 MB/s", 12_000_000),
            ("1KiB/s", 8192),
            ("12345", 12345),
            ("100mbit", 100_000_000),
        ];
        for (text, bps) in ok {
            assert_eq!(parse_rate(text), Ok(Rate::Bps(bps)), "{text}");
        }
        assert_eq!(parse_rate("unlimited"), Ok(Rate::Unlimited));
        for bad in [
            "",
            "Mbit",
            "10 furlongs",
            "10Mbit/h",
            "1.2.3Mbit",
            "-5Mbit",
            "99999999999Tbit",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn sizes() {
        let ok = [
            ("8.9MB", 8_900_000),
            ("1500B", 1500),
            ("64KB", 64_000),
            ("64kB", 64_000),
            ("1MiB", 1 << 20),
            ("4KiB", 4096),
            ("1234", 1234),
            ("1.25MB", 1_250_000),
        ];
        for (text, bytes) in ok {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["MB", "10Mbit", "1.5 parsecs", "x"] {
            assert!(parse_size(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn durations() {
        let ok = [
            ("20ms", Duration::from_millis(20)),
            ("1.5s", Duration::from_millis(1500)),
            ("250us", Duration::from_micros(250)),
            ("0", Duration::ZERO),
            ("2min", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("0.1ms", Duration::from_micros(100)),
            ("7ns", Duration::from_nanos(7)),
        ];
        for (text, d) in ok {
            assert_eq!(parse_duration(text), Ok(d), "{text}");
        }
        for bad in ["20", "20 days", "ms", "1.5.5s"] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn packets() {
        assert_eq!(parse_packets("10pkt"), Ok(10));
        assert_eq!(parse_packets("3 packets"), Ok(3));
        assert_eq!(parse_packets("7"), Ok(7));
        for bad in ["1.5pkt", "10KB", "pkt"] {
            assert!(parse_packets(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("1.5%"), Ok(0.015));
        assert_eq!(parse_probability("0.015"), Ok(0.015));
        assert_eq!(parse_probability("100%"), Ok(1.0));
        for bad in ["101%", "1.5", "-1%", "abc", ""] {
            assert!(parse_probability(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn formatting_round_trips() {
        for bps in [
            1,
            999,
            64_000,
            1_500_000,
            10_000_000,
            2_500_000_000,
            123_456_789,
        ] {
            let text = format_rate(Rate::Bps(bps));
            assert_eq!(parse_rate(&text), Ok(Rate::Bps(bps)), "{text}");
        }
        assert_eq!(format_rate(Rate::Bps(10_000_000)), "10Mbit");
        assert_eq!(format_rate(Rate::Bps(1_500_000_000)), "1.5Gbit");
        for bytes in [
            0, 1, 1500, 64_000, 8_900_000, 16_000_000, 1_250_000, 1_048_576,
        ] {
            let text = format_size(bytes);
            assert_eq!(parse_size(&text), Ok(bytes), "{text}");
        }
        assert_eq!(format_size(8_900_000), "8.9MB");
        for ns in [
            0,
            7,
            250_000,
            20_000_000,
            1_500_000_000,
            333_000_000,
            120_000_000_000,
        ] {
            let d = Duration::from_nanos(ns);
            let text = format_duration(d);
            assert_eq!(parse_duration(&text), Ok(d), "{text}");
        }
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        for p in [0.0, 0.015, 0.001, 0.00125, 1.0] {
            let text = format_probability(p);
            let back = parse_probability(&text).expect("formatted probability parses");
            assert!((back - p).abs() < 1e-12, "{text}");
        }
        assert_eq!(format_probability(0.015), "1.5%");
    }
}
