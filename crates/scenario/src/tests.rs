//! End-to-end tests of the crate's entry points: text in, resolved scenarios and errors out.

use std::path::Path;
use std::time::Duration;

use congestion::config::{CcConfig, RenoCounting};
use netem::config::{Jitter, LossConfig, QueueLimit, RateProfile};
use netem::loss::gilbert_elliott_mean_loss;

use crate::model::{
    CcChoice, CrossPattern, QuicCommonKnobs, QuicKnobs, QuicModelKnobs, Stack, TcpKnobs, TlsMode,
    Workload,
};
use crate::registry::{keys, DefaultValue};
use crate::{load, parse_str, run_seed, Inputs, LoadedScenario, ScenarioError};

fn parse(text: &str) -> Result<LoadedScenario, ScenarioError> {
    parse_with(text, &[], &[])
}

fn parse_with(text: &str, set: &[&str], axes: &[&str]) -> Result<LoadedScenario, ScenarioError> {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let axes: Vec<String> = axes.iter().map(|s| s.to_string()).collect();
    parse_str(text, "t.toml", Path::new("."), &set, &axes)
}

fn ok(text: &str) -> LoadedScenario {
    parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> ScenarioError {
    parse(text).expect_err("should be rejected")
}

#[test]
fn empty_file_gives_the_documented_defaults() {
    let l = ok("");
    assert_eq!(
        (l.name.as_str(), l.base_seed, l.reps, l.points.len()),
        ("t", 1, 1, 1)
    );
    let s = &l.points[0].scenario;
    assert_eq!(s.duration, Duration::from_secs(30));
    assert_eq!(s.sample_interval, Duration::from_millis(100));
    assert_eq!(s.bottleneck.up.rate, RateProfile::Fixed(10_000_000));
    assert_eq!(s.bottleneck.down.delay, Duration::from_millis(15));
    assert_eq!(s.bottleneck.up.jitter, Jitter::None);
    // 1 BDP of 10 Mbit/s × 30 ms.
    assert_eq!(
        s.bottleneck.up.queue,
        QueueLimit {
            packets: None,
            bytes: Some(37_500)
        }
    );
    assert_eq!(s.flows.len(), 1);
    let f = &s.flows[0];
    assert_eq!(f.name, "flow0");
    assert_eq!(f.workload, Workload::Bulk { upload: true });
    let CcChoice::Ours(CcConfig::NewReno {
        counting: RenoCounting::Exact,
        common,
    }) = f.cc
    else {
        panic!("default cc is exact NewReno, got {:?}", f.cc)
    };
    assert_eq!(
        (common.initial_window_packets, common.minimum_window_packets),
        (10, 2)
    );
    assert_eq!(common.loss_reduction_factor, 0.5);
    assert_eq!(f.quic().expect("a quic flow").mtu, 1500);
    assert_eq!(
        f.quic().expect("a quic flow").common.stream_window,
        16_000_000
    );
    assert_eq!(
        f.quic().expect("a quic flow").common.initial_rtt,
        Duration::from_millis(333)
    );
    assert_eq!(f.client_access.up.rate, RateProfile::Unlimited);
    assert_eq!(
        f.client_access.up.queue,
        QueueLimit {
            packets: None,
            bytes: None
        }
    );
    assert!(s.cross.is_empty());
}

#[test]
fn bad_unit_points_at_the_value() {
    let e = err("[link]\nrate = \"10 Mbitz\"\n");
    assert_eq!((e.line, e.column), (Some(2), Some(8)), "{e}");
    assert!(
        e.to_string()
            .starts_with("t.toml:2:8: link.rate: unknown rate unit"),
        "{e}"
    );
}

#[test]
fn unknown_key_points_at_the_key_and_lists_the_section() {
    let e = err("[run]\nduration = \"1s\"\n\n[link]\nrat = \"5Mbit\"\n");
    assert_eq!((e.line, e.column), (Some(5), Some(1)), "{e}");
    assert!(
        e.to_string().starts_with("t.toml:5:1: unknown key \"link.rat\" (did you mean \"link.rate\"?); allowed keys in [link]: rate, rate_schedule, rate_trace,"),
        "{e}"
    );
    let e = err("[[flow]]\n[[flow]]\n  cc_x = 1\n");
    assert_eq!((e.line, e.column), (Some(3), Some(3)), "{e}");
    assert!(e.message.contains("\"flow.1.cc_x\""), "{e}");
    let e = err("[link.up]\nup = {}\n");
    assert!(e.message.contains("link.up.up"), "{e}");
    let e = err("[link.loss]\nmodle = \"none\"\n");
    assert!(e.message.contains("link.loss.modle"), "{e}");
    let e = err("[runn]\n");
    assert_eq!(
        (e.line, e.allowed.first().map(String::as_str)),
        (Some(1), Some("run")),
        "{e}"
    );
}

#[test]
fn bad_enum_lists_allowed_values() {
    let e = err("[run]\nduration = \"10s\"\n\n\n\n\n\n\n\n\n[[flow]]\ncc =     \"cubik\"\n");
    assert_eq!(
        e.to_string(),
        "t.toml:12:10: unknown value \"cubik\" for flow.cc (did you mean \"cubic\"?); allowed: newreno, newreno-approx, cubic, none, dctcp, prague, bbr, bbr3, quinn-newreno, quinn-cubic, quinn-bbr, quiche-bbr2"
    );
}

#[test]
fn type_errors_and_syntax_errors_have_positions() {
    let e = err("[flow]\ncc = \"cubic\"\n");
    assert!(e.message.contains("[[flow]]"), "{e}");
    let e = err("[[flow]]\nmtu = \"big\"\n");
    assert_eq!((e.line, e.column), (Some(2), Some(7)), "{e}");
    let e = err("[link]\nrate = \n");
    assert_eq!(e.line, Some(2), "{e}");
}

#[test]
fn overrides_replace_keys() {
    let l = parse_with(
        "[link]\nrate = \"10Mbit\"\n",
        &[
            "link.rate=5Mbit",
            "run.reps=7",
            "run.seed=99",
            "flow.cc=cubic",
        ],
        &[],
    )
    .expect("valid overrides");
    assert_eq!((l.reps, l.base_seed), (7, 99));
    let s = &l.points[0].scenario;
    assert_eq!(s.bottleneck.up.rate, RateProfile::Fixed(5_000_000));
    assert!(matches!(
        s.flows[0].cc,
        CcChoice::Ours(CcConfig::Cubic { hystart: true, .. })
    ));
    let l = parse_with(
        "",
        &[
            "link.loss={ model = \"periodic\", p = \"1%\" }",
            "link.down.delay=\"40ms\"",
        ],
        &[],
    )
    .expect("valid");
    let s = &l.points[0].scenario;
    assert_eq!(s.bottleneck.up.loss, LossConfig::Periodic { p: 0.01 });
    assert_eq!(
        (s.bottleneck.up.delay, s.bottleneck.down.delay),
        (Duration::from_millis(15), Duration::from_millis(40))
    );
}

#[test]
fn override_errors_name_the_argument() {
    let e = parse_with("", &["link.rate=fast"], &[]).expect_err("bad rate");
    assert!(
        e.to_string()
            .starts_with("--set link.rate=fast: link.rate: "),
        "{e}"
    );
    let e = parse_with("", &["link.rat=5Mbit"], &[]).expect_err("bad key");
    assert!(
        e.to_string()
            .starts_with("--set link.rat=5Mbit: unknown key \"link.rat\""),
        "{e}"
    );
    assert!(e.allowed.iter().any(|a| a == "rate"), "{e}");
    let e = parse_with("", &["link.rate"], &[]).expect_err("no =");
    assert!(e.to_string().contains("expected key=value"), "{e}");
    let e = parse_with("", &["flow.3.cc=cubic"], &[]).expect_err("no such flow");
    assert!(e.message.contains("flow.3"), "{e}");
}

#[test]
fn sweep_is_a_product_in_file_order() {
    let text = "[sweep]\n\"link.rate\" = [\"2Mbit\", \"10Mbit\"]\n\"flow.0.cc\" = [\"newreno\", \"cubic\", \"none\"]\n";
    let l = ok(text);
    assert_eq!(l.points.len(), 6);
    let labels: Vec<Vec<(String, String)>> = l.points.iter().map(|p| p.axes.clone()).collect();
    let pair = |a: &str, b: &str| {
        vec![
            ("link.rate".to_string(), a.to_string()),
            ("flow.0.cc".to_string(), b.to_string()),
        ]
    };
    assert_eq!(labels[0], pair("2Mbit", "newreno"));
    assert_eq!(labels[1], pair("2Mbit", "cubic"));
    assert_eq!(labels[3], pair("10Mbit", "newreno"));
    assert_eq!(labels[5], pair("10Mbit", "none"));
    assert_eq!(
        l.points[4].scenario.bottleneck.up.rate,
        RateProfile::Fixed(10_000_000)
    );
    assert!(matches!(
        l.points[4].scenario.flows[0].cc,
        CcChoice::Ours(CcConfig::Cubic { .. })
    ));
    // The queue follows the swept rate (1 BDP).
    assert_eq!(l.points[0].scenario.bottleneck.up.queue.bytes, Some(7_500));

    // A command-line axis replaces the file's axis of the same key, a new one is appended.
    let l = parse_with(
        text,
        &[],
        &["link.rate=1Mbit,2Mbit,3Mbit", "run.duration=5s,10s"],
    )
    .expect("valid");
    assert_eq!(l.points.len(), 3 * 3 * 2);
    assert_eq!(
        l.points[0].axes[0],
        ("link.rate".to_string(), "1Mbit".to_string())
    );
    assert_eq!(
        l.points[0].axes[2],
        ("run.duration".to_string(), "5s".to_string())
    );
    // --set of a swept key fixes it.
    let l = parse_with(text, &["link.rate=4Mbit"], &[]).expect("valid");
    assert_eq!(l.points.len(), 3);
    assert!(l
        .points
        .iter()
        .all(|p| p.scenario.bottleneck.up.rate == RateProfile::Fixed(4_000_000)));
    // Unquoted dotted keys in [sweep] mean the same.
    assert_eq!(ok("[sweep]\nlink.loss.p = [0.01, 0.02]\n").points.len(), 2);
}

#[test]
fn sweep_errors() {
    let e = err("[sweep]\n\"link.rat\" = [1]\n");
    assert_eq!((e.line, e.column), (Some(2), Some(1)), "{e}");
    assert!(e.message.contains("unknown key \"link.rat\""), "{e}");
    let e = err("[sweep]\n\"run.seed\" = [1, 2]\n");
    assert!(e.message.contains("cannot be swept"), "{e}");
    let e = err("[sweep]\n\"link.rate\" = []\n");
    assert!(e.message.contains("no values"), "{e}");
    let e = err("[sweep]\n\"link.rate\" = [\"2Mbit\", \"fast\"]\n");
    assert_eq!((e.line, e.column), (Some(2), Some(25)), "{e}");
    let e = parse_with("", &[], &["link.rate=1Mbit,x"]).expect_err("bad value");
    assert!(
        e.to_string().starts_with("--vary link.rate=1Mbit,x: "),
        "{e}"
    );
}

/// `run_seed(1, [], 0)`, recorded once (checked against an independent SplitMix64 computation).
const SEED_1_NONE_0: u64 = 0xB18A_02F4_6D8D_86C3;
/// `run_seed(1, [link.delay = "2ms"], 3)`, computed independently (SplitMix64 and FNV-1a in
/// Python) from the rule in `point_key`.
const SEED_1_DELAY2MS_3: u64 = 0x7261_B3AB_7E3B_B650;

#[test]
fn seeds_are_distinct_and_stable() {
    let l =
        ok("[run]\nreps = 10\nseed = 7\n[sweep]\n\"link.delay\" = [\"1ms\", \"2ms\", \"3ms\"]\n");
    let runs = l.runs();
    assert_eq!(runs.len(), 30);
    assert_eq!(runs[0].id, "p0-r0");
    assert_eq!(runs[11].id, "p1-r1");
    assert_eq!((runs[11].point, runs[11].rep), (1, 1));
    let mut seeds: Vec<u64> = runs.iter().map(|r| r.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), 30, "seeds must differ");
    assert_eq!(l.runs(), runs, "same input, same runs");
    // Recorded once: a change here changes every published result's seed.
    let delay = |v: &str| vec![("link.delay".to_string(), v.to_string())];
    assert_eq!(
        l.points[1].axes,
        delay("2ms"),
        "labels hold the value as written"
    );
    assert_eq!(run_seed(1, &[], 0), SEED_1_NONE_0);
    assert_eq!(run_seed(1, &delay("2ms"), 3), SEED_1_DELAY2MS_3);
    assert_ne!(run_seed(1, &[], 1), run_seed(1, &delay("1ms"), 0));
    assert_ne!(run_seed(1, &[], 0), run_seed(2, &[], 0));
}

