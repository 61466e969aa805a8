//! `link.mahimahi_trace`: Mahimahi packet-delivery traces as a link's rate profile, and the
//! positioned errors of bad traces.

use std::path::Path;
use std::time::Duration;

use netem::config::RateProfile;

use crate::{parse_str, LoadedScenario, ScenarioError};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn dir() -> fsutil::PrivateDir {
    fsutil::PrivateDir::new("scenario-test-mahimahi-").expect("temp dir")
}

fn parse(dir: &Path, text: &str) -> Result<LoadedScenario, ScenarioError> {
    parse_str(text, "t.toml", dir, &[], &[])
}

/// The error of `[link]\nmahimahi_trace = "<file>"` with `file` holding `trace`.
fn trace_error(trace: &str) -> ScenarioError {
    let d = dir();
    std::fs::write(d.path().join("bad.down"), trace).expect("write trace");
    parse(d.path(), "[link]\nmahimahi_trace = \"bad.down\"\n").expect_err("a bad trace")
}

/// `(ms, opportunities per ms)` steps repeating every `period` ms.
fn schedule(steps: &[(u64, u64)], period: u64) -> RateProfile {
    RateProfile::Schedule {
        steps: steps
            .iter()
            .map(|&(m, n)| (ms(m), n * 12_000_000))
            .collect(),
        repeat_every: Some(ms(period)),
    }
}

