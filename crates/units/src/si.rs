//! Human-readable numbers: 4 significant digits with an SI prefix, e.g. `9.870 Mbit/s`.

/// SI prefixes from 10⁻¹⁵ to 10¹⁸, indexed by (exponent + 15) / 3.
const PREFIXES: [&str; 12] = ["f", "p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E"];
const MIN_EXP3: i32 = -15;
const MAX_EXP3: i32 = 18;

/// `value` with 4 significant digits and an SI prefix on `unit`: `si(9.87e6, "bit/s")` is
/// `"9.870 Mbit/s"`. Zero prints as `0`; values beyond the prefixes fall back to `1.234e21`.
pub fn si(value: f64, unit: &str) -> String {
    if !value.is_finite() || value == 0.0 {
        return join(&format!("{value}"), "", unit);
    }
    let (digits, e) = sig4(value);
    let exp3 = e.div_euclid(3) * 3;
    if !(MIN_EXP3..=MAX_EXP3).contains(&exp3) {
        return join(&format!("{value:.3e}"), "", unit);
    }
    let sign = if value < 0.0 { "-" } else { "" };
    join(
        &format!("{sign}{}", plain(&digits, e - exp3)),
        prefix(exp3),
        unit,
    )
}

/// `mean ± half` sharing one prefix chosen from `mean`, e.g. `9.870 ± 0.1234 Mbit/s`, so the
/// two figures compare at a glance. A half-width below a thousandth of the prefix's unit
/// would need a row of leading zeros (`1.000 ± 0.000000000000001332 s`): it gets a prefix of
/// its own instead, `1.000 s ± 1.332 fs`.
pub fn si_pair(mean: f64, half: f64, unit: &str) -> String {
    let anchor = if mean.is_finite() && mean != 0.0 {
        mean
    } else {
        half
    };
    if !anchor.is_finite() || anchor == 0.0 || !half.is_finite() {
        return join(&format!("{mean} ± {half}"), "", unit);
    }
    let exp3 = sig4(anchor).1.div_euclid(3) * 3;
    if !(MIN_EXP3..=MAX_EXP3).contains(&exp3) {
        return join(&format!("{mean:.3e} ± {half:.3e}"), "", unit);
    }
    if half != 0.0 && sig4(half).1 < exp3 - 3 {
        return format!("{} ± {}", si(mean, unit), si(half, unit));
    }
    let scaled = |x: f64| -> String {
        if x == 0.0 {
            return "0".to_owned();
        }
        let (digits, e) = sig4(x);
        let sign = if x < 0.0 { "-" } else { "" };
        format!("{sign}{}", plain(&digits, e - exp3))
    };
    join(
        &format!("{} ± {}", scaled(mean), scaled(half)),
        prefix(exp3),
        unit,
    )
}

fn prefix(exp3: i32) -> &'static str {
    PREFIXES[((exp3 - MIN_EXP3) / 3) as usize]
}

fn join(number: &str, prefix: &str, unit: &str) -> String {
    if prefix.is_empty() && unit.is_empty() {
        number.to_owned()
    } else {
        format!("{number} {prefix}{unit}")
    }
}

/// |x| rounded to 4 significant digits: the digits and the decimal exponent of the first one.
///
/// Rounding is left to the standard formatter, so 999.96 correctly becomes 1.000e3 rather than
/// an impossible 1000.0e0.
fn sig4(x: f64) -> (String, i32) {
    let sci = format!("{:.3e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// Places the decimal point in 4 `digits` whose first digit has decimal exponent `e`.
fn plain(digits: &str, e: i32) -> String {
    let n = digits.len() as i32;
    if e >= n - 1 {
        format!("{digits}{}", "0".repeat((e - (n - 1)) as usize))
    } else if e >= 0 {
        let (int, frac) = digits.split_at(e as usize + 1);
        format!("{int}.{frac}")
    } else {
        format!("0.{}{digits}", "0".repeat((-e - 1) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_prefix_and_four_digits() {
        assert_eq!(si(9.87e6, "bit/s"), "9.870 Mbit/s");
        assert_eq!(si(123_456.0, "bit/s"), "123.5 kbit/s");
        assert_eq!(si(0.0123, "s"), "12.30 ms");
        assert_eq!(si(42.0, "B"), "42.00 B");
        assert_eq!(si(-2.5e-6, "s"), "-2.500 µs");
        assert_eq!(si(0.0, "s"), "0 s");
        assert_eq!(si(1234.0, ""), "1.234 k");
        assert_eq!(si(5.0, ""), "5.000");
    }

    #[test]
    fn rounding_carries_into_next_prefix() {
        assert_eq!(si(999_960.0, "B"), "1.000 MB");
        assert_eq!(si(9.9996, "s"), "10.00 s");
    }

    #[test]
    fn out_of_range_and_non_finite() {
        assert_eq!(si(1.5e21, "B"), "1.500e21 B");
        assert_eq!(si(f64::NAN, "s"), "NaN s");
    }

    #[test]
    fn pair_shares_the_mean_prefix() {
        assert_eq!(si_pair(9.87e6, 123_400.0, "bit/s"), "9.870 ± 0.1234 Mbit/s");
        assert_eq!(si_pair(0.02, 0.0, "s"), "20.00 ± 0 ms");
        assert_eq!(si_pair(0.0, 0.5, "s"), "0 ± 500.0 ms");
        assert_eq!(si_pair(1.0e6, 2.5e6, "B"), "1.000 ± 2.500 MB");
        assert_eq!(si_pair(9.87e6, 1_234.0, "bit/s"), "9.870 ± 0.001234 Mbit/s");
    }

    #[test]
    fn a_tiny_half_width_gets_its_own_prefix() {
        assert_eq!(si_pair(1.0, 1.332e-15, "s"), "1.000 s ± 1.332 fs");
        assert_eq!(
            si_pair(9.87e6, 123.4, "bit/s"),
            "9.870 Mbit/s ± 123.4 bit/s"
        );
    }
}
