//! `link.qdisc`: every discipline by name and by table, its parameters, its limit, and the
//! positioned errors for bad names, bad values and another discipline's keys.

use std::path::Path;
use std::time::Duration;

use netem::qdisc::{CodelConfig, DualPi2Config, FqCodelConfig, PieConfig, RedConfig};
use netem::QdiscConfig;

use crate::model::DuplexLink;
use crate::registry::{keys, DefaultValue};
use crate::{parse_str, LoadedScenario, ScenarioError};

fn parse(text: &str) -> Result<LoadedScenario, ScenarioError> {
    parse_str(text, "t.toml", Path::new("."), &[], &[])
}

fn err(text: &str) -> ScenarioError {
    parse(text).expect_err("should be rejected")
}

fn link(text: &str) -> DuplexLink {
    let s = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    s.points[0].scenario.bottleneck.clone()
}

fn up(text: &str) -> QdiscConfig {
    link(text).up.qdisc
}

#[test]
fn each_discipline_by_name_has_linux_defaults() {
    assert_eq!(up(""), QdiscConfig::DropTail);
    assert_eq!(up("[link]\nqdisc = \"droptail\"\n"), QdiscConfig::DropTail);
    for (name, want) in [
        ("codel", QdiscConfig::Codel(CodelConfig::default())),
        ("fq_codel", QdiscConfig::FqCodel(FqCodelConfig::default())),
        ("pie", QdiscConfig::Pie(PieConfig::default())),
        ("red", QdiscConfig::Red(RedConfig::default())),
        ("dualpi2", QdiscConfig::DualPi2(DualPi2Config::default())),
    ] {
        let l = link(&format!("[link]\nqdisc = {name:?}\n"));
        assert_eq!(l.up.qdisc, want, "{name}");
        assert_eq!(l.down.qdisc, want, "{name}");
        let table = up(&format!("[link]\nqdisc = {{ model = {name:?} }}\n"));
        assert_eq!(table, want, "{name} as a table");
    }
    // Linux's values, spelled out once more so a changed netem default is noticed here.
    let QdiscConfig::Codel(c) = up("[link]\nqdisc = \"codel\"\n") else {
        panic!("codel")
    };
    assert_eq!(
        (c.target, c.interval, c.limit_packets, c.ecn),
        (
            Duration::from_millis(5),
            Duration::from_millis(100),
            1000,
            false
        )
    );
    let QdiscConfig::FqCodel(f) = up("[link]\nqdisc = \"fq_codel\"\n") else {
        panic!("fq_codel")
    };
    assert_eq!(
        (f.flows, f.quantum, f.limit_packets, f.codel.ecn),
        (1024, 1500, 10240, true)
    );
    let QdiscConfig::Pie(p) = up("[link]\nqdisc = \"pie\"\n") else {
        panic!("pie")
    };
    assert_eq!(
        (p.target, p.tupdate, p.limit_packets),
        (Duration::from_millis(15), Duration::from_millis(15), 1000)
    );
}

