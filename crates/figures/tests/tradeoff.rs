//! Throughput-against-delay figures from an in-memory study directory: one figure per
//! experiment, one series per variant, a point per sweep point at the runs' mean with its
//! confidence region, and the copies of the named flow summed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use figures::data::{FlowInfo, PointData, ResultsDir, RunData};
use figures::tradeoff::{figures, TradeoffSpec};
use figures::{FigureKind, FigureSize};
use serde_json::json;

const DELAY: &str = "probes.0.rtt.p95_s";

fn flow(name: &str) -> FlowInfo {
    FlowInfo {
        name: name.into(),
        ..FlowInfo::default()
    }
}

/// Two experiments × two variants × two parameter values, 4 repetitions; flows `down.0`,
/// `down.1`, `up`. Delay (s) and each download's goodput (bit/s) come from `value`.
fn study(value: impl Fn(usize, u32) -> (f64, f64)) -> ResultsDir {
    let mut points = Vec::new();
    for (e, param, values) in [
        ("buffers", "link.queue", ["1bdp", "16bdp"]),
        ("aqm", "link.qdisc", ["droptail", "codel"]),
    ] {
        for variant in ["quic", "tcp"] {
            for v in values {
                points.push(PointData {
                    index: points.len(),
                    axes: vec![
                        ("experiment".into(), e.into()),
                        ("variant".into(), variant.into()),
                        (param.into(), v.into()),
                    ],
                    flows: vec![flow("down.0"), flow("down.1"), flow("up")],
                    ..PointData::default()
                });
            }
        }
    }
    let mut runs = Vec::new();
    for p in &points {
        for rep in 0..4 {
            let (delay, goodput) = value(p.index, rep);
            let line = json!({
                "probes": [{"rtt": {"p95_s": delay}}],
                "flows": [
                    {"window_goodput_bps": goodput},
                    {"window_goodput_bps": goodput},
                    {"window_goodput_bps": 1e9},
                ],
            });
            runs.push(RunData {
                id: format!("p{}-r{rep}", p.index),
                point: p.index,
                rep,
                metrics: analysis::flatten_numeric(&line).into_iter().collect(),
                json: line,
            });
        }
    }
    ResultsDir {
        dir: PathBuf::from("."),
        scenario: "t".into(),
        base_seed: Some(1),
        points,
        runs,
        series: BTreeSet::new(),
    }
}

fn spec(flow: &str) -> TradeoffSpec {
    TradeoffSpec {
        delay: DELAY.into(),
        delay_label: "ping RTT p95".into(),
        flow: flow.into(),
    }
}

#[test]
fn one_figure_per_experiment_with_a_series_per_variant_and_named_points() {
    let d = study(|p, rep| {
        (
            0.05 * (p + 1) as f64 + 0.001 * rep as f64,
            5e6 + 1e5 * rep as f64,
        )
    });
    let figs = figures(&d, &spec("down"), FigureSize::Screen).expect("figures");
    let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["tradeoff-buffers", "tradeoff-aqm"]);
    assert!(figs.iter().all(|f| f.kind == FigureKind::Tradeoff));
    let svg = &figs[1].svg;
    for text in ["droptail", "codel", "quic", "tcp", "n/N = 4/4"] {
        assert!(svg.contains(text), "{text} missing from the aqm figure");
    }
    assert!(
        !svg.contains("16bdp"),
        "the buffers experiment's points leaked into aqm"
    );
    // The two downloads are summed (2 × 5.15 Mbit/s mean), the upload is not: the y axis
    // reaches about 10.3 and never 1000.
    assert!(svg.contains("10.3") || svg.contains("10.2") || svg.contains("10.4"));
    assert!(!svg.contains(">1000<"));
    // A confidence region per point: runs spread in both variables.
    assert!(svg.matches("<polygon").count() >= 4, "no ellipses drawn");
}

#[test]
fn identical_runs_draw_points_without_a_region() {
    let d = study(|p, _| (0.05 * (p + 1) as f64, 5e6));
    let figs = figures(&d, &spec("down"), FigureSize::Screen).expect("figures");
    assert_eq!(figs.len(), 2);
    assert_eq!(figs[0].svg.matches("<polygon").count(), 0);
}

#[test]
fn unknown_delay_metric_or_flow_is_an_error_naming_what_exists() {
    let d = study(|_, _| (0.05, 5e6));
    let e = figures(&d, &spec("bulk"), FigureSize::Screen)
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"bulk\"") && e.contains("down.0"), "{e}");
    let mut s = spec("down");
    s.delay = "probes.0.rtt.p96_s".into();
    let e = figures(&d, &s, FigureSize::Screen).unwrap_err().to_string();
    assert!(e.contains("p96_s") && e.contains(DELAY), "{e}");
}

#[test]
fn the_command_line_form_is_metric_colon_flow() {
    let s = TradeoffSpec::parse("probes.0.rtt.p95_s:down").expect("valid");
    assert_eq!((s.delay.as_str(), s.flow.as_str()), (DELAY, "down"));
    assert!(TradeoffSpec::parse("probes.0.rtt.p95_s").is_err());
    assert!(TradeoffSpec::parse(":down").is_err());
}
