//! Figures a scenario declares (`[[figure]]`): drawn first in the default set, over the points
//! and with the lines they name, per experiment in a study; unknown metrics are errors.

use std::collections::BTreeSet;
use std::path::PathBuf;

use figures::data::{PointData, ResultsDir, RunData};
use figures::declared::DeclaredSpec;
use figures::{FigureKind, PlotOptions};
use serde_json::json;

fn spec(v: serde_json::Value) -> DeclaredSpec {
    serde_json::from_value(v).expect("a spec as sweep.json records it")
}

/// Points over `variant` × `link.loss` (× `experiment` when given), one run each whose
/// completion is `1 + point index`.
fn dir(
    axes: Vec<Vec<(&str, &str)>>,
    figures: impl Fn(&[(String, String)]) -> Vec<DeclaredSpec>,
) -> ResultsDir {
    let points: Vec<PointData> = axes
        .into_iter()
        .enumerate()
        .map(|(index, axes)| {
            let axes: Vec<(String, String)> = axes
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            PointData {
                index,
                figures: figures(&axes),
                axes,
                ..PointData::default()
            }
        })
        .collect();
    let runs = points
        .iter()
        .map(|p| {
            let line = json!({"flows": [{"name": "dl", "completion_s": 1.0 + p.index as f64}]});
            RunData {
                id: format!("p{}-r0", p.index),
                point: p.index,
                rep: 0,
                metrics: analysis::flatten_numeric(&line).into_iter().collect(),
                json: line,
            }
        })
        .collect();
    ResultsDir {
        dir: PathBuf::from("."),
        scenario: "t".into(),
        base_seed: Some(1),
        points,
        runs,
        series: BTreeSet::new(),
    }
}

fn grid(experiment: Option<&'static str>) -> Vec<Vec<(&'static str, &'static str)>> {
    let mut out = Vec::new();
    for v in ["quic", "tcp"] {
        for loss in ["0%", "1%", "2%"] {
            for size in ["100kB", "1MB"] {
                let mut a = Vec::new();
                if let Some(e) = experiment {
                    a.push(("experiment", e));
                }
                a.extend([("variant", v), ("link.loss", loss), ("flow.size", size)]);
                out.push(a);
            }
        }
    }
    out
}

#[test]
fn a_line_figure_draws_the_lines_and_points_it_names_first_in_the_default_set() {
    let line = spec(json!({
        "name": "dl", "kind": "line", "y": ["flows.0.completion_s"], "x": "link.loss",
        "series": ["variant"], "filter": [["flow.size", ["1MB"]]],
        "x_scale": "linear", "y_scale": "log", "title": "Download time", "flow": null, "until": null
    }));
    let d = dir(grid(None), |_| vec![line.clone()]);
    let figs = figures::figures(&d, &PlotOptions::default()).expect("figures");
    let f = &figs[0];
    assert_eq!((f.id.as_str(), f.kind), ("fig-dl", FigureKind::Declared));
    assert_eq!(f.title, "Download time");
    assert!(f.caption.contains("one line per variant"), "{}", f.caption);
    // Two lines (quic, tcp), named by the variant alone; the 100kB points are left out.
    assert!(
        f.svg.contains("variant=quic") && f.svg.contains("variant=tcp"),
        "{}",
        f.svg
    );
    assert!(
        !f.svg.contains("flow.size"),
        "the filtered axis names no line"
    );
    assert_eq!(
        figs.iter()
            .filter(|f| f.kind == FigureKind::Declared)
            .count(),
        1
    );
    // A figure named on the command line is drawn alone.
    let opts = PlotOptions {
        metrics: vec!["flows.0.completion_s".into()],
        ..PlotOptions::default()
    };
    let named = figures::figures(&d, &opts).expect("figures");
    assert!(named.iter().all(|f| f.kind != FigureKind::Declared));
}

#[test]
fn without_series_every_other_varying_axis_makes_the_lines() {
    let line = spec(
        json!({"name": "all", "kind": "line", "y": ["flows.0.completion_s"], "x": "link.loss"}),
    );
    let d = dir(grid(None), |_| vec![line.clone()]);
    let f = &figures::declared::figures(&d, figures::FigureSize::Screen).expect("figures")[0];
    assert!(f.svg.contains("variant=tcp, flow.size=1MB"), "{}", f.svg);
    assert!(
        f.caption.contains("one line per variant × flow.size"),
        "{}",
        f.caption
    );
}