/// The seeds of every run, keyed by its sweep labels and repetition (not by its position).
fn seeds_by_label(
    l: &LoadedScenario,
) -> std::collections::BTreeMap<(Vec<(String, String)>, u32), u64> {
    l.runs()
        .iter()
        .map(|r| ((l.points[r.point].axes.clone(), r.rep), r.seed))
        .collect()
}

const VARIANTS_AND_SWEEP: &str = "[run]\nreps = 3\nseed = 11\n\
[[variant]]\nname = \"a\"\nset = { \"flow.cc\" = \"cubic\" }\n\
[[variant]]\nname = \"b\"\nset = { \"flow.cc\" = \"newreno\" }\n\
[[variant]]\nname = \"c\"\nset = { \"link.delay\" = \"30ms\" }\n\
[sweep]\n\"link.loss\" = [\"0%\", \"1%\", \"2%\"]\n\"link.rate\" = [\"10Mbit\", \"20Mbit\"]\n";

#[test]
fn variants_of_a_point_share_their_seeds() {
    let l = ok(VARIANTS_AND_SWEEP);
    assert_eq!(l.points.len(), 3 * 3 * 2);
    let by_point: std::collections::BTreeMap<_, Vec<u64>> =
        l.runs().iter().fold(Default::default(), |mut m, r| {
            let mut axes = l.points[r.point].axes.clone();
            axes.retain(|(k, _)| k != "variant");
            m.entry((axes, r.rep)).or_default().push(r.seed);
            m
        });
    assert_eq!(
        by_point.len(),
        3 * 2 * 3,
        "one seed per (sweep values, rep)"
    );
    for (point, seeds) in &by_point {
        assert_eq!(seeds.len(), 3, "{point:?}: one run per variant");
        assert!(seeds.iter().all(|s| *s == seeds[0]), "{point:?}: {seeds:?}");
    }
    let mut distinct: Vec<u64> = by_point.values().map(|s| s[0]).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        by_point.len(),
        "different points, different seeds"
    );
}

