//! quiclab's one parser of human units, used by scenario files, `--set`/`--vary` values and every
//! command-line flag (`quiclab load`, `serve`, `get`, `interop`), and by the HTTP server for sizes
//! in request paths. Formatting functions print values back in the same grammar.
//!
//! # Grammar
//!
//! A value is a number, optional spaces, and a unit. Numbers are plain decimals (`12`, `1.5`,
//! `.5`; no sign, no exponent) parsed exactly (mantissa and number of fraction digits), so
//! `"8.9MB"` is exactly 8,900,000 bytes and `"1.5s"` exactly 1.5e9 ns.
//!
//! | quantity | units | a bare number is |
//! |---|---|---|
//! | duration ([`parse_duration`]) | `ns`, `us` (`µs`), `ms`, `s`, `m` or `min`, `h` | refused, except `0` |
//! | size ([`parse_size`]) | `B` (also `byte`, `bytes`) after an optional prefix: SI `k`, `M`, `G`, `T` (×1000, any case) or binary `Ki`, `Mi`, `Gi`, `Ti` (×1024); a prefix alone (`64k`, `5M`, `64Ki`) is bytes | bytes |
//! | bit rate ([`parse_rate`]) | `bit`, `bits`, `bps`, `b` (bits) or `B`, `Bps` (bytes, ×8), after an optional prefix as for sizes, optionally followed by `/s`; or `unlimited` | refused, except `0` ([`parse_rate_or_bps`], for rate traces: bit/s) |
//! | event rate ([`parse_per_second`]) | `COUNT/PERIOD` where PERIOD is a duration (`100/1s`, `6000/1m`, `5/500ms`) or a duration unit alone (`100/s`, `6000/min`) | per second |
//! | packets ([`parse_packets`]) | `pkt`, `pkts`, `packet`, `packets`; whole numbers only | packets |
//! | probability ([`parse_probability`]) | `%`; without it a number in [0, 1] | a fraction |
//!
//! Rejected because they are ambiguous: a duration without a unit (`"20"`: milliseconds or
//! seconds? tools disagree, and a wrong guess silently changes an experiment by 1000×), a rate
//! without a unit (`"20"`: read as bit/s, a link meant to run at 20 Mbit/s would crawl), a size in bits (`"16Mb"`, `"1Mbit"`: sizes are bytes), a
//! bit rate given as a prefix alone (`"10M"`: bits or bytes?), a fraction of a byte or of a
//! packet. Every error names the accepted units.

pub mod si;
pub use si::{si, si_pair};

use std::time::Duration;

/// A unit string that could not be understood; the message says what is accepted (the caller
/// adds where the value came from).
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
    /// Whether the number is zero.
    fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    /// `self × num / den`, rounded half up; `None` on overflow.
    fn scaled(self, num: u128, den: u128) -> Option<u128> {
        let den = den.checked_mul(10u128.checked_pow(self.scale)?)?;
        let n = self.mantissa.checked_mul(num)?;
        // Checked: a 39-digit mantissa plus half the divisor can pass u128::MAX.
        Some(n.checked_add(den / 2)? / den)
    }

    /// `self × mult` if that is a whole number; `None` for a fraction or on overflow.
    fn whole(self, mult: u128) -> Option<u128> {
        let den = 10u128.checked_pow(self.scale)?;
        let n = self.mantissa.checked_mul(mult)?;
        (n % den == 0).then_some(n / den)
    }
}

/// Splits `"  12.5 Mbit/s"` into the decimal and the trimmed unit text.
fn split_number(text: &str) -> Result<(Decimal, &str), UnitError> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    // Every quantity here (durations, rates, sizes, shares) is non-negative: say so rather
    // than that "-5ms" is not a number.
    let negative = t
        .strip_prefix('-')
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit() || c == '.'));
    if negative {
        return Err(UnitError(format!("{text:?} must not be negative")));
    }
    if num.is_empty() || num == "." {
        return Err(UnitError(format!(
            "{text:?} does not start with a number (e.g. \"20ms\", \"10Mbit\", \"64KB\")"
        )));
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

/// Accepted duration units, for error messages.
const DURATION_UNITS: &str = "ns, us, ms, s, m or min, h, e.g. \"20ms\" or \"2s\"";

/// Accepted size units, for error messages.
const SIZE_UNITS: &str =
    "B, KB, MB, GB, TB (SI; also k, M, G alone) or KiB, MiB, GiB, TiB; a bare number is bytes";

/// Accepted rate units, for error messages.
const RATE_UNITS: &str = "bit, kbit, Mbit, Gbit (also with /s, or as bps, kbps, Mbps, Gbps), \
                          B/s, kB/s, MB/s, GB/s, or \"unlimited\"";

/// Parses a rate: `"10Mbit"`, `"10 Mbit/s"`, `"64kbps"` (bits), `"1.5MB/s"` (bytes ×8),
/// `"unlimited"`. A bare number is refused (is `"20"` bit/s or Mbit/s? Read as bit/s it would
/// silently starve the experiment), except `"0"`, which is zero in every unit.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    parse_rate_with(text, false)
}

/// [`parse_rate`], but a bare number is bit/s: for files of numbers whose format says so
/// (rate traces' `seconds,bits_per_second` lines).
pub fn parse_rate_or_bps(text: &str) -> Result<Rate, UnitError> {
    parse_rate_with(text, true)
}