/// A key at its documented default gives exactly the discipline's default: the registry's
/// texts and netem's `Default`s say the same.
#[test]
fn documented_defaults_are_the_disciplines_defaults() {
    let models = ["codel", "fq_codel", "pie", "red", "dualpi2"];
    let mut checked = 0;
    for k in keys().iter().filter(|k| k.path.starts_with("link.qdisc.")) {
        let DefaultValue::Value(v) = k.default else {
            continue;
        };
        let key = k.path.trim_start_matches("link.qdisc.");
        for model in models {
            let plain =
                parse(&format!("[link]\nqdisc = {{ model = {model:?} }}\n")).expect("plain model");
            let value = if v == "true" || v == "false" || v.parse::<f64>().is_ok() {
                v.to_string()
            } else {
                format!("{v:?}")
            };
            let Ok(with) = parse(&format!(
                "[link]\nqdisc = {{ model = {model:?}, {key} = {value} }}\n"
            )) else {
                continue; // not a key of this model
            };
            assert_eq!(
                with.points[0].scenario.bottleneck, plain.points[0].scenario.bottleneck,
                "{model}: {key} = {value} is not its default"
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} defaults checked");
}

#[test]
fn parameters_reach_the_discipline() {
    let q = up("[link]\nqdisc = { model = \"codel\", target = \"10ms\", interval = \"50ms\", ecn = true, ce_threshold = \"2ms\" }\n");
    assert_eq!(
        q,
        QdiscConfig::Codel(CodelConfig {
            target: Duration::from_millis(10),
            interval: Duration::from_millis(50),
            ecn: true,
            ce_threshold: Some(Duration::from_millis(2)),
            ..CodelConfig::default()
        })
    );
    let QdiscConfig::FqCodel(f) = up("[link]\nqdisc = { model = \"fq_codel\", flows = 64, quantum = \"300B\", ecn = false, target = \"1ms\", drop_batch = 8, memory_limit = \"1MiB\" }\n") else {
        panic!("fq_codel")
    };
    assert_eq!(
        (
            f.flows,
            f.quantum,
            f.codel.ecn,
            f.codel.target,
            f.drop_batch,
            f.memory_limit
        ),
        (64, 300, false, Duration::from_millis(1), 8, 1 << 20)
    );
    let QdiscConfig::Pie(p) = up("[link]\nqdisc = { model = \"pie\", target = \"20ms\", tupdate = \"30ms\", alpha = 0.25, beta = 2.5, ecn = true, bytemode = true }\n") else {
        panic!("pie")
    };
    assert_eq!(
        (p.target, p.tupdate, p.alpha, p.beta, p.ecn, p.bytemode),
        (
            Duration::from_millis(20),
            Duration::from_millis(30),
            0.25,
            2.5,
            true,
            true
        )
    );
    let QdiscConfig::Red(r) = up("[link]\nqdisc = { model = \"red\", min = \"20KB\", max = \"60KB\", probability = \"10%\", avpkt = \"1500B\", bandwidth = \"5Mbit\", ecn = true, adaptive = true }\n") else {
        panic!("red")
    };
    assert_eq!(
        (
            r.min_bytes,
            r.max_bytes,
            r.avpkt,
            r.bandwidth,
            r.ecn,
            r.adaptive
        ),
        (20_000, 60_000, 1500, Some(5_000_000), true, true)
    );
    assert!((r.max_p - 0.1).abs() < 1e-12);
    // tc's default burst (2·20000 + 60000) / (3·1500) = 22 packets → wlog as tc picks it.
    assert_eq!(
        Some(r.wlog),
        netem::qdisc::red::wlog_for_burst(20_000, 22, 1500)
    );
    let QdiscConfig::DualPi2(d) = up("[link]\nqdisc = { model = \"dualpi2\", target = \"20ms\", step_threshold = \"2ms\", coupling_factor = 4, c_protection = \"25%\", drop_overload = false }\n") else {
        panic!("dualpi2")
    };
    assert_eq!(
        (
            d.target,
            d.step_threshold,
            d.coupling_factor,
            d.c_protection_percent,
            d.drop_overload
        ),
        (
            Duration::from_millis(20),
            Duration::from_millis(2),
            4,
            25,
            false
        )
    );
}

#[test]
fn per_direction_qdisc() {
    let l = link(
        "[link]\nqdisc = \"codel\"\n[link.down]\nqdisc = { model = \"pie\", target = \"20ms\" }\n",
    );
    assert!(matches!(l.up.qdisc, QdiscConfig::Codel(_)));
    let QdiscConfig::Pie(p) = l.down.qdisc else {
        panic!("down is pie")
    };
    assert_eq!(p.target, Duration::from_millis(20));
    let l = link("[link.up]\nqdisc = \"fq_codel\"\n");
    assert!(matches!(l.up.qdisc, QdiscConfig::FqCodel(_)));
    assert_eq!(l.down.qdisc, QdiscConfig::DropTail);
}

#[test]
fn the_limit_is_linuxs_unless_the_scenario_sets_one() {
    let limit = |text: &str| match up(text) {
        QdiscConfig::Codel(c) => c.limit_packets,
        QdiscConfig::Red(r) => r.limit_bytes,
        other => panic!("{other:?}"),
    };
    // The default `link.queue = "1bdp"` is drop-tail's and not the discipline's.
    assert_eq!(limit("[link]\nqdisc = \"codel\"\n"), 1000);
    assert_eq!(limit("[link]\nqdisc = \"codel\"\nqueue = \"50pkt\"\n"), 50);
    // 10 Mbit/s × 30 ms (the default path) = 37,500 B = 25 packets of 1500 B.
    assert_eq!(limit("[link]\nqdisc = \"codel\"\nqueue = \"1bdp\"\n"), 25);
    assert_eq!(limit("[link]\nqdisc = \"codel\"\nqueue = \"3001B\"\n"), 3);
    assert_eq!(
        limit("[link]\nqdisc = { model = \"codel\", limit = \"2bdp\" }\n"),
        50
    );
    assert_eq!(
        limit("[link]\nqdisc = \"codel\"\nqueue = \"unlimited\"\n"),
        u64::MAX
    );
    assert_eq!(limit("[link]\nqdisc = \"red\"\n"), 400_000);
    assert_eq!(
        limit("[link]\nqdisc = \"red\"\nqueue = \"10pkt\"\n"),
        15_000
    );
    // Drop-tail keeps using link.queue as it always did.
    let l = link("[link]\nqueue = \"50pkt\"\n");
    assert_eq!(l.up.queue.packets, Some(50));
    let e = err("[link]\nqueue = \"50pkt\"\nqdisc = { model = \"codel\", limit = \"100pkt\" }\n");
    assert_eq!((e.line, e.column), (Some(2), Some(9)), "{e}");
    assert!(e.message.contains("both set"), "{e}");
    let e = err("[link]\nqdisc = { model = \"pie\", limit = \"0pkt\" }\n");
    assert!(e.message.contains("at least one packet"), "{e}");
}

#[test]
fn bad_names_and_values_are_positioned_with_the_allowed_values() {
    let e = err("[link]\nqdisc = \"codle\"\n");
    assert_eq!((e.line, e.column), (Some(2), Some(9)), "{e}");
    assert!(e.message.contains("\"codle\""), "{e}");
    assert_eq!(
        e.allowed,
        ["droptail", "red", "codel", "fq_codel", "pie", "dualpi2"]
    );
    let e = err("[link]\nqdisc = { model = \"fq-codel\" }\n");
    assert_eq!((e.line, e.column), (Some(2), Some(19)), "{e}");
    assert!(e.allowed.contains(&"fq_codel".to_string()), "{e}");
    let e = err("[link]\nqdisc = { target = \"5ms\" }\n");
    assert!(e.message.contains("missing key link.qdisc.model"), "{e}");
    let e = err("[link]\nqdisc = { model = \"codel\", target = 5 }\n");
    assert_eq!((e.line, e.column), (Some(2), Some(37)), "{e}");
    assert!(e.message.contains("has no unit"), "{e}");
    let e = err("[link]\nqdisc = { model = \"codel\", target = \"0ms\" }\n");
    assert!(e.message.contains("greater than zero"), "{e}");
    let e = err("[link]\nqdisc = { model = \"fq_codel\", flows = 0 }\n");
    assert!(e.message.contains("not within 1 and 65536"), "{e}");
    let e = err("[link]\nqdisc = { model = \"red\", min = \"100KB\", max = \"50KB\" }\n");
    assert!(e.message.contains("must not exceed max"), "{e}");
    let e = err("[link]\nqdisc = { model = \"red\", burst = 2 }\n");
    assert!(e.message.contains("too small"), "{e}");
    // Extreme sizes are an error or a configuration, never an overflow.
    let _ =
        parse("[link]\nqdisc = { model = \"red\", min = \"9000000TB\", max = \"9000000TB\" }\n");
    let _ = parse("[link]\nqdisc = { model = \"codel\", limit = \"9000000TB\" }\n");
    let e = err("[link]\nqdisc = { model = \"codel\", tagret = \"5ms\" }\n");
    assert!(e.message.contains("unknown key"), "{e}");
    let e = err("[link]\nqdisc = 3\n");
    assert!(e.message.contains("expected a discipline name"), "{e}");
}

#[test]
fn a_key_of_another_discipline_names_its_owner() {
    let e = err("[link]\nqdisc = { model = \"pie\", interval = \"50ms\" }\n");
    assert_eq!((e.line, e.column), (Some(2), Some(26)), "{e}");
    assert!(
        e.message
            .contains("link.qdisc.interval does not apply to the pie queue discipline; it is a parameter of codel, fq_codel"),
        "{e}"
    );
    assert_eq!(e.allowed_title, "keys of pie");
    assert!(e.allowed.contains(&"tupdate".to_string()));
    let e = err("[link]\nqdisc = { model = \"codel\", flows = 64 }\n");
    assert!(e.message.contains("parameter of fq_codel"), "{e}");
    let e = err("[link]\nqdisc = { model = \"droptail\", limit = \"10pkt\" }\n");
    assert!(e.message.contains("link.queue"), "{e}");
    let e = err("[link]\nqdisc = { model = \"dualpi2\", ecn = true }\n");
    assert!(e.message.contains("always marks"), "{e}");
    let e = err("[link]\nqdisc = { model = \"fq_codel\", min = \"10KB\" }\n");
    assert!(e.message.contains("parameter of red"), "{e}");
    let e = err("[link.up]\nqdisc = { model = \"codel\", alpha = 0.1 }\n");
    assert!(e.message.starts_with("link.up.qdisc.alpha"), "{e}");
    assert!(e.message.contains("pie, dualpi2"), "{e}");
}

#[test]
fn qdisc_from_the_command_line() {
    let s = parse_str(
        "",
        "t.toml",
        Path::new("."),
        &["link.qdisc=\"fq_codel\"".into()],
        &[],
    )
    .expect("--set link.qdisc");
    assert!(matches!(
        s.points[0].scenario.bottleneck.up.qdisc,
        QdiscConfig::FqCodel(_)
    ));
    let s = parse_str(
        "",
        "t.toml",
        Path::new("."),
        &[
            "link.qdisc.model=\"codel\"".into(),
            "link.qdisc.target=\"3ms\"".into(),
        ],
        &[],
    )
    .expect("--set link.qdisc.model and target");
    let QdiscConfig::Codel(c) = &s.points[0].scenario.bottleneck.down.qdisc else {
        panic!("codel")
    };
    assert_eq!(c.target, Duration::from_millis(3));
}