#[test]
fn each_experiment_of_a_study_draws_its_own_figures_over_its_points() {
    let mut axes = grid(Some("a"));
    axes.extend(grid(Some("b")));
    let a = spec(
        json!({"name": "dl", "kind": "line", "y": ["flows.0.completion_s"], "x": "flow.size", "series": ["variant"]}),
    );
    let b = spec(
        json!({"name": "dist", "kind": "cdf", "y": ["flows.0.completion_s"], "series": ["variant"]}),
    );
    let d = dir(axes, |ax| {
        if ax[0].1 == "a" {
            vec![a.clone()]
        } else {
            vec![b.clone()]
        }
    });
    let figs = figures::declared::figures(&d, figures::FigureSize::Screen).expect("figures");
    let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["fig-a-dl", "fig-b-dist"]);
    // The CDF pools the 6 points of each variant in experiment b: n/N = 6/6 per curve.
    assert_eq!(
        figs[1].svg.matches("n/N = 6/6").count(),
        2,
        "{}",
        figs[1].svg
    );
}

#[test]
fn an_unknown_metric_is_an_error_naming_the_figure_and_what_exists() {
    let bad =
        spec(json!({"name": "x", "kind": "line", "y": ["flows.0.goodput_bps"], "x": "link.loss"}));
    let d = dir(grid(None), |_| vec![bad.clone()]);
    let e = figures::figures(&d, &PlotOptions::default())
        .expect_err("unknown metric")
        .to_string();
    assert!(
        e.contains("figure.y") && e.contains("flows.0.goodput_bps in figure x"),
        "{e}"
    );
    assert!(e.contains("flows.0.completion_s"), "{e}");
}

#[test]
fn a_series_figure_draws_a_panel_per_column_and_a_line_per_point_up_to_until() {
    let tmp = fsutil::PrivateDir::new("figures-test-declared-").expect("temp dir");
    std::fs::create_dir(tmp.path().join("series")).expect("series dir");
    let s = spec(json!({
        "name": "cwnd", "kind": "series", "y": ["cwnd_bytes", "srtt_ms"], "series": ["variant"],
        "filter": [["link.loss", ["1%"]], ["flow.size", ["1MB"]]], "until": {"secs": 2, "nanos": 0}
    }));
    let mut d = dir(grid(None), |_| vec![s.clone()]);
    d.dir = tmp.path().to_path_buf();
    for r in &d.runs {
        let mut csv = String::from("t_s,flow,cwnd_bytes,srtt_ms\n");
        for t in 0..6 {
            csv.push_str(&format!("{t},dl,{},{}\n", 10_000 * (t + 1), 20 + t));
        }
        std::fs::write(tmp.path().join(format!("series/{}.csv", r.id)), csv).expect("write");
        d.series.insert(r.id.clone());
    }
    let figs = figures::declared::figures(&d, figures::FigureSize::Screen).expect("figures");
    assert_eq!(figs.len(), 1);
    let f = &figs[0];
    assert!(
        f.svg.contains("cwnd [") && f.svg.contains("sRTT [ms]"),
        "{}",
        f.svg
    );
    // The two representative runs: quic and tcp at 1%, 1MB (points 3 and 9).
    assert!(
        f.caption.contains("p3-r0 (variant=quic)") && f.caption.contains("p9-r0 (variant=tcp)"),
        "{}",
        f.caption
    );
    // Up to 2 s: the time axis does not reach 5.
    assert!(
        !f.svg.contains(">5<") && !f.svg.contains(">5.0<"),
        "{}",
        f.svg
    );
    // Runs shorter than a sample bin have header-only series: no figure, no error.
    let mut short = d.clone();
    for r in &short.runs {
        std::fs::write(
            tmp.path().join(format!("series/{}.csv", r.id)),
            "t_s,flow\n",
        )
        .expect("write");
    }
    short.dir = tmp.path().to_path_buf();
    assert!(
        figures::declared::figures(&short, figures::FigureSize::Screen)
            .expect("no error")
            .is_empty()
    );
    for r in &d.runs {
        let mut csv = String::from("t_s,flow,cwnd_bytes,srtt_ms\n");
        csv.push_str("0,dl,10000,20\n");
        std::fs::write(tmp.path().join(format!("series/{}.csv", r.id)), csv).expect("write");
    }
    let bad = spec(json!({"name": "q", "kind": "series", "y": ["queue_bytes"]}));
    d.points
        .iter_mut()
        .for_each(|p| p.figures = vec![bad.clone()]);
    let e = figures::declared::figures(&d, figures::FigureSize::Screen)
        .expect_err("no column")
        .to_string();
    assert!(
        e.contains("queue_bytes") && e.contains("cwnd_bytes, srtt_ms"),
        "{e}"
    );
}