/// The message for a rate without a unit: the unit forms it could have meant.
pub fn bare_rate_message(number: &str) -> String {
    format!(
        "{number} has no unit; write a rate such as \"{number}Mbit\", \"{number}kbit\" or \"{number}bit\" (units: {RATE_UNITS})"
    )
}

fn parse_rate_with(text: &str, bare_is_bps: bool) -> Result<Rate, UnitError> {
    if text.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(Rate::Unlimited);
    }
    let (num, unit) = split_number(text)?;
    let unit = unit.strip_suffix("/s").unwrap_or(unit).trim();
    let (mult, base) = split_prefix(unit);
    let bits_per_unit = match base {
        "" if mult == 1 && (bare_is_bps || num.is_zero()) => 1,
        "" if mult == 1 => return Err(UnitError(bare_rate_message(text.trim()))),
        "bit" | "bits" | "bps" | "b" => 1,
        "B" | "Bps" => 8,
        "" => {
            return Err(UnitError(format!(
                "{text:?} is ambiguous: bits or bytes? use {RATE_UNITS}"
            )));
        }
        _ => {
            return Err(UnitError(format!(
                "unknown rate unit in {text:?}; use {RATE_UNITS}"
            )));
        }
    };
    to_u64(num.scaled(mult * bits_per_unit, 1), text).map(Rate::Bps)
}

/// Parses a size in bytes: `"1500B"`, `"64KB"` or `"64k"` (SI, 64,000), `"8.9MB"`, `"1MiB"` or
/// `"64Ki"` (binary), or a bare number of bytes.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text)?;
    let (mult, base) = split_prefix(unit);
    match base {
        "" | "B" | "bytes" | "byte" => {}
        "b" | "bit" | "bits" => {
            return Err(UnitError(format!(
                "{text:?} is in bits; a size is in bytes: use {SIZE_UNITS}"
            )))
        }
        _ => {
            return Err(UnitError(format!(
                "unknown size unit in {text:?}; use {SIZE_UNITS}"
            )))
        }
    }
    let bytes = num
        .whole(mult)
        .ok_or_else(|| UnitError(format!("{text:?} is not a whole number of bytes")))?;
    to_u64(Some(bytes), text)
}

/// Parses a duration: `"20ms"`, `"1.5s"`, `"250us"`, `"2min"` or `"1.5m"`, `"1h"`, `"10ns"`;
/// a bare number is refused (is `"20"` milliseconds or seconds?) except `"0"`.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (num, unit) = split_number(text)?;
    let ns_per_unit: u128 = match unit {
        "" if num.scaled(1, 1) == Some(0) => return Ok(Duration::ZERO),
        "" => {
            return Err(UnitError(format!(
                "{text:?} has no unit; write it with one of {DURATION_UNITS}"
            )))
        }
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => {
            return Err(UnitError(format!(
                "unknown duration unit in {text:?}; use {DURATION_UNITS}"
            )))
        }
    };
    to_u64(num.scaled(ns_per_unit, 1), text).map(Duration::from_nanos)
}

/// Parses an event rate in events per second: `"100/s"`, `"100/1s"`, `"6000/1m"`, `"5/500ms"`,
/// or a bare `"100"` (per second).
pub fn parse_per_second(text: &str) -> Result<f64, UnitError> {
    let accepted =
        "use COUNT/PERIOD (e.g. \"100/s\", \"6000/1m\", \"5/500ms\") or a bare count per second";
    let t = text.trim();
    let (count, per) = match t.split_once('/') {
        Some((c, p)) => (c.trim(), p.trim()),
        None => (t, "1s"),
    };
    let count: f64 = count
        .parse()
        .map_err(|_| UnitError(format!("{text:?} is not a rate; {accepted}")))?;
    if !count.is_finite() || count < 0.0 {
        return Err(UnitError(format!(
            "{text:?}: the count must be a number >= 0; {accepted}"
        )));
    }
    // `/s` means `/1s`: a unit with no number counts one of it.
    let per = if per.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        per.to_string()
    } else {
        format!("1{per}")
    };
    let period = parse_duration(&per)
        .map_err(|e| UnitError(format!("{text:?}: bad period ({e}); {accepted}")))?;
    if period.is_zero() {
        return Err(UnitError(format!(
            "{text:?}: the period must be > 0; {accepted}"
        )));
    }
    let rate = count / period.as_secs_f64();
    // A finite count over a nanosecond can still exceed f64: infinity is not a rate.
    if !rate.is_finite() {
        return Err(UnitError(format!("{text:?} is too large; {accepted}")));
    }
    Ok(rate)
}

/// Parses a packet count: `"10pkt"`, `"10 packets"` or a bare `"10"`.
pub fn parse_packets(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text)?;
    if !matches!(unit, "" | "pkt" | "pkts" | "packet" | "packets") {
        return Err(UnitError(format!(
            "unknown packet unit in {text:?}; use pkt, pkts, packet or packets (e.g. \"10pkt\")"
        )));
    }
    let n = num
        .whole(1)
        .ok_or_else(|| UnitError(format!("{text:?} is not a whole number of packets")))?;
    to_u64(Some(n), text)
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
mod tests;