#[test]
fn selecting_adding_or_reordering_variants_and_values_keeps_every_other_seed() {
    let all = seeds_by_label(&ok(VARIANTS_AND_SWEEP));
    let inputs = |variants: &[&str], axes: &[&str]| Inputs {
        variants: variants.iter().map(|s| s.to_string()).collect(),
        axes: axes.iter().map(|s| s.to_string()).collect(),
        ..Inputs::default()
    };
    let cases = [
        // One variant alone, two in another order.
        inputs(&["b"], &[]),
        inputs(&["c,a"], &[]),
        // Fewer values, reordered values, a value added (its runs are new, the others kept).
        inputs(&[], &["link.loss=2%,0%"]),
        inputs(&["a"], &["link.loss=5%,1%,0%"]),
        // Axes in the other order.
        inputs(&[], &["link.rate=20Mbit,10Mbit", "link.loss=1%"]),
    ];
    for case in &cases {
        let l = crate::parse_with(
            VARIANTS_AND_SWEEP,
            "s.toml",
            std::path::Path::new("."),
            case,
        )
        .expect("valid");
        let mut shared = 0;
        for ((labels, rep), seed) in seeds_by_label(&l) {
            let mut sorted = labels.clone();
            sorted.sort();
            let same = all.iter().find(|((l, r), _)| {
                let mut s = l.clone();
                s.sort();
                s == sorted && *r == rep
            });
            if let Some((_, s)) = same {
                assert_eq!(seed, *s, "{case:?}: {labels:?} r{rep}");
                shared += 1;
            }
        }
        assert!(shared > 0, "{case:?} shares runs with the full sweep");
    }
}

#[test]
fn bdp_queue_uses_each_direction_and_the_first_flows_access_links() {
    let text = "[link]\ndelay = \"10ms\"\nqueue = \"1bdp\"\n[link.down]\nrate = \"20Mbit\"\n[link.up]\nrate = \"2Mbit\"\n\
                [[flow]]\nclient_access = { delay = \"5ms\" }\nserver_access = { delay = \"5ms\", rate = \"1Gbit\", queue = \"1bdp\" }\n";
    let s = &ok(text).points[0].scenario;
    // base RTT = 10 + 10 + 2 × (5 + 5) = 40 ms.
    assert_eq!(s.bottleneck.up.queue.bytes, Some(2_000_000 / 8 * 40 / 1000));
    assert_eq!(
        s.bottleneck.down.queue.bytes,
        Some(20_000_000 / 8 * 40 / 1000)
    );
    assert_eq!(
        s.flows[0].server_access.up.queue.bytes,
        Some(1_000_000_000 / 8 * 40 / 1000)
    );
    let s = &ok("[link]\nrate = \"unlimited\"\n").points[0].scenario;
    assert_eq!(
        s.bottleneck.up.queue,
        QueueLimit {
            packets: None,
            bytes: None
        }
    );
    let s = &ok("[link]\nqueue = \"1bdp+2pkt\"\n[[flow]]\nmtu = 1280\n").points[0].scenario;
    assert_eq!(s.bottleneck.up.queue.bytes, Some(37_500 + 2 * 1280));
}

#[test]
fn gilbert_elliott_second_form_hits_the_target() {
    let text = "[link.loss]\nmodel = \"gilbert-elliott\"\ngamma = 0.99875\nbeta = 0.875\nh = 0.5\ntarget = \"10%\"\n";
    let s = &ok(text).points[0].scenario;
    let LossConfig::GilbertElliott { p, r, k, h } = s.bottleneck.down.loss else {
        panic!("GE expected, got {:?}", s.bottleneck.down.loss)
    };
    assert!((p - 0.00125).abs() < 1e-12 && (r - 0.125).abs() < 1e-12 && h == 0.5);
    assert!(
        (gilbert_elliott_mean_loss(p, r, k, h) - 0.10).abs() < 1e-9,
        "k = {k}"
    );
    let e = err("[link.loss]\nmodel = \"gilbert-elliott\"\ngamma = 0.99\nbeta = 0.8\np = 0.1\ntarget = 0.1\n");
    assert!(e.message.contains("either"), "{e}");
    let e = err("[link.loss]\nmodel = \"gilbert-elliott\"\ngamma = 0.99875\nbeta = 0.875\ntarget = \"0.1%\"\n");
    assert_eq!(e.line, Some(5), "unreachable target points at it: {e}");
    let s = &ok("[link.loss]\nmodel = \"gilbert-elliott\"\np = 0.01\nr = 0.3\n").points[0].scenario;
    assert_eq!(
        s.bottleneck.up.loss,
        LossConfig::GilbertElliott {
            p: 0.01,
            r: 0.3,
            k: 1.0,
            h: 0.0
        }
    );
}

#[test]
fn rates_per_direction_schedules_and_traces() {
    let tmp = temp_dir("trace");
    let dir = tmp.path().to_path_buf();
    std::fs::write(
        dir.join("bw.csv"),
        "# seconds,rate\n0,10Mbit\n1.5, 2000000\n\n3,0\n",
    )
    .expect("write trace");
    std::fs::write(dir.join("bad.csv"), "0,1Mbit\n2,fast\n").expect("write trace");
    let text =
        "[link]\nrate = \"5Mbit\"\n[link.down]\nrate_trace = \"bw.csv\"\nrate_repeat = \"4s\"\n";
    let l = parse_str(text, "t.toml", &dir, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    let s = &l.points[0].scenario;
    assert_eq!(s.bottleneck.up.rate, RateProfile::Fixed(5_000_000));
    let want = vec![
        (Duration::ZERO, 10_000_000),
        (Duration::from_millis(1500), 2_000_000),
        (Duration::from_secs(3), 0),
    ];
    assert_eq!(
        s.bottleneck.down.rate,
        RateProfile::Schedule {
            steps: want,
            repeat_every: Some(Duration::from_secs(4))
        }
    );
    let e = parse_str(
        "[link]\nrate_trace = \"bad.csv\"\n",
        "t.toml",
        &dir,
        &[],
        &[],
    )
    .expect_err("bad trace");
    assert_eq!(
        (e.line, e.file.ends_with("bad.csv")),
        (Some(2), true),
        "{e}"
    );
    let e = err("[link]\nrate = \"1Mbit\"\nrate_schedule = [{ at = \"0s\", rate = \"1Mbit\" }]\n");
    assert!(e.message.contains("only one of"), "{e}");
    let e = err("[link]\nrate_schedule = [{ at = \"1s\", rate = \"1Mbit\" }]\n");
    assert!(e.message.contains("at 0s"), "{e}");
    let e = err("[link]\nrate_repeat = \"1s\"\n");
    assert!(e.message.contains("rate_repeat needs"), "{e}");
}

#[test]
fn flows_replicate_and_cross_traffic_resolves() {
    let text = "[[flow]]\nname = \"bulk\"\ncount = 3\n[[flow]]\napp = \"download\"\nsize = \"8.9MB\"\nstreams = 2\n\
                [[cross]]\npattern = \"cbr\"\nrate = \"1Mbit\"\n";
    let s = &ok(text).points[0].scenario;
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["bulk.0", "bulk.1", "bulk.2", "flow1"]);
    assert_eq!(
        s.flows[3].workload,
        Workload::Download {
            size: 8_900_000,
            streams: 2,
            connections: 1
        }
    );
    assert_eq!(
        s.cross[0].pattern,
        CrossPattern::Cbr {
            rate_bps: 1_000_000,
            payload: 1200
        }
    );
    assert!(!s.cross[0].up);
    let e = err("[[flow]]\nname = \"a\"\n[[flow]]\nname = \"a\"\n");
    assert!(e.message.contains("two flows"), "{e}");
    let e = err("[[cross]]\npattern = \"uniform\"\nsize_min = \"10B\"\n");
    assert!(e.message.contains("missing key cross.0.size_max"), "{e}");
    let e = err("[[flow]]\nstart = \"40s\"\n");
    assert!(e.message.contains("after the end of the run"), "{e}");
}

