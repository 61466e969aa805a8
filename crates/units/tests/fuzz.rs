//! Property tests of the units parser: no input makes it panic or hang, everything it prints it
//! reads back exactly, and what the grammar refuses (ambiguous or fractional values) stays
//! refused whatever the number.
//!
//! CI runs a small budget (the `cases` below); `scripts/fuzz.sh` sets `PROPTEST_CASES` for a long
//! run. A failing case is saved beside the test as `tests/<name>.proptest-regressions` and
//! replayed first from then on.

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use units::{
    format_duration, format_probability, format_rate, format_size, parse_duration, parse_packets,
    parse_per_second, parse_probability, parse_rate, parse_size, Rate,
};

/// The budget of one property in a normal `cargo test`, unless `PROPTEST_CASES` says otherwise.
fn config(ci_cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = ci_cases;
    }
    c
}

/// Runs `f` on its own thread and fails if it takes longer than `limit` (a hang is a defect too;
/// the stuck thread is left behind, the test fails).
fn bounded<T: Send + 'static>(
    limit: Duration,
    what: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // A panic drops `tx`, which the receiver reports as a disconnect.
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: took longer than {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

const LIMIT: Duration = Duration::from_secs(2);

/// Text that looks like a unit value: numbers (huge, fractional, signed, with exponents),
/// spaces, every unit and prefix the grammar knows, some it does not, and non-ASCII.
fn unitish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[0-9]{1,45}",
        "[0-9]{0,20}\\.[0-9]{0,25}",
        Just(".".to_string()),
        Just("-".to_string()),
        Just("+".to_string()),
        Just("e9".to_string()),
        Just(" ".to_string()),
        Just("/".to_string()),
        Just("%".to_string()),
        prop::sample::select(vec![
            "ns",
            "us",
            "µs",
            "ms",
            "s",
            "m",
            "min",
            "h",
            "B",
            "b",
            "bit",
            "bits",
            "bps",
            "Bps",
            "byte",
            "bytes",
            "k",
            "K",
            "M",
            "G",
            "T",
            "Ki",
            "Mi",
            "Gi",
            "Ti",
            "KB",
            "MiB",
            "Mbit",
            "/s",
            "/1s",
            "/500ms",
            "pkt",
            "pkts",
            "packets",
            "unlimited",
            "inf",
            "NaN",
            "Infinity",
            "ſ",
            "ｍs",
            "١٢",
            "\u{0}",
            "\u{200b}",
            "🦀",
        ])
        .prop_map(String::from),
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

/// Calls every parser on `text` (the result does not matter, only that each returns).
fn parse_all(text: String) {
    let _ = parse_rate(&text);
    let _ = parse_size(&text);
    let _ = parse_duration(&text);
    let _ = parse_per_second(&text);
    let _ = parse_packets(&text);
    let _ = parse_probability(&text);
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        bounded(LIMIT, format!("{text:?}"), move || parse_all(text));
    }

    #[test]
    fn unit_like_text_never_panics(text in unitish()) {
        bounded(LIMIT, format!("{text:?}"), move || parse_all(text));
    }

    #[test]
    fn rates_round_trip(bps in any::<u64>()) {
        let text = format_rate(Rate::Bps(bps));
        prop_assert_eq!(parse_rate(&text), Ok(Rate::Bps(bps)), "{}", text);
    }

    #[test]
    fn sizes_round_trip(bytes in any::<u64>()) {
        let text = format_size(bytes);
        prop_assert_eq!(parse_size(&text), Ok(bytes), "{}", text);
    }

    #[test]
    fn durations_round_trip(ns in any::<u64>()) {
        let d = Duration::from_nanos(ns);
        let text = format_duration(d);
        prop_assert_eq!(parse_duration(&text), Ok(d), "{}", text);
    }

    #[test]
    fn probabilities_round_trip(p in 0.0f64..=1.0) {
        let text = format_probability(p);
        let back = parse_probability(&text);
        // Printed with six digits of a percent: exact to 1e-8.
        prop_assert!(matches!(back, Ok(q) if (q - p).abs() <= 5e-9 + f64::EPSILON), "{} -> {:?}", text, back);
    }

    #[test]
    fn durations_need_a_unit(n in 1u64.., frac in "(\\.[0-9]{1,6})?") {
        let text = format!("{n}{frac}");
        prop_assert!(parse_duration(&text).is_err(), "{} was accepted without a unit", text);
    }

    #[test]
    fn sizes_are_not_bits(n in any::<u32>(), prefix in "(|k|M|G|Ki|Mi)", unit in "(b|bit|bits)") {
        let text = format!("{n}{prefix}{unit}");
        prop_assert!(parse_size(&text).is_err(), "{} was accepted as a size", text);
    }

    #[test]
    fn rates_need_a_unit(n in 1u64.., frac in "(\\.[0-9]{1,6})?") {
        let text = format!("{n}{frac}");
        prop_assert!(parse_rate(&text).is_err(), "{} was accepted without a unit", text);
    }

    #[test]
    fn rates_need_bits_or_bytes(n in any::<u32>(), prefix in "(k|M|G|T|Ki|Mi)") {
        let text = format!("{n}{prefix}");
        prop_assert!(parse_rate(&text).is_err(), "{} was accepted as a rate", text);
    }

    #[test]
    fn no_fraction_of_a_packet(n in any::<u32>(), frac in 1u32..1000) {
        let text = format!("{n}.{frac:03}pkt");
        prop_assert!(parse_packets(&text).is_err(), "{} was accepted", text);
    }

    #[test]
    fn no_fraction_of_a_byte(n in any::<u32>(), frac in 1u32..10) {
        let text = format!("{n}.{frac}B");
        prop_assert!(parse_size(&text).is_err(), "{} was accepted", text);
    }

    #[test]
    fn no_negative_values(n in 1u32.., unit in "(ms|s|B|MB|Mbit|pkt|%)") {
        let text = format!("-{n}{unit}");
        prop_assert!(parse_duration(&text).is_err());
        prop_assert!(parse_size(&text).is_err());
        prop_assert!(parse_rate(&text).is_err());
        prop_assert!(parse_packets(&text).is_err());
        prop_assert!(parse_probability(&text).is_err());
    }

    #[test]
    fn probabilities_stay_within_one(p in 1.0f64..1e300) {
        prop_assume!(p > 1.0);
        let plain = p.to_string();
        let percent = format!("{}%", p * 100.0);
        prop_assert!(parse_probability(&plain).is_err(), "{}", plain);
        prop_assert!(parse_probability(&percent).is_err(), "{}", percent);
    }

    #[test]
    fn event_rates_are_finite_and_non_negative(text in unitish()) {
        if let Ok(r) = parse_per_second(&text) {
            prop_assert!(r.is_finite() && r >= 0.0, "{:?} -> {}", text, r);
        }
    }
}

/// Inputs the properties above found, kept as plain tests so they run on every build.
#[test]
fn rounding_at_the_top_of_the_mantissa_does_not_overflow() {
    // 39 digits with a fraction digit: the mantissa is u128::MAX and rounding added half the
    // divisor to it.
    let text = "34028236692093846346337460743176821145.5bit";
    bounded(LIMIT, text.to_string(), move || parse_all(text.to_string()));
}

#[test]
fn event_rates_beyond_f64_are_refused_or_finite() {
    for text in ["1e308/1ns", "1e300/1ns", "179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000/ns"] {
        if let Ok(r) = parse_per_second(text) {
            assert!(r.is_finite(), "{text} -> {r}");
        }
    }
}
