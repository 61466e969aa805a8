//! Numbers for people: a metric's value in its unit with four significant digits, intervals,
//! p-values and ratios, as the tables of `summary`, `compare` and the paired comparisons print
//! them. Files (`summary.csv`, `comparisons.csv`) keep full precision instead.

use units::si::{si, si_pair};

/// Words of unitless metrics that are fractions rather than counts.
const FRACTIONS: [&str; 5] = ["jain", "share", "utilisation", "ratio", "fraction"];

/// How a metric's numbers print: a unit from its suffix, a fraction, or a count.
enum Kind {
    /// Scale to the base unit, and the unit (`_ms` → 10⁻³, `s`).
    Unit(f64, &'static str),
    /// Jain's index, shares, utilisation, ratios: four decimals.
    Fraction,
    /// Other unitless metrics: integers (one decimal for a fractional mean), with ` packets`
    /// for `_packets`.
    Count(&'static str),
}

fn kind(metric: &str) -> Kind {
    const SUFFIXES: [(&str, f64, &str); 6] = [
        ("_bps", 1.0, "bit/s"),
        ("_bytes", 1.0, "B"),
        ("_ns", 1e-9, "s"),
        ("_us", 1e-6, "s"),
        ("_ms", 1e-3, "s"),
        ("_s", 1.0, "s"),
    ];
    if let Some(&(_, scale, unit)) = SUFFIXES.iter().find(|(s, _, _)| metric.ends_with(s)) {
        return Kind::Unit(scale, unit);
    }
    let last = metric.rsplit('.').next().unwrap_or(metric);
    if FRACTIONS.iter().any(|w| last.contains(w)) {
        Kind::Fraction
    } else if last.ends_with("_packets") {
        Kind::Count(" packets")
    } else {
        Kind::Count("")
    }
}

/// One value of `metric`: `12.30 ms`, `0.9500`, `1234 packets`.
pub fn value(metric: &str, x: f64) -> String {
    match kind(metric) {
        Kind::Unit(scale, unit) => si(x * scale, unit),
        Kind::Fraction => trim_zero(format!("{x:.4}")),
        Kind::Count(unit) => format!("{}{unit}", count(x)),
    }
}

/// `mean ± half` of `metric` from a mean and its 95% interval: `10.00 ± 2.484 Mbit/s`;
/// `mean [0, high]` when the interval is not symmetric about the mean (its lower end was
/// clipped at 0); `mean ± –` without an interval (a single value).
pub fn mean_ci(metric: &str, mean: f64, ci: Option<(f64, f64)>) -> String {
    let Some((lo, hi)) = ci else {
        return format!("{} ± –", value(metric, mean));
    };
    let half = (hi - lo) / 2.0;
    let symmetric = ((mean - lo) - (hi - mean)).abs() <= 1e-9 * half.abs().max(mean.abs());
    if !symmetric {
        return match kind(metric) {
            Kind::Unit(..) => format!("{} {}", value(metric, mean), interval(metric, lo, hi)),
            Kind::Fraction => format!(
                "{} [{}, {}]",
                value(metric, mean),
                value(metric, lo),
                value(metric, hi)
            ),
            Kind::Count(unit) => format!("{} [{}, {}]{unit}", count(mean), count(lo), count(hi)),
        };
    }
    match kind(metric) {
        Kind::Unit(scale, unit) => si_pair(mean * scale, half * scale, unit),
        Kind::Fraction => format!("{mean:.4} ± {}", trim_zero(format!("{half:.4}"))),
        Kind::Count(unit) => format!("{} ± {}{unit}", count(mean), count(half)),
    }
}

/// An interval of `metric`'s values: `[0, 3.400 ms]`.
pub fn interval(metric: &str, lo: f64, hi: f64) -> String {
    format!("[{}, {}]", value(metric, lo), value(metric, hi))
}

/// An interval of a unitless quantity (a ratio) with four significant digits.
pub fn interval_plain(lo: f64, hi: f64) -> String {
    format!("[{}, {}]", sig4(lo), sig4(hi))
}

/// A difference of `metric` with its interval: `-60.00 ms [-80.00 ms, -40.00 ms]`, or
/// `-60.00 ms [–]` without one.
pub fn diff_with_interval(metric: &str, diff: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!("{} {}", value(metric, diff), interval(metric, lo, hi)),
        None => format!("{} [–]", value(metric, diff)),
    }
}

/// A ratio with its interval: `1.050 [1.020, 1.080]`, `1.050 [–]` without one, `–` without a
/// ratio.
pub fn ratio_with_interval(ratio: Option<f64>, ci: Option<(f64, f64)>) -> String {
    match (ratio, ci) {
        (Some(x), Some((lo, hi))) => format!("{} {}", sig4(x), interval_plain(lo, hi)),
        (Some(x), None) => format!("{} [–]", sig4(x)),
        (None, _) => "–".to_string(),
    }
}

/// Four significant digits, scientific notation outside 10⁻³ .. 10⁹: `1.050`, `1.332e-15`.
pub fn sig4(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let e = x.abs().log10().floor() as i32;
    if !(-3..9).contains(&e) {
        return format!("{x:.3e}");
    }
    let digits = (3 - e).max(0) as usize;
    format!("{x:.digits$}")
}

/// A p-value: three decimals, `<0.001` below a thousandth.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

/// A count: an integer, or one decimal when the value (a mean) is fractional.
fn count(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        trim_zero(format!("{x:.1}"))
    }
}

/// `0.0000` → `0`, so a zero spread reads as in the other columns.
fn trim_zero(s: String) -> String {
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        "0".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_their_units() {
        assert_eq!(value("rtt_ms", 20.0), "20.00 ms");
        assert_eq!(value("fairness.jain", 0.95), "0.9500");
        assert_eq!(value("flows.0.lost_packets", 3.0), "3 packets");
    }

    #[test]
    fn intervals_are_honest() {
        assert_eq!(mean_ci("x_s", 2.0, None), "2.000 s ± –");
        assert_eq!(mean_ci("x_s", 2.0, Some((1.0, 3.0))), "2.000 ± 1.000 s");
        assert_eq!(
            mean_ci("x_s", 1.0, Some((0.0, 3.0))),
            "1.000 s [0 s, 3.000 s]"
        );
        assert_eq!(mean_ci("n", 0.6, Some((0.0, 1.3))), "0.6 [0, 1.3]");
        assert_eq!(
            mean_ci("x_s", 1.0, Some((1.0 - 1.332e-15, 1.0 + 1.332e-15))),
            "1.000 s ± 1.332 fs"
        );
    }

    #[test]
    fn significant_digits() {
        assert_eq!(sig4(1.05), "1.050");
        assert_eq!(sig4(1234.5), "1234");
        assert_eq!(sig4(1.332e-15), "1.332e-15");
        assert_eq!(sig4(0.01234), "0.01234");
        assert_eq!(p_value(0.0004), "<0.001");
        assert_eq!(p_value(0.0312), "0.031");
    }
}