/// Each registry key, set to its example on a small scenario, must parse and must change the
/// outcome; so the parser reads every documented key and documents every key it reads.
#[test]
fn every_registry_key_is_read_by_the_parser() {
    let tmp = temp_dir("registry");
    let dir = tmp.path().to_path_buf();
    std::fs::write(dir.join("test-trace.csv"), "0,1Mbit\n1,2Mbit\n").expect("write trace");
    std::fs::write(dir.join("test-trace.down"), "1\n1\n3\n").expect("write trace");
    let base = "[[flow]]\n[[cross]]\npattern = \"cbr\"\nrate = \"1Mbit\"\n[[probe]]\n";
    let run = |set: &[String]| parse_str(base, "t.toml", &dir, set, &[]);
    for k in keys() {
        // `[[variant]]` and `[[figure]]` cannot be written with --set; tests_variants.rs and
        // tests_figures.rs cover their keys.
        if k.path.starts_with("variant[]") || k.path.starts_with("figure[]") {
            continue;
        }
        if let Some((array, item_key)) = k.path.split_once("[].") {
            check_item_key(k.path, array, item_key, &dir);
            continue;
        }
        let context: Vec<String> = k.context.iter().map(|c| c.to_string()).collect();
        let mut with = context.clone();
        with.push(format!("{}={}", k.path, k.example));
        let changed = run(&with).unwrap_or_else(|e| panic!("{} = {}: {e}", k.path, k.example));
        if k.default == DefaultValue::Value(k.example.trim_matches('"')) {
            continue; // single-valued keys such as flow.stack
        }
        assert_ne!(
            run(&context).ok(),
            Some(changed),
            "{} = {} changes nothing",
            k.path,
            k.example
        );
    }
}

/// Every name an enum key allows is accepted and selects something of its own: the allowed
/// list and the resolver come from one set of names, so no name falls through to another's
/// meaning.
#[test]
fn every_allowed_name_parses_to_its_own_scenario() {
    let dir = temp_dir("names");
    let base = "[[flow]]\n[[cross]]\npattern = \"cbr\"\nrate = \"1Mbit\"\nsize = \"1000B\"\n";
    // `[[figure]]` cannot be written with --set: tests_figures.rs parses each of its names.
    for k in keys()
        .iter()
        .filter(|k| !k.allowed.is_empty() && !k.path.starts_with("figure[]"))
    {
        let mut seen = Vec::new();
        for name in k.allowed {
            let mut set: Vec<String> = k.context.iter().map(|c| c.to_string()).collect();
            // A download needs a size; `cross.pattern` needs its pattern's keys.
            match (k.path, *name) {
                ("flow.app", "download") => set.push("flow.size=\"1MB\"".into()),
                ("cross.pattern", "uniform") => set.extend([
                    "cross.size_min=\"100B\"".into(),
                    "cross.size_max=\"200B\"".into(),
                    "cross.gap_min=\"1ms\"".into(),
                    "cross.gap_max=\"2ms\"".into(),
                ]),
                ("cross.pattern", "onoff") => {
                    set.extend(["cross.on=\"1s\"".into(), "cross.off=\"1s\"".into()])
                }
                ("link.loss.model", "gilbert-elliott") => set.push("link.loss.r=0.2".into()),
                ("link.loss.model", "bounded") => set.push("link.loss.max_burst=2".into()),
                ("link.loss.model", "none") => set.retain(|s| !s.starts_with("link.loss.p")),
                _ => {}
            }
            if k.path == "flow.cc" && name.starts_with("quinn-") {
                set.retain(|s| !s.starts_with("flow.stack"));
            }
            // quinn passes neither per-ACK ECN counts nor rate samples: these run on TCP.
            if k.path == "flow.cc" && matches!(*name, "dctcp" | "prague" | "bbr" | "bbr3") {
                set.push("flow.stack=\"tcp\"".into());
            }
            // quiche's BBRv2 runs only on quiche.
            if k.path == "flow.cc" && *name == "quiche-bbr2" {
                set.push("flow.stack=\"quiche\"".into());
            }
            set.push(format!("{}=\"{name}\"", k.path));
            let loaded = parse_str(base, "t.toml", dir.path(), &set, &[])
                .unwrap_or_else(|e| panic!("{} = {name:?}: {e}", k.path));
            let resolved = format!("{:?}", loaded.points[0].scenario);
            assert!(
                !seen.contains(&resolved),
                "{} = {name:?} resolves like another of its names",
                k.path
            );
            seen.push(resolved);
        }
    }
}

/// Knob types deserialised from a scenario value by serde: their serde names are their
/// `Choice` names, so the allowed list, the docs and the parser cannot disagree.
#[test]
fn knob_enums_serialise_as_their_names() {
    fn check<T>()
    where
        T: crate::Choice
            + serde::Serialize
            + serde::de::DeserializeOwned
            + PartialEq
            + std::fmt::Debug,
    {
        for name in T::NAMES {
            let v = T::from_name(name).expect("a listed name selects a variant");
            assert_eq!(
                serde_json::to_value(v).expect("serialise"),
                serde_json::json!(name)
            );
            let back: T = serde_json::from_value(serde_json::json!(name)).expect("deserialise");
            assert_eq!(back, v, "{name}");
        }
    }
    check::<transport::quic::QuicCrypto>();
    check::<transport::quicmodel::FcUpdate>();
    check::<transport::quicmodel::StreamScheduler>();
    check::<transport::tcp::TlsMode>();
    check::<transport::tcp::HttpVersion>();
    check::<transport::tcp::LossRecovery>();
}

/// Keys of array items (`link.blackout[].period`): an item with every example parses, and
/// leaving one key out either fails (required) or changes the result.
fn check_item_key(path: &str, array: &str, item_key: &str, dir: &Path) {
    let siblings: Vec<String> = keys()
        .iter()
        .filter_map(|k| {
            k.path
                .strip_prefix(&format!("{array}[]."))
                .map(|name| (name, k.example))
        })
        .map(|(name, ex)| format!("{name} = {ex}"))
        .collect();
    let without: Vec<String> = siblings
        .iter()
        .filter(|s| !s.starts_with(&format!("{item_key} =")))
        .cloned()
        .collect();
    let set = |items: &[String]| vec![format!("{array}=[{{ {} }}]", items.join(", "))];
    let full = parse_str("", "t.toml", dir, &set(&siblings), &[])
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_ne!(
        parse_str("", "t.toml", dir, &set(&without), &[]).ok(),
        Some(full),
        "{path} changes nothing"
    );
}

#[test]
fn every_example_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("scenarios/examples exists") {
        let path = entry.expect("readable dir").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let l = load(&path, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
            assert!(!l.runs().is_empty());
            names.push(l.name);
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "aqm",
            "bulk",
            "download",
            "fair-share",
            "ge-loss",
            "lossy-sweep",
            "mahimahi",
            "protocols",
            "quic-model",
            "quic-vs-tcp",
            "quiche",
            "satellite-bod"
        ]
    );
}