#[test]
fn a_trace_becomes_a_per_millisecond_rate_repeating_with_its_last_timestamp() {
    let d = dir();
    // ms 0: one opportunity (the last line's, opening the next loop); ms 1: three; ms 2: one;
    // ms 3-4: none; ms 5: one; the trace lasts 6 ms. Blank lines are skipped.
    std::fs::write(d.path().join("cell.down"), "1\n1\n1\n2\n\n5\n6\n").expect("write");
    std::fs::write(d.path().join("cell.up"), "2\n").expect("write");
    let l = parse(
        d.path(),
        "[link]\nrate = \"5Mbit\"\n[link.down]\nmahimahi_trace = \"cell.down\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = &l.points[0].scenario;
    assert_eq!(s.bottleneck.up.rate, RateProfile::Fixed(5_000_000));
    let down = &s.bottleneck.down.rate;
    assert_eq!(
        *down,
        schedule(&[(0, 1), (1, 3), (2, 1), (3, 0), (5, 1)], 6)
    );
    // Six opportunities of 1500 bytes every 6 ms: 12 Mbit/s on average.
    assert_eq!(down.mean_rate(ms(0), ms(600)), Some(12_000_000.0));
    // In [link], both directions; a direction table overrides it.
    let l = parse(
        d.path(),
        "[link]\nmahimahi_trace = \"cell.down\"\n[link.up]\nmahimahi_trace = \"cell.up\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = &l.points[0].scenario;
    assert_eq!(s.bottleneck.down.rate, *down);
    assert_eq!(s.bottleneck.up.rate, schedule(&[(0, 1), (1, 0)], 2));
}

#[test]
fn a_generated_constant_trace_is_its_rate() {
    let d = dir();
    // 12 Mbit/s: one opportunity every ms for 10 s; 48 Mbit/s: four.
    let one: String = (1..=10_000).map(|t| format!("{t}\n")).collect();
    let four: String = (1..=10_000)
        .map(|t| format!("{t}\n{t}\n{t}\n{t}\n"))
        .collect();
    std::fs::write(d.path().join("12mbit"), one).expect("write");
    std::fs::write(d.path().join("48mbit"), four).expect("write");
    for (file, rate) in [("12mbit", 12_000_000), ("48mbit", 48_000_000)] {
        let l = parse(d.path(), &format!("[link]\nmahimahi_trace = {file:?}\n"))
            .unwrap_or_else(|e| panic!("{e}"));
        let r = &l.points[0].scenario.bottleneck.up.rate;
        assert_eq!(*r, schedule(&[(0, rate / 12_000_000)], 10_000));
        assert_eq!(r.mean_rate(ms(0), ms(25_000)), Some(rate as f64));
    }
}

#[test]
fn bad_traces_name_the_key_and_the_trace_line() {
    // The key's value is at t.toml:2:18; each message names the trace and its line.
    let at = |e: &ScenarioError| (e.file.clone(), e.line, e.column);
    let want = ("t.toml".to_string(), Some(2), Some(18));
    for (trace, line, says) in [
        (
            "1\n2\nfast\n",
            3,
            "\"fast\" is not a time in whole milliseconds",
        ),
        ("1\n-2\n", 2, "\"-2\" is not a time in whole milliseconds"),
        ("1\n2.5\n", 2, "\"2.5\" is not a time"),
        ("1\n+2\n", 2, "\"+2\" is not a time"),
        (
            "99999999999999999999\n",
            1,
            "\"99999999999999999999\" is not a time",
        ),
        (
            "1\n5\n3\n",
            3,
            "timestamps must not decrease: 3 ms after 5 ms",
        ),
        ("0\n0\n\n", 2, "the last timestamp is 0 ms"),
    ] {
        let e = trace_error(trace);
        assert_eq!(at(&e), want, "{e}");
        assert!(
            e.message.contains(&format!("bad.down line {line}: {says}")),
            "{trace:?}: {e}"
        );
    }
    let e = trace_error("\n \n");
    assert_eq!(at(&e), want, "{e}");
    assert!(
        e.message.ends_with("bad.down: the trace has no timestamps"),
        "{e}"
    );
    let d = dir();
    let e = parse(d.path(), "[link]\nmahimahi_trace = \"missing\"\n").expect_err("missing");
    assert!(e.message.contains("missing: cannot open"), "{e}");
    let e = parse(d.path(), "[link]\nmahimahi_trace = \".\"\n").expect_err("directory");
    assert!(e.message.contains("a directory"), "{e}");
    let e = parse(d.path(), "[link]\nmahimahi_trace = 5\n").expect_err("not a path");
    assert!(e.message.contains("a file path"), "{e}");
}

#[test]
fn a_trace_excludes_the_other_rate_keys_and_rate_repeat() {
    let d = dir();
    std::fs::write(d.path().join("t.down"), "1\n").expect("write");
    for other in [
        "rate = \"1Mbit\"",
        "rate_schedule = [{ at = \"0s\", rate = \"1Mbit\" }]",
        "rate_trace = \"x.csv\"",
    ] {
        let e = parse(
            d.path(),
            &format!("[link]\n{other}\nmahimahi_trace = \"t.down\"\n"),
        )
        .expect_err("two rates");
        assert!(
            e.message
                .contains("set only one of rate, rate_schedule, rate_trace, mahimahi_trace"),
            "{e}"
        );
    }
    let e = parse(
        d.path(),
        "[link]\nmahimahi_trace = \"t.down\"\nrate_repeat = \"1s\"\n",
    )
    .expect_err("repeat");
    assert_eq!((e.line, e.column), (Some(3), Some(15)), "{e}");
    assert!(e.message.contains("repeats with its own period"), "{e}");
}

#[test]
fn too_many_steps_are_refused_at_the_line_that_makes_one_too_many() {
    let d = dir();
    // One opportunity every other ms: two steps per opportunity.
    let n = crate::limits::MAX_RATE_STEPS / 2 + 2;
    let trace: String = (0..n).map(|i| format!("{}\n", 2 * i)).collect();
    std::fs::write(d.path().join("many"), trace).expect("write");
    let e = parse(d.path(), "[link]\nmahimahi_trace = \"many\"\n").expect_err("too many");
    assert!(
        e.message.contains(&format!(
            "many line {n}: the trace makes more than 1000000 rate steps"
        )),
        "{e}"
    );
}

#[test]
fn the_example_runs_its_synthetic_trace_on_the_downlink() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples");
    let l = crate::load(&dir.join("mahimahi.toml"), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    let s = &l.points[0].scenario;
    assert_eq!(s.bottleneck.up.rate, RateProfile::Fixed(5_000_000));
    let trace = std::fs::read_to_string(dir.join("cellular-like.down")).expect("trace");
    let lines: Vec<u64> = trace.lines().map(|t| t.parse().expect("ms")).collect();
    let period = *lines.last().expect("lines");
    let RateProfile::Schedule {
        steps,
        repeat_every,
    } = &s.bottleneck.down.rate
    else {
        panic!("{:?}", s.bottleneck.down.rate)
    };
    // What the comment says: 10 s, 10.0 Mbit/s on average.
    assert_eq!((period, *repeat_every), (10_000, Some(ms(10_000))));
    let mean = s.bottleneck.down.rate.mean_rate(ms(0), ms(30_000));
    assert_eq!(mean, Some(lines.len() as f64 * 12_000.0 / 10.0));
    assert!((mean.unwrap_or(0.0) / 10e6 - 1.0).abs() < 0.01, "{mean:?}");
    assert!(steps.len() > 1000);
    assert_eq!(
        l.points
            .iter()
            .map(|p| p.scenario.flows[0].stack())
            .collect::<Vec<_>>(),
        [crate::model::Stack::Quic, crate::model::Stack::Tcp]
    );
}

#[test]
fn a_random_phase_needs_a_rate_that_repeats() {
    let d = dir();
    std::fs::write(d.path().join("t.down"), "1\n2\n").expect("write");
    let l = parse(
        d.path(),
        "[link]\nrate = \"5Mbit\"\n[link.down]\nmahimahi_trace = \"t.down\"\nrandom_phase = true\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = &l.points[0].scenario;
    assert!(s.bottleneck.down.random_phase && !s.bottleneck.up.random_phase);
    let e = parse(d.path(), "[link]\nrate = \"5Mbit\"\nrandom_phase = true\n")
        .expect_err("a fixed rate has no phase");
    assert_eq!((e.line, e.column), (Some(3), Some(16)), "{e}");
    assert!(e.message.contains("needs a repeating rate"), "{e}");
}