#[test]
fn a_ratio_of_two_metrics_is_drawn_per_run_and_an_unknown_side_is_an_error() {
    let ratio = spec(json!({
        "name": "per", "kind": "line", "y": ["flows.0.completion_s / flows.0.packets_sent"],
        "x": "link.loss", "series": ["variant"]
    }));
    let mut d = dir(grid(None), |_| vec![ratio.clone()]);
    for r in &mut d.runs {
        let packets = if r.point == 0 { 0.0 } else { 4.0 };
        r.metrics.insert("flows.0.packets_sent".into(), packets);
    }
    // Per run: completion / packets; no value where the denominator is zero.
    assert_eq!(
        d.runs[1].value("flows.0.completion_s / flows.0.packets_sent"),
        Some(0.5)
    );
    assert_eq!(
        d.runs[0].value("flows.0.completion_s / flows.0.packets_sent"),
        None
    );
    let f = &figures::declared::figures(&d, figures::FigureSize::Screen).expect("figures")[0];
    assert!(
        f.svg
            .contains("completion (flow 0) / packets sent (flow 0)"),
        "{}",
        f.svg
    );
    let bad = spec(json!({
        "name": "bad", "kind": "line", "y": ["flows.0.completion_s / flows.0.nothing"],
        "x": "link.loss"
    }));
    let d = dir(grid(None), |_| vec![bad.clone()]);
    let e = figures::declared::figures(&d, figures::FigureSize::Screen)
        .expect_err("unknown denominator")
        .to_string();
    assert!(e.contains("flows.0.nothing"), "{e}");
}

/// The variants of a point share their seeds, so a series figure over the variant draws one
/// repetition for all of them (the first variant's representative), not each variant's own.
#[test]
fn a_series_figure_over_the_variants_draws_the_same_repetition_of_each() {
    let tmp = fsutil::PrivateDir::new("figures-test-declared-").expect("temp dir");
    std::fs::create_dir(tmp.path().join("series")).expect("series dir");
    let s = spec(json!({
        "name": "goodput", "kind": "series", "y": ["goodput_bps"], "series": ["variant"],
        "filter": [["link.loss", ["1%"]], ["flow.size", ["1MB"]]]
    }));
    let mut d = dir(grid(None), |_| vec![s.clone()]);
    d.dir = tmp.path().to_path_buf();
    // Three repetitions per point. quic's median completion is rep 2's, tcp's rep 0's.
    let completions = |variant: &str| match variant {
        "quic" => [1.0, 3.0, 2.0],
        _ => [2.0, 1.0, 3.0],
    };
    d.runs = d
        .points
        .iter()
        .flat_map(|p| {
            let variant = p
                .axes
                .iter()
                .find(|(k, _)| k == "variant")
                .unwrap()
                .1
                .clone();
            completions(&variant)
                .into_iter()
                .enumerate()
                .map(move |(rep, c)| {
                    let line = json!({"flows": [{"name": "dl", "completion_s": c}]});
                    RunData {
                        id: format!("p{}-r{rep}", p.index),
                        point: p.index,
                        rep: rep as u32,
                        metrics: analysis::flatten_numeric(&line).into_iter().collect(),
                        json: line,
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect();
    for r in &d.runs {
        let csv = "t_s,flow,goodput_bps\n0,dl,1\n1,dl,2\n";
        std::fs::write(tmp.path().join(format!("series/{}.csv", r.id)), csv).expect("write");
        d.series.insert(r.id.clone());
    }
    let figs = figures::declared::figures(&d, figures::FigureSize::Screen).expect("figures");
    let caption = &figs[0].caption;
    // quic at 1%, 1MB is point 3, tcp point 9: both rep 2, quic's representative.
    assert!(
        caption.contains("p3-r2 (variant=quic)") && caption.contains("p9-r2 (variant=tcp)"),
        "{caption}"
    );
}
