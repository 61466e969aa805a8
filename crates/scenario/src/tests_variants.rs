//! `[[variant]]` (protocol variants as a sweep axis), the effective-stack check and `link.rtt`.

use std::path::Path;
use std::time::Duration;

use crate::model::{Stack, Workload};
use crate::{parse_with, Inputs, LoadedScenario, ScenarioError, VariantDef};

fn inputs(set: &[&str], axes: &[&str], pick: &[&str]) -> Inputs {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
    Inputs {
        overrides: v(set),
        axes: v(axes),
        variants: v(pick),
        defined_variants: Vec::new(),
    }
}

fn run(
    text: &str,
    set: &[&str],
    axes: &[&str],
    pick: &[&str],
) -> Result<LoadedScenario, ScenarioError> {
    parse_with(text, "t.toml", Path::new("."), &inputs(set, axes, pick))
}

fn ok(text: &str) -> LoadedScenario {
    run(text, &[], &[], &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    run(text, &[], &[], &[])
        .expect_err("should be rejected")
        .to_string()
}

/// The issue's three protocols in one file: QUIC 1-RTT (the file as written), QUIC 0-RTT and
/// TCP + TLS 1.3, on a QUIC file that spells out `zero_rtt = false`.
const THREE: &str = r#"
[link]
rate = "10Mbit"

[[flow]]
app = "download"
size = "100kB"
zero_rtt = false

[[variant]]
name = "quic-1rtt"

[[variant]]
name = "quic-0rtt"
set = { "flow.connections" = 2, "flow.zero_rtt" = true }

[[variant]]
name = "tcp-tls1.3"
set = { flow = { stack = "tcp", tls = "1.3" } }

[sweep]
"link.rtt" = ["20ms", "80ms"]
"#;

#[test]
fn variants_are_a_sweep_axis_crossed_with_the_others() {
    let l = ok(THREE);
    assert_eq!(l.points.len(), 6);
    let axes: Vec<Vec<(String, String)>> = l.points.iter().map(|p| p.axes.clone()).collect();
    assert_eq!(
        axes[0],
        [
            ("variant".into(), "quic-1rtt".into()),
            ("link.rtt".into(), "20ms".into())
        ]
    );
    assert_eq!(
        axes[1],
        [
            ("variant".into(), "quic-1rtt".into()),
            ("link.rtt".into(), "80ms".into())
        ]
    );
    assert_eq!(axes[2][0].1, "quic-0rtt");
    assert_eq!(
        axes[5],
        [
            ("variant".into(), "tcp-tls1.3".into()),
            ("link.rtt".into(), "80ms".into())
        ]
    );
    let stacks: Vec<Stack> = l
        .points
        .iter()
        .map(|p| p.scenario.flows[0].stack())
        .collect();
    assert_eq!(
        stacks,
        [
            Stack::Quic,
            Stack::Quic,
            Stack::Quic,
            Stack::Quic,
            Stack::Tcp,
            Stack::Tcp
        ]
    );
    assert!(
        l.points[2].scenario.flows[0]
            .quic()
            .expect("a quic flow")
            .common
            .zero_rtt
    );
    assert!(
        !l.points[0].scenario.flows[0]
            .quic()
            .expect("a quic flow")
            .common
            .zero_rtt
    );
    assert!(matches!(
        l.points[2].scenario.flows[0].workload,
        Workload::Download { connections: 2, .. }
    ));
    // link.rtt: both directions get half the round trip.
    assert_eq!(
        l.points[1].scenario.bottleneck.up.delay,
        Duration::from_millis(40)
    );
    assert_eq!(
        l.points[1].scenario.bottleneck.down.delay,
        Duration::from_millis(40)
    );
    // --vary crosses with the variants too; --variant picks a subset in file order.
    let l = run(
        THREE,
        &[],
        &["link.rate=5Mbit,20Mbit"],
        &["tcp-tls1.3,quic-1rtt"],
    )
    .expect("valid");
    assert_eq!(l.points.len(), 8);
    assert_eq!(l.points[0].axes[0].1, "quic-1rtt");
    assert_eq!(l.points[7].axes[0].1, "tcp-tls1.3");
    assert_eq!(l.points[7].axes.len(), 3);
}

#[test]
fn a_key_of_another_stack_at_its_default_follows_the_effective_stack() {
    // Regression: --set flow.stack=tcp on a file with zero_rtt = false.
    let text = "[[flow]]\nzero_rtt = false\ninitial_rtt = \"333ms\"\n";
    let l = run(text, &["flow.stack=tcp"], &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(l.points[0].scenario.flows[0].stack(), Stack::Tcp);
    // A TCP key at its default on a QUIC flow, likewise (sack defaults to true).
    ok("[[flow]]\nsack = true\n");
    // A non-default value is still an error: it names the key, the variant and the position.
    let text = "[[flow]]\nzero_rtt = true\n\n[[variant]]\nname = \"quic\"\n\n[[variant]]\nname = \"tcp\"\nset = { \"flow.stack\" = \"tcp\" }\n";
    assert_eq!(
        err(text),
        "t.toml:2:1: flow.0.zero_rtt applies only to flows with stack = \"quic\" or \"quic-model\" or \"quiche\", but in variant \"tcp\" this flow has stack = \"tcp\""
    );
    let e = run("[[flow]]\nzero_rtt = true\n", &["flow.stack=tcp"], &[], &[]).expect_err("mixed");
    assert_eq!(
        e.to_string(),
        "t.toml:2:1: flow.0.zero_rtt applies only to flows with stack = \"quic\" or \"quic-model\" or \"quiche\", but this flow has stack = \"tcp\""
    );
    // A variant's own key of the wrong stack points into the variant.
    let text = "[[flow]]\nstack = \"tcp\"\n\n[[variant]]\nname = \"a\"\nset = { \"flow.zero_rtt\" = true }\n";
    let e = err(text);
    assert!(
        e.starts_with("t.toml:6:9: flow.0.zero_rtt applies only"),
        "{e}"
    );
    assert!(e.contains("in variant \"a\""), "{e}");
}

#[test]
fn set_wins_over_a_variant_and_variants_may_not_set_swept_keys() {
    let text = "[[variant]]\nname = \"slow\"\nset = { \"link.rate\" = \"1Mbit\" }\n[[variant]]\nname = \"fast\"\nset = { \"link.rate\" = \"50Mbit\" }\n";
    let l = run(text, &["link.rate=7Mbit"], &[], &[]).expect("valid");
    for p in &l.points {
        assert_eq!(
            p.scenario.bottleneck.up.rate,
            netem::config::RateProfile::Fixed(7_000_000)
        );
    }
    let e = run(text, &[], &["link.rate=1Mbit,2Mbit"], &[]).expect_err("swept");
    assert!(
        e.to_string()
            .contains("variant \"slow\" sets link.rate, which is also a sweep axis"),
        "{e}"
    );
    assert_eq!((e.line, e.column), (Some(3), Some(9)), "{e}");
}

#[test]
fn bad_variants_are_clear_errors() {
    let e = err(
        "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\nset = { \"flow.cc\" = \"cubic\" }\n",
    );
    assert_eq!(
        e,
        "t.toml:3:1: variant name \"a\" is used twice (first at t.toml:1:1); names must be unique"
    );
    let e = err("[[variant]]\nset = { \"flow.cc\" = \"cubic\" }\n");
    assert!(
        e.starts_with("t.toml:1:1: missing key variant.0.name"),
        "{e}"
    );
    let e = err("[[variant]]\nname = \"  \"\n");
    assert!(e.contains("must not be empty"), "{e}");
    let e = err("[[variant]]\nname = \"a\"\nset = {}\n");
    assert!(e.starts_with("t.toml:3:7: variant.0.set is empty"), "{e}");
    let e = err("variant = []\n");
    assert!(e.contains("declares no variant"), "{e}");
    let e = err("[[variant]]\nname = \"a\"\nsett = { \"flow.cc\" = \"cubic\" }\n");
    assert!(e.starts_with("t.toml:3:1: unknown key \"variant.0.sett\" (did you mean \"variant.0.set\"?); allowed keys in [[variant]]: name, set"), "{e}");
    let e = err("[[variant]]\nname = \"a\"\nset = { \"flow.stak\" = \"tcp\" }\n");
    assert!(
        e.starts_with("t.toml:3:9: unknown key \"flow.stak\" (did you mean \"flow.stack\"?)"),
        "{e}"
    );
    let e = err("[[variant]]\nname = \"a\"\nset = { \"flow.stack\" = \"udp\" }\n");
    assert!(e.starts_with("t.toml:3:24: unknown value \"udp\" for flow.stack (in variant \"a\"); allowed: quic, tcp, quic-model"), "{e}");
    assert!(e.contains("(in variant \"a\")"), "{e}");
    // A value of the file that only a variant's stack refuses names the variant too.
    let e = err("[[flow]]\nmtu = 600\nstack = \"tcp\"\n[[variant]]\nname = \"tcp\"\n[[variant]]\nname = \"quic\"\nset = { \"flow.stack\" = \"quic\" }\n");
    assert!(
        e.starts_with("t.toml:2:7: ") && e.ends_with("(in variant \"quic\")"),
        "{e}"
    );
    let e = err("[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n");
    assert!(
        e.contains("variant \"b\" sets nothing (the scenario as written), like variant \"a\""),
        "{e}"
    );
    let e = err("[[variant]]\nname = \"a\"\nset = { \"flow.cc\" = \"cubic\" }\n[[variant]]\nname = \"b\"\nset = { flow = { cc = \"cubic\" } }\n");
    assert!(
        e.contains("sets the same keys to the same values, like variant \"a\""),
        "{e}"
    );
    let e = err("[[variant]]\nname = \"a\"\nset = { \"variant.name\" = \"b\" }\n");
    assert!(e.contains("cannot be set or swept"), "{e}");
    // The picks: unknown names suggest the nearest, a file without variants says so.
    let e = run(THREE, &[], &[], &["tcp-tls13"])
        .expect_err("unknown")
        .to_string();
    assert!(e.starts_with("--variant tcp-tls13: unknown value \"tcp-tls13\": no variant of that name (did you mean \"tcp-tls1.3\"?); variants of the scenario: quic-1rtt, quic-0rtt, tcp-tls1.3"), "{e}");
    let e = run("", &[], &[], &["a"]).expect_err("none").to_string();
    assert!(e.contains("declares no [[variant]]"), "{e}");
    // Variants are declared, not set or swept from the command line.
    let e = run(THREE, &["variant=x"], &[], &[])
        .expect_err("set")
        .to_string();
    assert!(
        e.starts_with("--set variant=x: variant cannot be set or swept"),
        "{e}"
    );
    let e = run(THREE, &[], &["variant=a,b"], &[])
        .expect_err("vary")
        .to_string();
    assert!(e.contains("cannot be set or swept"), "{e}");
}

#[test]
fn variants_defined_by_a_program_take_the_same_path_as_the_files() {
    let file = ok(THREE);
    let base = THREE.split("[[variant]]").next().expect("head").to_string()
        + "[sweep]\n\"link.rtt\" = [\"20ms\", \"80ms\"]\n";
    let defs = vec![
        VariantDef {
            name: "quic-1rtt".into(),
            set: vec![],
        },
        VariantDef {
            name: "quic-0rtt".into(),
            set: vec!["flow.connections=2".into(), "flow.zero_rtt=true".into()],
        },
        VariantDef {
            name: "tcp-tls1.3".into(),
            set: vec!["flow.stack=tcp".into(), "flow.tls=1.3".into()],
        },
    ];
    let mut i = inputs(&[], &[], &[]);
    i.defined_variants = defs.clone();
    let coded = parse_with(&base, "t.toml", Path::new("."), &i).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(coded.points, file.points);
    // Both at once would be two lists of variants.
    let mut i = inputs(&[], &[], &[]);
    i.defined_variants = defs;
    let e = parse_with(THREE, "t.toml", Path::new("."), &i).expect_err("twice");
    assert!(e.to_string().contains("one list of variants"), "{e}");
}

#[test]
fn link_rtt_sets_both_delays_and_refuses_explicit_ones() {
    let l = ok("[link]\nrtt = \"80ms\"\nrate = \"5Mbit\"\n");
    assert_eq!(
        l.points[0].scenario.bottleneck.up.delay,
        Duration::from_millis(40)
    );
    assert_eq!(
        l.points[0].scenario.bottleneck.down.delay,
        Duration::from_millis(40)
    );
    // The BDP queue follows: 5 Mbit/s × 80 ms / 8 = 50,000 B.
    assert_eq!(l.points[0].scenario.bottleneck.up.queue.bytes, Some(50_000));
    let l = run("", &["link.rtt=600ms"], &[], &[]).expect("--set");
    assert_eq!(
        l.points[0].scenario.bottleneck.down.delay,
        Duration::from_millis(300)
    );
    let l = run("", &[], &["link.rtt=10ms,30ms"], &[]).expect("--vary");
    assert_eq!(
        l.points[1].scenario.bottleneck.up.delay,
        Duration::from_millis(15)
    );
    assert_eq!(
        l.points[1].axes,
        [("link.rtt".to_string(), "30ms".to_string())]
    );
    let e = err("[link]\ndelay = \"10ms\"\nrtt = \"80ms\"\n");
    assert_eq!(e, "t.toml:2:9: link.delay and link.rtt (at t.toml:3:7) both set the delay: link.rtt sets delay = rtt / 2 in both directions; remove one of them");
    let e = err("[link]\nrtt = \"80ms\"\n[link.down]\ndelay = \"10ms\"\n");
    assert!(
        e.starts_with("t.toml:4:9: link.down.delay and link.rtt"),
        "{e}"
    );
    let e = run("[link]\ndelay = \"10ms\"\n", &["link.rtt=80ms"], &[], &[])
        .expect_err("conflict")
        .to_string();
    assert!(e.contains("link.rtt (at --set link.rtt=80ms)"), "{e}");
    let e = err("[link.up]\nrtt = \"80ms\"\n");
    assert!(
        e.starts_with("t.toml:2:1: unknown key \"link.up.rtt\""),
        "{e}"
    );
    let e = err("[link]\nrtt = \"-5ms\"\n");
    assert!(e.contains("link.rtt"), "{e}");
}

#[test]
fn the_example_scenario_declares_the_three_protocols() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/protocols.toml");
    let l = crate::load(&path, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = l
        .points
        .iter()
        .map(|p| p.axes[0].1.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(names, ["quic-0rtt", "quic-1rtt", "tcp-tls1.3"]);
}