#[test]
fn examples_mean_what_their_comments_say() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples");
    let bulk = load(&dir.join("bulk.toml"), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    let s = &bulk.points[0].scenario;
    assert_eq!(
        s.bottleneck.up.queue,
        QueueLimit {
            packets: Some(25),
            bytes: None
        }
    );
    assert_eq!(s.duration, Duration::from_secs(10));
    let sweep = load(&dir.join("lossy-sweep.toml"), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (sweep.points.len(), sweep.reps, sweep.runs().len()),
        (10, 5, 50)
    );
    let fair = load(&dir.join("fair-share.toml"), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    let s = &fair.points[0].scenario;
    let windows: Vec<(u64, Option<u64>)> = s
        .flows
        .iter()
        .map(|f| (f.start.as_secs(), f.stop.map(|d| d.as_secs())))
        .collect();
    assert_eq!(windows, [(20, Some(120)), (40, Some(160)), (80, Some(180))]);
    assert!(matches!(
        s.cross[0].pattern,
        CrossPattern::Uniform {
            payload_min: 100,
            payload_max: 1000,
            ..
        }
    ));
    let ge = load(&dir.join("ge-loss.toml"), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    for (p, target) in ge.points.iter().zip([0.05, 0.10, 0.15, 0.20, 0.25]) {
        let LossConfig::GilbertElliott { p: gp, r, k, h } = p.scenario.bottleneck.up.loss else {
            panic!("GE")
        };
        assert!((gilbert_elliott_mean_loss(gp, r, k, h) - target).abs() < 1e-9);
    }
    let vs = load(&dir.join("quic-vs-tcp.toml"), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    let s = &vs.points[0].scenario;
    assert_eq!(s.duration, Duration::from_secs(30));
    assert_eq!(s.bottleneck.down.rate, RateProfile::Fixed(10_000_000));
    assert_eq!(s.bottleneck.up.delay, Duration::from_millis(15));
    assert_eq!(s.bottleneck.up.queue.bytes, Some(37_500));
    let stacks: Vec<Stack> = s.flows.iter().map(|f| f.stack()).collect();
    assert_eq!(stacks, [Stack::Quic, Stack::Tcp]);
    for f in &s.flows {
        assert_eq!(f.workload, Workload::Bulk { upload: true });
        assert!(
            matches!(f.cc, CcChoice::Ours(CcConfig::Cubic { .. })),
            "{:?}",
            f.cc
        );
    }
    assert_eq!(s.flows[1].tcp(), Some(&TcpKnobs::default()));
}

#[test]
fn the_model_example_is_inets_configuration() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples");
    let l = load(&dir.join("quic-model.toml"), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    let f = &l.points[0].scenario.flows[0];
    assert_eq!(f.stack(), Stack::QuicModel);
    let knobs = *f.quic_model().expect("a model flow");
    assert_eq!(
        knobs,
        QuicModelKnobs {
            mtu: 1280,
            receiver_ack_ratio: 1,
            pacing: false,
            fc_threshold: 0.5,
            fc_immediate: false,
            ..QuicModelKnobs::default()
        }
    );
    assert_eq!(
        knobs,
        QuicModelKnobs {
            common: QuicModelKnobs::default().common,
            ..crate::builder::inet_model_knobs(1280)
        },
        "the builder's INET knobs are the example's"
    );
}

fn tcp_of(text: &str) -> TcpKnobs {
    let l = ok(text);
    let f = &l.points[0].scenario.flows[0];
    *f.tcp().expect("a tcp flow")
}

#[test]
fn tcp_keys_parse_into_tcp_knobs() {
    let t = tcp_of(
        "[[flow]]\nstack = \"tcp\"\nmtu = 9000\ntls = \"1.2\"\nsack = false\ntimestamps = false\n\
         delayed_ack = false\ndelayed_ack_timeout = \"200ms\"\nreceive_window_max = \"6MiB\"\n\
         initial_receive_window = \"128KiB\"\nsend_buffer = \"1MB\"\nmin_rto = \"1ms\"\ninitial_rto = \"3s\"\n",
    );
    let want = TcpKnobs {
        mtu: 9000,
        tls: TlsMode::Tls12,
        sack: false,
        timestamps: false,
        delayed_ack: false,
        delayed_ack_timeout: Duration::from_millis(200),
        receive_window_max: 6 << 20,
        initial_receive_window: 128 << 10,
        send_buffer: 1_000_000,
        min_rto: Duration::from_millis(1),
        initial_rto: Duration::from_secs(3),
        ..TcpKnobs::default()
    };
    assert_eq!(t, want);
    assert_eq!(
        tcp_of("[[flow]]\nstack = \"tcp\"\ntls = \"none\"\n").tls,
        TlsMode::None
    );
    // TCP may go below QUIC's 1228 B minimum MTU.
    assert_eq!(tcp_of("[[flow]]\nstack = \"tcp\"\nmtu = 576\n").mtu, 576);
    assert!(err("[[flow]]\nmtu = 576\n").message.contains("1228"));
    // `--set flow.tls=1.2` reads 1.2 as a TOML float; it must still mean TLS 1.2.
    let l = parse_with("[[flow]]\nstack = \"tcp\"\n", &["flow.tls=1.2"], &[]).expect("valid");
    assert_eq!(
        l.points[0].scenario.flows[0].tcp().expect("a tcp flow").tls,
        TlsMode::Tls12
    );
    let l = parse_with("", &[], &["flow.stack=quic,tcp"]).expect("stack is sweepable");
    let stacks: Vec<Stack> = l
        .points
        .iter()
        .map(|p| p.scenario.flows[0].stack())
        .collect();
    assert_eq!(stacks, [Stack::Quic, Stack::Tcp]);
}

#[test]
fn tcp_values_are_checked() {
    let e = err("[[flow]]\nstack = \"tcp\"\ntls = \"1.1\"\n");
    assert_eq!((e.line, e.column), (Some(3), Some(7)), "{e}");
    assert_eq!(e.allowed, ["1.3", "1.2", "none"]);
    let e = err("[[flow]]\nstack = \"tcp\"\nmin_rto = \"0ms\"\n");
    assert_eq!(e.line, Some(3), "{e}");
    let e = err("[[flow]]\nstack = \"tcp\"\nreceive_window_max = \"2GiB\"\n");
    assert!(e.message.contains("receive_window_max"), "{e}");
    let e = err("[[flow]]\nstack = \"tcp\"\ninitial_receive_window = \"4MiB\"\n");
    assert_eq!(e.line, Some(3), "{e}");
    assert!(
        e.message.contains("exceeds receive_window_max (3145728 B)"),
        "{e}"
    );
    let e = err("[[flow]]\nstack = \"tcp\"\nreceive_window_max = \"32KiB\"\n");
    assert!(e.message.contains("exceeds"), "{e}");
}

/// A flow table setting every key in `keys` to its documented registry default (keys without
/// a value default are left out), after `head`.
fn with_documented_defaults(head: &str, keys: &[String]) -> String {
    let mut text = String::from(head);
    for name in keys {
        let path = format!("flow.{name}");
        let k =
            crate::registry::find(&path).unwrap_or_else(|| panic!("{path} is not in the registry"));
        if let DefaultValue::Value(v) = k.default {
            let value = match k.kind {
                crate::registry::Kind::Bool
                | crate::registry::Kind::Int
                | crate::registry::Kind::Float => v.to_string(),
                _ => format!("{v:?}"),
            };
            text.push_str(&format!("{name} = {value}\n"));
        }
    }
    text
}

/// The field names of a knob struct, which are its scenario keys.
fn fields<T: serde::Serialize>(t: &T) -> Vec<String> {
    match serde_json::to_value(t).expect("serializable") {
        serde_json::Value::Object(m) => m.keys().cloned().collect(),
        other => panic!("not a struct: {other}"),
    }
}

/// Every flow knob's registry default equals its type's `Default`: an absent key and the
/// documented text written out give the same knobs, every field has a key, and a field whose
/// default is `None` is documented as unset.
#[test]
fn flow_knob_registry_defaults_equal_the_types_defaults() {
    let tcp = TcpKnobs::default();
    let quic = QuicKnobs::default();
    let model = QuicModelKnobs::default();
    for (name, value) in fields(&tcp)
        .iter()
        .map(|f| {
            (
                f.clone(),
                serde_json::to_value(tcp).expect("json")[f].clone(),
            )
        })
        .chain(fields(&quic).iter().map(|f| {
            (
                f.clone(),
                serde_json::to_value(quic).expect("json")[f].clone(),
            )
        }))
        .chain(fields(&model).iter().map(|f| {
            (
                f.clone(),
                serde_json::to_value(model).expect("json")[f].clone(),
            )
        }))
    {
        let k = crate::registry::find(&format!("flow.{name}"))
            .unwrap_or_else(|| panic!("knob field {name} has no registry key"));
        assert_eq!(
            value.is_null(),
            k.default == DefaultValue::Unset,
            "{name}: unset iff the default is None"
        );
    }
    let tcp_text = with_documented_defaults("[[flow]]\nstack = \"tcp\"\n", &fields(&tcp));
    let quic_text = with_documented_defaults("[[flow]]\n", &fields(&quic));
    for text in ["[[flow]]\nstack = \"tcp\"\n", tcp_text.as_str()] {
        assert_eq!(tcp_of(text), tcp, "{text}");
    }
    for text in ["[[flow]]\n", quic_text.as_str()] {
        let f = ok(text).points[0].scenario.flows[0].clone();
        assert_eq!(f.quic(), Some(&quic), "{text}");
        // A flow carries its own stack's knobs only.
        assert_eq!(
            (f.tcp(), f.quic_model(), f.pep()),
            (None, None, None),
            "{text}"
        );
    }
    let model_text = with_documented_defaults(MODEL_HEAD, &fields(&model));
    for text in [MODEL_HEAD, model_text.as_str()] {
        let f = ok(text).points[0].scenario.flows[0].clone();
        assert_eq!(f.quic_model(), Some(&model), "{text}");
        assert_eq!((f.quic(), f.tcp()), (None, None), "{text}");
    }
    assert_eq!(
        tcp_of("[[flow]]\nstack = \"tcp\"\nmtu = 1400\n"),
        TcpKnobs::with_mtu(1400)
    );
    // The shared parts of a flow and the PEP.
    let f = &ok("[[flow]]\n").points[0].scenario.flows[0];
    assert_eq!(
        (f.cc, f.workload),
        (CcChoice::default(), Workload::default())
    );
    let pep = ok("[[flow]]\nstack = \"tcp\"\npep = \"server-side\"\n").points[0]
        .scenario
        .flows[0]
        .pep()
        .copied();
    assert_eq!(pep, Some(crate::model::PepSpec::default()));
}

#[test]
fn http_version_selects_parallel_keep_alive_connections() {
    assert_eq!(tcp_of("[[flow]]\nstack = \"tcp\"\n").http1_parallel(), None);
    assert_eq!(
        tcp_of("[[flow]]\nstack = \"tcp\"\nhttp = \"http2\"\n").http1_parallel(),
        None
    );
    assert_eq!(
        tcp_of("[[flow]]\nstack = \"tcp\"\nhttp = \"http1.1\"\n").http1_parallel(),
        Some(6)
    );
    assert_eq!(
        tcp_of("[[flow]]\nstack = \"tcp\"\nhttp = \"http1.1\"\nhttp1_connections = 2\n")
            .http1_parallel(),
        Some(2)
    );
    let e = err("[[flow]]\nhttp = \"http1.1\"\n");
    assert!(
        e.to_string()
            .contains("applies only to flows with stack = \"tcp\""),
        "{e}"
    );
}

#[test]
fn pep_keys_resolve_to_a_pep_spec() {
    use crate::model::{PepPosition, PepSpec};
    let flow = |text: &str| ok(text).points[0].scenario.flows[0].pep().copied();
    assert_eq!(flow("[[flow]]\nstack = \"tcp\"\n"), None);
    assert_eq!(flow("[[flow]]\nstack = \"tcp\"\npep = \"none\"\n"), None);
    let p: Option<PepSpec> = flow("[[flow]]\nstack = \"tcp\"\npep = \"server-side\"\n");
    let p = p.expect("a PEP");
    assert_eq!(p.position, PepPosition::ServerSide);
    assert_eq!(
        (p.buffer, p.receive_window_max, p.send_buffer),
        (4 << 20, 16 << 20, 16 << 20)
    );
    assert!(matches!(
        p.cc,
        congestion::config::CcConfig::Cubic { hystart: true, .. }
    ));
    let p = flow("[[flow]]\nstack = \"tcp\"\npep = \"client-side\"\npep_buffer = \"64KiB\"\npep_cc = \"newreno\"\n").expect("a PEP");
    assert_eq!((p.position, p.buffer), (PepPosition::ClientSide, 65_536));
    assert!(matches!(p.cc, congestion::config::CcConfig::NewReno { .. }));
    let p =
        flow("[[flow]]\nstack = \"tcp\"\npep = \"server-side\"\npep_initial_window = \"100pkt\"\n")
            .expect("a PEP");
    assert!(
        matches!(p.cc, congestion::config::CcConfig::Cubic { common, .. } if common.initial_window_packets == 100)
    );
    let e = err("[[flow]]\npep = \"server-side\"\n");
    assert!(
        e.to_string()
            .contains("applies only to flows with stack = \"tcp\""),
        "{e}"
    );
    let e = err("[[flow]]\nstack = \"tcp\"\npep = \"middle\"\n");
    assert!(e.to_string().contains("client-side"), "{e}");
}

#[test]
fn keys_of_the_other_stack_are_errors() {
    let e = err("[[flow]]\nstack = \"tcp\"\n  stream_window = \"1MB\"\n");
    assert_eq!(
        e.to_string(),
        "t.toml:3:3: flow.0.stream_window applies only to flows with stack = \"quic\" or \"quic-model\" or \"quiche\", but this flow has stack = \"tcp\""
    );
    for key in [
        "conn_window = \"1MB\"",
        "ack_ratio = 4",
        "max_ack_delay = \"5ms\"",
        "zero_rtt = true",
        "mtu_discovery = true",
        "initial_rtt = \"100ms\"",
        "send_window = \"1MB\"",
    ] {
        let e = err(&format!("[[flow]]\nstack = \"tcp\"\n{key}\n"));
        assert_eq!((e.line, e.column), (Some(3), Some(1)), "{key}: {e}");
    }
    let e = err("[[flow]]\n[[flow]]\nsack = false\n");
    assert_eq!(
        e.to_string(),
        "t.toml:3:1: flow.1.sack applies only to flows with stack = \"tcp\", but this flow has stack = \"quic\""
    );
    let e = err("[[flow]]\nstack = \"tcp\"\ncc = \"quinn-cubic\"\n");
    assert_eq!((e.line, e.column), (Some(3), Some(6)), "{e}");
    assert!(
        e.message
            .contains("cc = \"quinn-cubic\" applies only to flows with stack = \"quic\""),
        "{e}"
    );
    // Our controllers and shared keys are fine on TCP.
    ok("[[flow]]\nstack = \"tcp\"\ncc = \"newreno\"\nmtu = 1400\ninitial_window = \"4pkt\"\n");
    // The stack may come from elsewhere than the key; the error names where the key was set.
    let e = parse_with("[[flow]]\nzero_rtt = true\n", &["flow.stack=tcp"], &[]).expect_err("mixed");
    assert_eq!((e.line, e.column), (Some(2), Some(1)), "{e}");
    let e = parse_with("[[flow]]\nstack = \"tcp\"\n", &["flow.0.cc=quinn-bbr"], &[])
        .expect_err("quinn");
    assert!(
        e.to_string()
            .starts_with("--set flow.0.cc=quinn-bbr: cc = \"quinn-bbr\""),
        "{e}"
    );
}

/// A fresh private directory (random name, mode 0700), removed on drop.
fn temp_dir(tag: &str) -> fsutil::PrivateDir {
    fsutil::PrivateDir::new(&format!("scenario-test-{tag}-")).expect("create temp dir")
}

const MODEL_HEAD: &str = "[[flow]]\nstack = \"quic-model\"\n";

/// The research model's knobs of the first flow of `text`.
fn model_of(text: &str) -> QuicModelKnobs {
    let l = ok(text);
    let f = &l.points[0].scenario.flows[0];
    *f.quic_model().expect("a model flow")
}

#[test]
fn quic_model_keys_parse_into_model_knobs() {
    use crate::model::{FcUpdate, StreamScheduler};
    let k = model_of(&format!(
        "{MODEL_HEAD}app = \"download\"\nconnections = 2\nmtu = 9000\ninitial_rtt = \"100ms\"\nstream_window = \"64KB\"\n\
         conn_window = \"100KB\"\nsend_window = \"1MB\"\nack_ratio = 10\nmax_ack_delay = \"5ms\"\n\
         zero_rtt = true\naddress_token = false\nreceiver_ack_ratio = 1\nack_delay = \"40ms\"\nack_on_reorder = false\n\
         bundle_acks = true\nibit = true\nfc_update = \"every-ack\"\nfc_threshold = 0.5\n\
         fc_immediate = false\nwindow_autotuning = true\nscheduler = \"fifo\"\n\
         send_queue_limit = \"64KB\"\nsend_queue_low_water = 0.1\npacing = false\n\
         send_one_on_loss = true\necn = true\n"
    ));
    let want = QuicModelKnobs {
        mtu: 9000,
        common: QuicCommonKnobs {
            initial_rtt: Duration::from_millis(100),
            stream_window: 64_000,
            conn_window: 100_000,
            send_window: 1_000_000,
            ack_ratio: Some(10),
            max_ack_delay: Some(Duration::from_millis(5)),
            zero_rtt: true,
            address_token: false,
            ecn: true,
        },
        receiver_ack_ratio: 1,
        ack_delay: Duration::from_millis(40),
        ack_on_reorder: false,
        bundle_acks: true,
        ibit: true,
        fc_update: FcUpdate::EveryAck,
        fc_threshold: 0.5,
        fc_immediate: false,
        window_autotuning: true,
        scheduler: StreamScheduler::Fifo,
        send_queue_limit: Some(64_000),
        send_queue_low_water: 0.1,
        send_one_on_loss: true,
        pacing: false,
    };
    assert_eq!(k, want);
    // A shared key means the same on both QUIC stacks.
    let both = "app = \"download\"\nconnections = 2\nstream_window = \"65KB\"\nack_ratio = 4\nzero_rtt = true\naddress_token = false\n";
    let quinn = *ok(&format!("[[flow]]\n{both}")).points[0].scenario.flows[0]
        .quic()
        .expect("a quic flow");
    let model = model_of(&format!("{MODEL_HEAD}{both}"));
    assert_eq!(quinn.common, model.common);
    // The model's MTU has no quinn limit: up to IPv4's 65535.
    assert_eq!(model_of(&format!("{MODEL_HEAD}mtu = 65535\n")).mtu, 65535);
    assert_eq!(model_of(&format!("{MODEL_HEAD}mtu = 1228\n")).mtu, 1228);
    // The model takes RFC 9002's NewReno like quinn's stack, not Linux's Reno.
    let f = &ok(MODEL_HEAD).points[0].scenario.flows[0];
    assert!(matches!(
        f.cc,
        CcChoice::Ours(CcConfig::NewReno {
            counting: RenoCounting::Exact,
            ..
        })
    ));
    // INET's NewReno is one key away.
    let f = &ok(&format!(
        "{MODEL_HEAD}cc = \"newreno\"\nreno_profile = \"inet\"\n"
    ))
    .points[0]
        .scenario
        .flows[0];
    assert!(matches!(
        f.cc,
        CcChoice::Ours(CcConfig::NewReno {
            counting: RenoCounting::Inet,
            ..
        })
    ));
    // `flow.stack` sweeps over all three stacks.
    let l = parse_with("", &[], &["flow.stack=quic,tcp,quic-model"]).expect("sweepable");
    let stacks: Vec<Stack> = l
        .points
        .iter()
        .map(|p| p.scenario.flows[0].stack())
        .collect();
    assert_eq!(stacks, [Stack::Quic, Stack::Tcp, Stack::QuicModel]);
}

#[test]
fn quic_model_values_are_checked() {
    let model_err = |body: &str| err(&format!("{MODEL_HEAD}{body}\n"));
    // Enums list their values; bounds name the key, the value and the interval, at the value.
    let e = model_err("fc_update = \"sometimes\"");
    assert_eq!((e.line, e.column), (Some(3), Some(13)), "{e}");
    assert_eq!(e.allowed, ["threshold", "every-ack"]);
    let e = model_err("scheduler = \"lifo\"");
    assert_eq!(e.allowed, ["round-robin", "fifo"]);
    for (body, want) in [
        (
            "fc_threshold = 0",
            "flow.0.fc_threshold = 0 is not in (0, 1]",
        ),
        (
            "fc_threshold = 1.5",
            "flow.0.fc_threshold = 1.5 is not in (0, 1]",
        ),
        (
            "send_queue_low_water = 1",
            "flow.0.send_queue_low_water = 1 is not in [0, 1)",
        ),
        ("send_queue_low_water = -0.1", "is not in [0, 1)"),
        (
            "ack_delay = \"0ms\"",
            "flow.0.ack_delay = 0ns is not within 1ns and 16.383s",
        ),
        ("ack_delay = \"17s\"", "is not within 1ns and 16.383s"),
        ("receiver_ack_ratio = 0", "0 is not within 1 and 4294967295"),
        ("send_queue_limit = 0", "is not within 1 B and"),
        (
            "stream_window = 0",
            "flow.0.stream_window = 0 B is not within 1 B and 4611686018427387903 B",
        ),
        ("conn_window = 0", "flow.0.conn_window = 0 B"),
        ("send_window = 0", "flow.0.send_window = 0 B"),
        (
            "max_ack_delay = \"0ms\"",
            "for an ACK on every packet set ack_ratio = 1",
        ),
        (
            "max_ack_delay = \"20s\"",
            "flow.0.max_ack_delay = 20s is not within",
        ),
        ("mtu = 65536", "65536 is not within 1228 and 65535"),
        ("mtu = 1227", "1227 is not within 1228 and 65535"),
    ] {
        let e = model_err(body);
        assert_eq!(e.line, Some(3), "{body}: {e}");
        assert!(e.message.contains(want), "{body}: {e}");
    }
    ok(&format!(
        "{MODEL_HEAD}fc_threshold = 1\nsend_queue_low_water = 0\n"
    ));
    // The model's limits on shared keys do not apply to quinn's stack.
    ok("[[flow]]\nmax_ack_delay = \"0ms\"\n");
    // quinn's controllers are quinn's: refused on the model, naming the allowed values.
    let e = model_err("cc = \"quinn-bbr\"");
    assert_eq!((e.line, e.column), (Some(3), Some(6)), "{e}");
    assert_eq!(
        e.to_string(),
        "t.toml:3:6: cc = \"quinn-bbr\" applies only to flows with stack = \"quic\", but this flow has stack = \"quic-model\"; allowed for stack = \"quic-model\": newreno, newreno-approx, cubic, none, dctcp, prague, bbr, bbr3"
    );
    // The model samples delivery rates, so BBR and BBRv3 run on it.
    for cc in ["newreno", "newreno-approx", "cubic", "none", "bbr", "bbr3"] {
        ok(&format!("{MODEL_HEAD}cc = \"{cc}\"\n"));
    }
    let e = err("[[flow]]\nstack = \"quic-modell\"\n");
    assert_eq!(e.allowed, ["quic", "tcp", "quic-model", "quiche"]);
}

#[test]
fn keys_of_the_model_and_of_quinn_stay_on_their_stacks() {
    // A model-only key on quinn's stack names the key and the stack that accepts it.
    let e = err("[[flow]]\n  ibit = true\n");
    assert_eq!(
        e.to_string(),
        "t.toml:2:3: flow.0.ibit applies only to flows with stack = \"quic-model\", but this flow has stack = \"quic\""
    );
    for key in [
        "receiver_ack_ratio = 1",
        "ack_delay = \"5ms\"",
        "ack_on_reorder = false",
        "bundle_acks = true",
        "fc_update = \"every-ack\"",
        "fc_threshold = 0.5",
        "fc_immediate = false",
        "window_autotuning = true",
        "scheduler = \"fifo\"",
        "send_queue_limit = \"64KB\"",
        "send_queue_low_water = 0.1",
        "pacing = false",
    ] {
        for stack in ["quic", "tcp"] {
            let e = err(&format!("[[flow]]\nstack = \"{stack}\"\n{key}\n"));
            assert_eq!((e.line, e.column), (Some(3), Some(1)), "{key}: {e}");
            assert!(
                e.message
                    .contains("applies only to flows with stack = \"quic-model\""),
                "{key}: {e}"
            );
        }
    }
    // quinn's own keys and the TCP model's are refused on the research model.
    let e = err(&format!("{MODEL_HEAD}mtu_discovery = true\n"));
    assert!(
        e.message.contains(
            "flow.0.mtu_discovery applies only to flows with stack = \"quic\" or \"quiche\", but this flow has stack = \"quic-model\""
        ),
        "{e}"
    );
    let e = err(&format!("{MODEL_HEAD}sack = false\n"));
    assert!(e.message.contains("stack = \"tcp\""), "{e}");
    let e = err(&format!("{MODEL_HEAD}pep = \"server-side\"\n"));
    assert_eq!(e.line, Some(3), "{e}");
}

#[test]
fn unknown_keys_and_values_suggest_the_nearest_allowed_one() {
    // Regression: unknown keys get a "did you mean".
    let e = err("[link]\nlos = \"1%\"\n");
    assert!(e.message.contains("did you mean \"link.loss\"?)"), "{e}");
    let e = err("[[flow]]\nname = \"a\"\napp = \"bulk-down\"\n");
    assert!(e.message.contains("did you mean \"bulk\"?)"), "{e}");
    let e = parse_with("", &["link.delya=5ms"], &[]).expect_err("unknown key");
    assert!(
        e.to_string().contains("did you mean \"link.delay\"?)"),
        "{e}"
    );
    // Nothing close: no guess.
    let e = err("[link]\nzzzzzzzz = 1\n");
    assert!(!e.message.contains("did you mean"), "{e}");
}

#[test]
fn a_bare_probability_of_5_percent_or_more_is_warned_with_the_percentage_form() {
    // Regression: `loss = 0.5` (meant 0.5%) silently ran at 50% loss.
    let l = ok("[link]\nloss = 0.5\n");
    assert_eq!(
        l.warnings,
        ["t.toml:2:8: link.loss = 0.5 is a probability, i.e. 50%; if you meant 0.5%, write \"0.5%\""]
    );
    // Percent strings and small bare probabilities are what they say.
    assert!(ok("[link]\nloss = \"0.5%\"\n").warnings.is_empty());
    assert!(ok("[link]\nloss = 0.01\n").warnings.is_empty());
    // Each place is warned once, however many sweep points read it.
    let l = parse_with("[link]\ncorrupt = 0.1\n", &[], &["link.delay=1ms,2ms"]).unwrap();
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(l.warnings[0].contains("i.e. 10%;"), "{:?}", l.warnings);
    let l = parse_with("", &["link.loss=0.2"], &[]).unwrap();
    assert_eq!(
        l.warnings,
        ["--set link.loss=0.2: link.loss = 0.2 is a probability, i.e. 20%; if you meant 0.2%, write \"0.2%\""]
    );
}

#[test]
fn scalable_controllers_turn_ecn_on_and_quinn_refuses_them() {
    let load = parse;
    for stack in ["tcp", "quic-model"] {
        let l = load(&format!("[[flow]]\nstack = \"{stack}\"\ncc = \"prague\"\n")).expect("parses");
        let f = &l.points[0].scenario.flows[0];
        assert_eq!(f.cc.name(), "prague");
        let on = match &f.transport {
            crate::model::FlowTransport::Tcp { knobs, .. } => knobs.ecn,
            crate::model::FlowTransport::QuicModel(k) => k.common.ecn,
            crate::model::FlowTransport::Quic(_) | crate::model::FlowTransport::Quiche(_) => {
                unreachable!()
            }
        };
        assert!(on, "{stack}: cc = prague turns ECN on");
    }
    let e = load("[[flow]]\nstack = \"tcp\"\ncc = \"dctcp\"\necn = false\n")
        .expect_err("ecn = false beside dctcp")
        .to_string();
    assert!(
        e.contains("t.toml:4:7: flow.0.ecn = false: cc = \"dctcp\" is driven by ECN marks"),
        "{e}"
    );
    let e = load("[[flow]]\nstack = \"quic\"\ncc = \"dctcp\"\n")
        .expect_err("quinn has no per-ACK ECN counts")
        .to_string();
    assert!(e.contains("t.toml:3:6: cc = \"dctcp\""), "{e}");
    assert!(
        e.contains(
            "allowed for stack = \"quic\": newreno, newreno-approx, cubic, none, quinn-newreno"
        ),
        "{e}"
    );
    let e = load("[[flow]]\nstack = \"quic\"\ncc = \"bbr\"\n")
        .expect_err("quinn passes no delivery-rate samples")
        .to_string();
    assert_eq!(
        e,
        "t.toml:3:6: cc = \"bbr\" (it needs per-ACK delivery-rate samples, which quinn's controller interface does not pass; quinn's own BBR is cc = \"quinn-bbr\") applies only to flows with stack = \"tcp\" or \"quic-model\", but this flow has stack = \"quic\"; allowed for stack = \"quic\": newreno, newreno-approx, cubic, none, quinn-newreno, quinn-cubic, quinn-bbr"
    );
    assert!(
        e.contains("allowed for stack = \"quic\": newreno, newreno-approx, cubic, none, quinn-newreno, quinn-cubic, quinn-bbr"),
        "{e}"
    );
    for stack in ["tcp", "quic-model"] {
        let f = load(&format!("[[flow]]\nstack = \"{stack}\"\ncc = \"bbr\"\n"))
            .expect("bbr on the models");
        assert_eq!(f.points[0].scenario.flows[0].cc.name(), "bbr");
    }
    // BBRv3 likewise: refused on quinn's stack at the value's position.
    let e = load("[[flow]]\nstack = \"quic\"\ncc = \"bbr3\"\n")
        .expect_err("quinn passes no delivery-rate samples")
        .to_string();
    assert!(
        e.contains("t.toml:3:6: cc = \"bbr3\" (it needs per-ACK delivery-rate samples"),
        "{e}"
    );
    assert!(
        e.contains(
            "allowed for stack = \"quic\": newreno, newreno-approx, cubic, none, quinn-newreno"
        ),
        "{e}"
    );
    for stack in ["tcp", "quic-model"] {
        let f = load(&format!("[[flow]]\nstack = \"{stack}\"\ncc = \"bbr3\"\n"))
            .expect("bbr3 on the models");
        let cc = &f.points[0].scenario.flows[0].cc;
        assert_eq!(cc.name(), "bbr3");
        assert!(
            matches!(cc, CcChoice::Ours(CcConfig::Bbr3 { .. })),
            "{cc:?}"
        );
    }
}
