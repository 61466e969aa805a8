//! Every accepted spelling, every rejection, and the spellings the three old parsers (scenario
//! files, `quiclab load`, `quiclab serve`/`get` flags and server paths) disagreed on.

use super::*;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

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
        ("0", 0),
        ("100mbit", 100_000_000),
        ("3b", 3),
        ("2Bps", 16),
        ("1Tbit", 1_000_000_000_000),
    ];
    for (text, bps) in ok {
        assert_eq!(parse_rate(text), Ok(Rate::Bps(bps)), "{text}");
    }
    assert_eq!(parse_rate("unlimited"), Ok(Rate::Unlimited));
    assert_eq!(parse_rate(" Unlimited "), Ok(Rate::Unlimited));
    for bad in [
        "",
        "Mbit",
        "10 furlongs",
        "10Mbit/h",
        "1.2.3Mbit",
        "-5Mbit",
        "99999999999Tbit",
        "10M",
        "12345",
        "20",
        "1.5",
    ] {
        assert!(parse_rate(bad).is_err(), "{bad} should be rejected");
    }
    // A bare number: bit/s or Mbit/s? Refused, with the unit forms it could have meant.
    let e = parse_rate("20").unwrap_err();
    assert!(
        e.0.contains("\"20Mbit\"") && e.0.contains("has no unit"),
        "{e}"
    );
    // Where a file format says bare numbers are bit/s (rate traces), they still are.
    assert_eq!(parse_rate_or_bps("12345"), Ok(Rate::Bps(12345)));
    assert_eq!(parse_rate_or_bps("10Mbit"), Ok(Rate::Bps(10_000_000)));
    assert!(parse_rate_or_bps("10M").is_err());
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
        ("3 bytes", 3),
        ("1 byte", 1),
        ("2GB", 2_000_000_000),
        ("1TB", 1_000_000_000_000),
        ("1GiB", 1 << 30),
        ("1TiB", 1 << 40),
        // Spellings only the server and `--size`-style flags accepted before.
        ("11000", 11_000),
        ("10k", 10_000),
        ("10K", 10_000),
        ("5M", 5_000_000),
        ("1G", 1_000_000_000),
        ("64Ki", 65_536),
        ("1Mi", 1 << 20),
        ("0", 0),
    ];
    for (text, bytes) in ok {
        assert_eq!(parse_size(text), Ok(bytes), "{text}");
    }
    for bad in [
        "MB",
        "10Mbit",
        "1.5 parsecs",
        "x",
        "",
        "1.5B",
        "0.1KiB",
        "99999999999999999999",
        "12x",
    ] {
        assert!(parse_size(bad).is_err(), "{bad} should be rejected");
    }
}

#[test]
fn durations() {
    let ok = [
        ("20ms", Duration::from_millis(20)),
        ("1.5s", Duration::from_millis(1500)),
        ("250us", Duration::from_micros(250)),
        ("250µs", Duration::from_micros(250)),
        ("0", Duration::ZERO),
        ("2min", secs(120)),
        ("1h", secs(3600)),
        ("0.1ms", Duration::from_micros(100)),
        ("7ns", Duration::from_nanos(7)),
        (" 30 s ", secs(30)),
        (".5s", Duration::from_millis(500)),
        ("333ms", Duration::from_millis(333)),
    ];
    for (text, d) in ok {
        assert_eq!(parse_duration(text), Ok(d), "{text}");
    }
    for bad in ["20 days", "ms", "1.5.5s", "", "-1s", "s", "fast", "1e3s"] {
        assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
    }
}

