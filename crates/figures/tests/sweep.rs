//! Sweep figures from an in-memory results directory: a protocol `variant` axis and a metric
//! the schema does not have yet are picked up by name; joined sweeps with different axes (a
//! study) are plotted against each experiment's own parameter only.

use std::collections::BTreeSet;
use std::path::PathBuf;

use figures::data::{PointData, ResultsDir, RunData};
use figures::{FigureKind, PlotOptions};
use serde_json::json;

mod common;
use common::smallest_text_pt;

fn dir(
    points: Vec<Vec<(&str, &str)>>,
    reps: u32,
    value: impl Fn(usize, u32) -> Option<f64>,
) -> ResultsDir {
    let points: Vec<PointData> = points
        .into_iter()
        .enumerate()
        .map(|(index, axes)| PointData {
            index,
            axes: axes
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..PointData::default()
        })
        .collect();
    let mut runs = Vec::new();
    for p in &points {
        for rep in 0..reps {
            let v = value(p.index, rep);
            let line = json!({
                "id": format!("p{}-r{rep}", p.index),
                "point": p.index,
                "rep": rep,
                "flows": [{"name": "page", "completion_s": v}],
                // A metric from a later schema: found by its name.
                "fairness": {"jain": 0.5 + 0.1 * p.index as f64},
            });
            let metrics = analysis::flatten_numeric(&line)
                .into_iter()
                .filter(|(k, _)| !["point", "rep"].contains(&k.as_str()))
                .collect();
            runs.push(RunData {
                id: format!("p{}-r{rep}", p.index),
                point: p.index,
                rep,
                json: line,
                metrics,
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

#[test]
fn variant_axis_and_new_metrics_are_plotted_by_name() {
    let d = dir(
        vec![
            vec![("variant", "quic-1rtt"), ("link.rtt", "20ms")],
            vec![("variant", "quic-1rtt"), ("link.rtt", "100ms")],
            vec![("variant", "tcp-tls1.3"), ("link.rtt", "20ms")],
            vec![("variant", "tcp-tls1.3"), ("link.rtt", "100ms")],
        ],
        3,
        // The TCP runs at 100 ms did not complete in one repetition.
        |p, rep| (p != 3 || rep != 0).then_some(0.1 * (p + 1) as f64 + 0.01 * rep as f64),
    );
    let figs = figures::figures(&d, &PlotOptions::default()).expect("figures");
    let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
    for want in [
        "sweep-flows.0.completion_s-vs-link.rtt",
        "sweep-flows.0.completion_s-vs-variant",
        "sweep-fairness.jain-vs-link.rtt",
        "cdf-flows.0.completion_s",
    ] {
        assert!(ids.contains(&want), "{want} missing: {ids:?}");
    }
    let rtt = figs
        .iter()
        .find(|f| f.id == "sweep-flows.0.completion_s-vs-link.rtt")
        .unwrap();
    // One line per variant, with its n/N; the missing run is counted.
    assert!(rtt.svg.contains("variant=quic-1rtt") && rtt.svg.contains("variant=tcp-tls1.3"));
    assert!(rtt.svg.contains("n/N = 2–3/3"), "{}", rtt.svg);
    assert_eq!(rtt.missing_runs, 1);
    // Numeric axis from "20ms"/"100ms": the unit goes to the label.
    assert!(rtt.svg.contains("link.rtt [ms]"));
    for f in &figs {
        roxmltree::Document::parse(&f.svg).expect("SVG parses");
    }
    let cdf = figs.iter().find(|f| f.kind == FigureKind::Cdf).unwrap();
    assert!(cdf.svg.contains("did not complete"), "the CDF warns");
}

#[test]
fn a_study_is_plotted_against_each_experiments_parameter() {
    let d = dir(
        vec![
            vec![
                ("experiment", "loss"),
                ("variant", "quic"),
                ("link.loss", "1%"),
            ],
            vec![
                ("experiment", "loss"),
                ("variant", "quic"),
                ("link.loss", "5%"),
            ],
            vec![
                ("experiment", "loss"),
                ("variant", "tcp"),
                ("link.loss", "1%"),
            ],
            vec![
                ("experiment", "loss"),
                ("variant", "tcp"),
                ("link.loss", "5%"),
            ],
            vec![
                ("experiment", "rate"),
                ("variant", "quic"),
                ("link.rate", "1Mbit"),
            ],
            vec![
                ("experiment", "rate"),
                ("variant", "quic"),
                ("link.rate", "5Mbit"),
            ],
        ],
        2,
        |p, _| Some(1.0 + p as f64),
    );
    assert_eq!(
        figures::sweep::plottable_axes(&d),
        ["link.loss", "link.rate"],
        "experiment and variant span points with different axes"
    );
    let opts = PlotOptions {
        metrics: vec!["flows.*.completion_s".into()],
        ..PlotOptions::default()
    };
    let figs = figures::figures(&d, &opts).expect("figures");
    let cdfs: Vec<&str> = figs
        .iter()
        .filter(|f| f.kind == FigureKind::Cdf)
        .map(|f| f.title.as_str())
        .collect();
    assert_eq!(cdfs.len(), 2, "one CDF per experiment: {cdfs:?}");
    assert!(cdfs[0].contains("experiment=loss"), "{cdfs:?}");
    // An axis that is not in the directory is refused with the allowed ones.
    let bad = PlotOptions {
        x: vec!["link.delay".into()],
        ..PlotOptions::default()
    };
    let e = figures::figures(&d, &bad).unwrap_err().to_string();
    assert!(
        e.contains("--x \"link.delay\"") && e.contains("link.loss"),
        "{e}"
    );
}

#[test]
fn experiments_sharing_an_axis_get_a_figure_each() {
    // seed001's shape: every experiment sweeps link.delay and variants; one figure mixing all
    // experiments' series would be unreadable (and its legend too long).
    let mut points = Vec::new();
    for exp in ["fig7", "p0.02"] {
        for variant in ["1:1", "1:10"] {
            for delay in ["1ms", "5ms"] {
                points.push(vec![
                    ("experiment", exp),
                    ("variant", variant),
                    ("link.delay", delay),
                ]);
            }
        }
    }
    let d = dir(points, 2, |p, _| Some(1.0 + p as f64));
    assert_eq!(
        figures::sweep::plottable_axes(&d),
        ["variant", "link.delay"],
        "experiment is never an x axis"
    );
    let opts = PlotOptions {
        metrics: vec!["flows.*.completion_s".into()],
        ..PlotOptions::default()
    };
    let figs = figures::figures(&d, &opts).expect("figures");
    let ids: Vec<&str> = figs
        .iter()
        .filter(|f| f.kind == FigureKind::Sweep)
        .map(|f| f.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "sweep-fig7-flows.0.completion_s-vs-variant",
            "sweep-p0.02-flows.0.completion_s-vs-variant",
            "sweep-fig7-flows.0.completion_s-vs-link.delay",
            "sweep-p0.02-flows.0.completion_s-vs-link.delay",
        ]
    );
    let fig7 = figs
        .iter()
        .find(|f| f.id == "sweep-fig7-flows.0.completion_s-vs-link.delay")
        .unwrap();
    assert!(fig7.title.ends_with("(fig7)"), "{}", fig7.title);
    assert!(fig7.svg.contains("variant=1:10"), "its own series");
    assert!(!fig7.svg.contains("p0.02"), "no other experiment's series");
}

#[test]
fn each_experiments_figures_name_its_flows_as_it_does() {
    // seed003's shape: most experiments have one flow `download`; the shared-medium one has
    // `quic` and `tcp`. A figure of the first kind must not call its flow "quic".
    let mut points = Vec::new();
    for (exp, x) in [("loss", "link.loss"), ("shared", "link.rate")] {
        for v in ["1", "2"] {
            points.push(vec![("experiment", exp), (x, v)]);
        }
    }
    let mut d = dir(points, 2, |p, _| Some(1.0 + p as f64));
    for p in &mut d.points {
        let names: &[&str] = if p.index < 2 {
            &["download"]
        } else {
            &["quic", "tcp"]
        };
        p.flows = names
            .iter()
            .map(|n| figures::data::FlowInfo {
                name: (*n).into(),
                stack: "Quic".into(),
                workload: "Download".into(),
            })
            .collect();
    }
    let opts = PlotOptions {
        metrics: vec!["flows.0.completion_s".into()],
        ..PlotOptions::default()
    };
    let figs = figures::figures(&d, &opts).expect("figures");
    let title = |id: &str| {
        figs.iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .title
            .clone()
    };
    assert!(
        title("sweep-flows.0.completion_s-vs-link.loss").contains("flow download"),
        "{}",
        title("sweep-flows.0.completion_s-vs-link.loss")
    );
    assert!(title("sweep-flows.0.completion_s-vs-link.rate").contains("flow quic"));
    let cdfs: Vec<&str> = figs
        .iter()
        .filter(|f| f.kind == FigureKind::Cdf)
        .map(|f| f.title.as_str())
        .collect();
    assert!(
        cdfs.iter()
            .any(|t| t.contains("flow download") && t.contains("loss"))
            && cdfs
                .iter()
                .any(|t| t.contains("flow quic") && t.contains("shared")),
        "{cdfs:?}"
    );
}

#[test]
fn a_one_column_figure_prints_its_text_at_8_pt_or_more() {
    let mut points = Vec::new();
    for variant in ["quic-1rtt", "tcp-tls1.3"] {
        for loss in ["1%", "2%", "5%"] {
            points.push(vec![("variant", variant), ("link.loss", loss)]);
        }
    }
    let d = dir(points, 3, |p, r| Some(1.0 + p as f64 + 0.1 * f64::from(r)));
    let figs = |size| {
        let opts = PlotOptions {
            metrics: vec!["flows.0.completion_s".into()],
            x: vec!["link.loss".into()],
            size,
            ..PlotOptions::default()
        };
        figures::figures(&d, &opts).expect("figures")
    };
    let column_pt = 3.5 * 72.0;
    let print = figs(figures::FigureSize::OneColumn);
    let sweep = print
        .iter()
        .find(|f| f.kind == FigureKind::Sweep)
        .expect("a sweep figure");
    let root = roxmltree::Document::parse(&sweep.svg).expect("svg");
    assert_eq!(root.root_element().attribute("width"), Some("3.5in"));
    for f in print.iter().filter(|f| f.kind != FigureKind::Series) {
        let pt = smallest_text_pt(&f.svg, column_pt);
        assert!(pt >= 7.99, "{}: smallest text {pt:.2} pt", f.id);
    }
    // The screen figure shrunk to a column would not do: the measure can fail.
    let screen = figs(figures::FigureSize::Screen);
    let f = screen.iter().find(|f| f.kind == FigureKind::Sweep).unwrap();
    assert!(smallest_text_pt(&f.svg, column_pt) < 4.0);
}

#[test]
fn the_copies_of_a_counted_flow_get_no_default_figures_of_their_own() {
    // One BBR flow against three CUBIC copies (`count = 3`: cubic.0, cubic.1, cubic.2).
    let mut d = dir(
        vec![vec![("link.queue", "1bdp")], vec![("link.queue", "2bdp")]],
        2,
        |p, _| Some(1.0 + p as f64),
    );
    for r in &mut d.runs {
        for i in 1..4 {
            r.metrics.insert(format!("flows.{i}.completion_s"), 2.0);
        }
    }
    for p in &mut d.points {
        p.flows = ["bbr", "cubic.0", "cubic.1", "cubic.2"]
            .iter()
            .map(|n| figures::data::FlowInfo {
                name: (*n).into(),
                ..Default::default()
            })
            .collect();
    }
    assert_eq!(d.copied_flows().into_iter().collect::<Vec<_>>(), [2, 3]);
    let chosen = figures::chosen_metrics(&d, &PlotOptions::default()).expect("defaults");
    for kept in ["flows.0.completion_s", "flows.1.completion_s"] {
        assert!(
            chosen.iter().any(|m| m == kept),
            "{kept} missing: {chosen:?}"
        );
    }
    assert!(!chosen
        .iter()
        .any(|m| m.starts_with("flows.2.") || m.starts_with("flows.3.")));
    // Named on the command line, a copy is drawn.
    let named = PlotOptions {
        metrics: vec!["flows.3.completion_s".into()],
        ..PlotOptions::default()
    };
    assert_eq!(
        figures::chosen_metrics(&d, &named).expect("named"),
        ["flows.3.completion_s"]
    );
}