/// The disagreements of the old parsers now have one answer everywhere.
#[test]
fn old_disagreements_are_settled() {
    // Scenario files took `2min` but not `1.5m`; `quiclab load` took both.
    assert_eq!(parse_duration("2min"), Ok(secs(120)));
    assert_eq!(parse_duration("1.5m"), Ok(secs(90)));
    assert_eq!(parse_duration("1.5min"), Ok(secs(90)));
    // Scenario files refused a bare number; load and serve read it as seconds. A wrong guess
    // changes an experiment by 1000x, so a unit is required everywhere (zero needs none).
    for bare in ["2", "1.5", "20"] {
        let err = parse_duration(bare).unwrap_err();
        assert!(err.0.contains("no unit") && err.0.contains("ms"), "{err}");
    }
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    // load's float arithmetic rounded; the exact decimal keeps every nanosecond.
    assert_eq!(parse_duration("0.1s"), Ok(Duration::from_millis(100)));
    assert_eq!(
        parse_duration("1.000000001s"),
        Ok(Duration::from_nanos(1_000_000_001))
    );
    // The server read `5M` and `64Ki`, scenario files `5MB` and `64KiB`: both mean the same.
    assert_eq!(parse_size("5M"), parse_size("5MB"));
    assert_eq!(parse_size("64Ki"), parse_size("64KiB"));
    // `serve --... 16Mb` stripped the `b` and read bytes; b is bits, so it is refused.
    let err = parse_size("16Mb").unwrap_err();
    assert!(err.0.contains("bits"), "{err}");
    assert!(
        err.0.contains("KiB"),
        "the error lists the accepted units: {err}"
    );
    // Fractional sizes were rounded by scenario files and refused by the server.
    assert!(parse_size("1.5").is_err());
}

#[test]
fn errors_say_what_is_accepted() {
    let e = parse_duration("20 days").unwrap_err();
    assert!(e.0.contains("ns, us, ms, s, m or min, h"), "{e}");
    let e = parse_size("1.5 parsecs").unwrap_err();
    assert!(e.0.contains("KB") && e.0.contains("KiB"), "{e}");
    let e = parse_rate("10 furlongs").unwrap_err();
    assert!(e.0.starts_with("unknown rate unit"), "{e}");
    assert!(e.0.contains("Mbit"), "{e}");
    let e = parse_rate("10M").unwrap_err();
    assert!(e.0.contains("bits or bytes"), "{e}");
    let e = parse_per_second("fast").unwrap_err();
    assert!(e.0.contains("COUNT/PERIOD"), "{e}");
    let e = parse_packets("10KB").unwrap_err();
    assert!(e.0.contains("pkt"), "{e}");
}

#[test]
fn event_rates() {
    let ok = [
        ("100/s", 100.0),
        ("100/1s", 100.0),
        ("6000/1m", 100.0),
        ("6000/m", 100.0),
        ("6000/min", 100.0),
        ("5/500ms", 10.0),
        ("42", 42.0),
        ("0", 0.0),
        ("1.5/s", 1.5),
        ("3600/h", 1.0),
        ("1/.5s", 2.0),
    ];
    for (text, hz) in ok {
        assert_eq!(parse_per_second(text), Ok(hz), "{text}");
    }
    for bad in ["fast", "10/0s", "-1/s", "10/x", "inf/s", ""] {
        assert!(parse_per_second(bad).is_err(), "{bad} should be rejected");
    }
}

#[test]
fn packets() {
    assert_eq!(parse_packets("10pkt"), Ok(10));
    assert_eq!(parse_packets("3 packets"), Ok(3));
    assert_eq!(parse_packets("1 packet"), Ok(1));
    assert_eq!(parse_packets("4pkts"), Ok(4));
    assert_eq!(parse_packets("7"), Ok(7));
    assert_eq!(parse_packets("2.0pkt"), Ok(2));
    for bad in ["1.5pkt", "10KB", "pkt"] {
        assert!(parse_packets(bad).is_err(), "{bad} should be rejected");
    }
}

#[test]
fn probabilities() {
    assert_eq!(parse_probability("1.5%"), Ok(0.015));
    assert_eq!(parse_probability("0.015"), Ok(0.015));
    assert_eq!(parse_probability("100%"), Ok(1.0));
    assert_eq!(parse_probability("0"), Ok(0.0));
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
    assert_eq!(format_rate(Rate::Unlimited), "unlimited");
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

#[test]
fn negative_values_are_named_as_such() {
    // Regression: "-5ms" was reported as "does not start with a number".
    for text in ["-5ms", " -5ms", "-0.5s", "-.5s"] {
        let e = parse_duration(text).unwrap_err().0;
        assert!(e.contains("must not be negative"), "{text}: {e}");
    }
    assert!(parse_size("-10MB")
        .unwrap_err()
        .0
        .contains("must not be negative"));
    assert!(parse_duration("ms")
        .unwrap_err()
        .0
        .contains("does not start with a number"));
}
