//! `report.html`: one self-contained page per results directory.
//!
//! Inline CSS, every figure as inline SVG, no script and no external resource, so the file can
//! be mailed, archived or opened offline and shows the same thing everywhere. Sections: the
//! scenario, warnings (runs missing or not completed), a table of the main metrics per sweep
//! point with n/N, the sweep figures, the completion-time CDFs and a representative run's time
//! series.

use std::fmt::Write as _;

use serde_json::Value;

use crate::data::ResultsDir;
use crate::error::FigureError;
use crate::sweep::key_label;
use crate::tradeoff::TradeoffSpec;
use crate::{metric, Figure, FigureKind, PlotOptions};

/// Per-flow metrics tabulated (the full set is in summary.csv); names with a word of
/// [`metric::BY_NAME`] are added.
const TABLE_METRICS: [&str; 5] = [
    "goodput_bps",
    "window_goodput_bps",
    "completion_s",
    "ttfb_s",
    "packets_lost",
];
/// Per-connection metrics tabulated for flows of several connections.
const CONNECTION_METRICS: [&str; 2] = ["completion_s", "time_to_first_byte_s"];
/// Points whose representative run's time series the report shows (first, last, between).
const SERIES_POINTS: usize = 2;

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:16px 24px;color:#222;background:#fff}
h1{font-size:1.6em;margin:.4em 0}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin:1.2em 0 .3em}table{border-collapse:collapse;font-size:.9em;margin:.6em 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}td{white-space:nowrap}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.warn{background:#fff4e0;border-left:4px solid #e69500;padding:8px 12px;margin:.6em 0}
.warn ul{margin:.2em 0;padding-left:1.2em}.ok{color:#2a7a2a}.bad{color:#b00020}
td.incomplete{background:#fff4e0}
figure{margin:1.2em 0;padding:0}figure svg{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#444;margin-top:.3em}
.meta td:first-child{font-weight:600;white-space:nowrap}
.scroll{overflow-x:auto}.toc{font-size:.95em}code{background:#f4f4f4;padding:0 3px}
";

/// HTML-escapes text for element content and attribute values.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Removes an XML declaration or doctype before the `<svg` element (not allowed inline).
fn inline_svg(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

/// The report of `d`, with the throughput-against-delay figures of `tradeoffs`.
pub fn report(
    d: &ResultsDir,
    tradeoffs: &[TradeoffSpec],
    leading: &[Figure],
    preface_html: &str,
) -> Result<String, FigureError> {
    let opts = PlotOptions {
        max_series_points: SERIES_POINTS,
        tradeoffs: tradeoffs.to_vec(),
        ..PlotOptions::default()
    };
    let mut figs = leading.to_vec();
    figs.extend(crate::figures(d, &opts)?);
    Ok(render_with(d, &figs, preface_html))
}

/// The page of `d` with `figs` (already rendered).
pub fn render(d: &ResultsDir, figs: &[Figure]) -> String {
    render_with(d, figs, "")
}

/// The page of `d` with `figs`, `preface_html` first after the contents line (a study's
/// comparison with its paper).
pub fn render_with(d: &ResultsDir, figs: &[Figure], preface_html: &str) -> String {
    let mut o = String::new();
    let title = format!("quiclab report — {}", d.scenario);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let count = |k: FigureKind| figs.iter().filter(|f| f.kind == k).count();
    let has_variants = d.points.iter().any(|p| {
        p.axes
            .iter()
            .any(|(k, _)| k == analysis::paired::VARIANT_AXIS)
    });
    let _ = writeln!(
        o,
        "<p class=\"toc\">{}{}<a href=\"#scenario\">Scenario</a> · <a href=\"#warnings\">Warnings</a> · \
         <a href=\"#results\">Results per sweep point</a>{} · {}<a href=\"#sweep\">Sweep figures ({})</a> · \
         <a href=\"#cdf\">Completion-time CDFs ({})</a> · <a href=\"#series\">Time series ({})</a></p>",
        [
            ("paper", "The paper's numbers beside ours"),
            ("validation", "Validation against the paper's analytic cases"),
            ("explanation", "What the study found, and why"),
        ]
        .iter()
        .filter(|(id, _)| preface_html.contains(&format!("<h2 id=\"{id}\">")))
        .map(|(id, name)| format!("<a href=\"#{id}\">{name}</a> · "))
        .collect::<String>(),
        match (count(FigureKind::Study), count(FigureKind::Declared)) {
            (0, 0) => String::new(),
            (0, n) => format!("<a href=\"#declared\">The scenario's figures ({n})</a> · "),
            (s, 0) => format!("<a href=\"#study\">The study's figures ({s})</a> · "),
            (s, n) => format!(
                "<a href=\"#study\">The study's figures ({s})</a> · \
                 <a href=\"#declared\">The scenario's figures ({n})</a> · "
            ),
        },
        if has_variants {
            " · <a href=\"#paired\">Paired comparisons</a>"
        } else {
            ""
        },
        match count(FigureKind::Tradeoff) {
            0 => String::new(),
            n => format!("<a href=\"#tradeoff\">Throughput against delay ({n})</a> · "),
        },
        count(FigureKind::Sweep),
        count(FigureKind::Cdf),
        count(FigureKind::Series)
    );
    if !preface_html.is_empty() {
        o.push_str(preface_html);
    }
    // A study's own figures lead: they are what its paper draws.
    figure_section(
        &mut o,
        figs,
        FigureKind::Study,
        "study",
        "The study's figures",
    );
    // Then the figures the scenario file asks for ([[figure]]).
    figure_section(
        &mut o,
        figs,
        FigureKind::Declared,
        "declared",
        "The scenario's figures",
    );
    scenario_section(&mut o, d);
    warnings_section(&mut o, d);
    let shown = table_section(&mut o, d);
    crate::html_paired::section(&mut o, d, &shown);
    for (kind, anchor, heading, empty) in [
        (
            FigureKind::Tradeoff,
            "tradeoff",
            "Throughput against delay",
            "",
        ),
        (
            FigureKind::Sweep,
            "sweep",
            "Sweep figures",
            "No sweep axis takes two values: nothing to plot against.",
        ),
        (
            FigureKind::Cdf,
            "cdf",
            "Completion-time CDFs",
            "No flow recorded a completion time (bulk transfers run until the end).",
        ),
        (
            FigureKind::Series,
            "series",
            "Time series of representative runs",
            "No time series recorded (`quiclab sim` writes them unless --no-series; reproduce does not).",
        ),
    ] {
        let mine: Vec<&Figure> = figs.iter().filter(|f| f.kind == kind).collect();
        // Drawn only when asked for, so its absence says nothing about the data.
        if kind == FigureKind::Tradeoff && mine.is_empty() {
            continue;
        }
        let _ = writeln!(o, "<h2 id=\"{anchor}\">{heading}</h2>");
        if mine.is_empty() {
            let _ = writeln!(o, "<p>{}</p>", escape(empty));
        }
        if kind == FigureKind::Series && !mine.is_empty() {
            let _ = writeln!(
                o,
                "<p>A representative run is the one whose first flow's main metric (completion \
                 time, else goodput) is the median of its point's runs.</p>"
            );
        }
        for f in mine {
            figure_html(&mut o, f);
        }
    }
    let _ = writeln!(
        o,
        "<p style=\"font-size:.8em;color:#777\">Written by <code>quiclab report</code> from \
         results.jsonl, sweep.json and series/ of this directory. Every figure is also available \
         as SVG through <code>quiclab plot</code>.</p>\n</body></html>"
    );
    o
}

/// The figures of `kind` under a heading, nothing when there are none.
fn figure_section(o: &mut String, figs: &[Figure], kind: FigureKind, anchor: &str, heading: &str) {
    let mine: Vec<&Figure> = figs.iter().filter(|f| f.kind == kind).collect();
    if mine.is_empty() {
        return;
    }
    let _ = writeln!(o, "<h2 id=\"{anchor}\">{heading}</h2>");
    for f in mine {
        figure_html(o, f);
    }
}

/// One figure, inline, with its caption.
fn figure_html(o: &mut String, f: &Figure) {
    let _ = writeln!(
        o,
        "<figure id=\"fig-{id}\" class=\"figure\" data-figure=\"{id}\">\n{svg}\n<figcaption>{cap}</figcaption></figure>",
        id = escape(&f.id),
        svg = inline_svg(&f.svg),
        cap = escape(&f.caption)
    );
}

fn scenario_section(o: &mut String, d: &ResultsDir) {
    let _ = writeln!(
        o,
        "<h2 id=\"scenario\">Scenario</h2>\n<table class=\"meta\">"
    );
    let row = |o: &mut String, k: &str, v: String| {
        let _ = writeln!(o, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(&v));
    };
    row(o, "scenario", d.scenario.clone());
    row(o, "results directory", d.dir.display().to_string());
    if let Some(s) = d.base_seed {
        row(o, "base seed", s.to_string());
    }
    row(
        o,
        "sweep",
        format!(
            "{} point(s) × {} repetition(s); {} run(s) recorded",
            d.points.len(),
            d.reps(),
            d.runs.len()
        ),
    );
    for a in d.axis_names() {
        let mut vals: Vec<String> = Vec::new();
        for p in &d.points {
            if let Some((_, v)) = p.axes.iter().find(|(k, _)| *k == a) {
                if !vals.contains(v) {
                    vals.push(v.clone());
                }
            }
        }
        row(o, &format!("axis {a}"), vals.join(", "));
    }
    if let Some(p) = d.points.first() {
        if let Some(path) = &p.path {
            let varies = d.points.iter().any(|q| q.path.as_ref() != Some(path));
            row(
                o,
                if varies {
                    "bottleneck (first point; the sweep changes it)"
                } else {
                    "bottleneck"
                },
                path.clone(),
            );
        }
        if let Some(dur) = p.duration_s {
            row(o, "run duration", format!("{dur} s"));
        }
        if p.measure_from_s.is_some_and(|f| f > 0.0) || p.measure_until_s.is_some() {
            row(
                o,
                "measurement window",
                format!(
                    "{} s – {}",
                    p.measure_from_s.unwrap_or(0.0),
                    p.measure_until_s
                        .map_or("end".to_string(), |u| format!("{u} s"))
                ),
            );
        }
        for (i, f) in p.flows.iter().enumerate() {
            row(
                o,
                &format!("flow {i}"),
                format!(
                    "{} · {} · {}",
                    f.name,
                    stacks_of_flow(d, i),
                    human_workload(&f.workload)
                ),
            );
        }
    }
    let _ = writeln!(o, "</table>");
}

/// A stack as results record it (`Quic`, `Tcp`, `QuicModel`) in words.
fn human_stack(stack: &str) -> &str {
    match stack {
        "Quic" => "QUIC (quinn)",
        "Tcp" => "TCP",
        "QuicModel" => "QUIC research model",
        other => other,
    }
}

/// A workload as results record it (`Download`, `Bulk`) in words.
fn human_workload(workload: &str) -> String {
    match workload {
        "Bulk" => "bulk transfer".into(),
        other => other.to_lowercase(),
    }
}

/// Flow `i`'s stack, or where protocol variants give it several, each with the `variant`
/// values (else point indices) that use it: `QUIC (quinn) (quic-1rtt, quic-0rtt); TCP
/// (tcp-tls1.3)`.
fn stacks_of_flow(d: &ResultsDir, i: usize) -> String {
    let mut stacks: Vec<(String, Vec<String>)> = Vec::new();
    for p in &d.points {
        let Some(f) = p.flows.get(i) else { continue };
        let who = p
            .axes
            .iter()
            .find(|(k, _)| k == "variant")
            .map_or_else(|| format!("point {}", p.index), |(_, v)| v.clone());
        match stacks.iter_mut().find(|(s, _)| s == human_stack(&f.stack)) {
            Some((_, w)) => {
                if !w.contains(&who) {
                    w.push(who);
                }
            }
            None => stacks.push((human_stack(&f.stack).to_string(), vec![who])),
        }
    }
    match stacks.as_slice() {
        [(one, _)] => one.clone(),
        many => many
            .iter()
            .map(|(s, w)| format!("{s} ({})", w.join(", ")))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Flow indices of point `p` expected to complete: a download workload, or a flow that
/// completed in some run of the point.
fn completing_flows(d: &ResultsDir, p: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let runs = d.runs_of(p);
    let n_flows = runs
        .iter()
        .filter_map(|r| r.json.get("flows").and_then(Value::as_array).map(Vec::len))
        .max()
        .unwrap_or(0);
    for i in 0..n_flows {
        let download = d
            .points
            .get(p)
            .and_then(|pt| pt.flows.get(i))
            .is_some_and(|f| f.workload.eq_ignore_ascii_case("download"));
        let some = runs
            .iter()
            .any(|r| r.metrics.contains_key(&format!("flows.{i}.completion_s")));
        if download || some {
            out.push(i);
        }
    }
    out
}

fn warnings_section(o: &mut String, d: &ResultsDir) {
    let reps = d.reps() as usize;
    let mut items: Vec<String> = Vec::new();
    for p in &d.points {
        // The point's own flow names (another experiment may name its flows differently).
        let names = ResultsDir::flow_names_of([p]);
        let runs = d.runs_of(p.index);
        let at = if p.axes.is_empty() {
            format!("point {}", p.index)
        } else {
            format!("point {} ({})", p.index, key_label(&p.axes))
        };
        if runs.len() < reps {
            items.push(format!(
                "{at}: {} of {reps} runs recorded (the others failed or were not run)",
                runs.len()
            ));
        }
        for i in completing_flows(d, p.index) {
            let key = format!("flows.{i}.completion_s");
            let incomplete = runs
                .iter()
                .filter(|r| !r.metrics.contains_key(&key))
                .count();
            if incomplete > 0 {
                let name = names
                    .get(i)
                    .filter(|n| !n.is_empty())
                    .cloned()
                    .unwrap_or_else(|| i.to_string());
                items.push(format!(
                    "{at}: flow {name} did not complete in {incomplete} of {} runs within the run's duration; its means are over the completed ones",
                    runs.len()
                ));
            }
        }
        // The same error in several runs of a point is one line, with its runs.
        let mut errors: Vec<(String, Vec<&str>)> = Vec::new();
        for r in &runs {
            if let Some(flows) = r.json.get("flows").and_then(Value::as_array) {
                for (i, f) in flows.iter().enumerate() {
                    if let Some(e) = f.get("error").and_then(Value::as_str) {
                        let name = names
                            .get(i)
                            .filter(|n| !n.is_empty())
                            .cloned()
                            .unwrap_or_else(|| i.to_string());
                        let text = format!("flow {name}: {e}");
                        match errors.iter_mut().find(|(t, _)| *t == text) {
                            Some((_, ids)) => ids.push(&r.id),
                            None => errors.push((text, vec![&r.id])),
                        }
                    }
                }
            }
        }
        for (text, ids) in errors {
            items.push(format!(
                "{at}: {text} (in {} of {} runs: {})",
                ids.len(),
                runs.len(),
                ids.join(", ")
            ));
        }
        for r in &runs {
            if let Some(ws) = r.json.get("warnings").and_then(Value::as_array) {
                for w in ws.iter().filter_map(Value::as_str) {
                    items.push(format!("run {}: {w}", r.id));
                }
            }
        }
    }
    let _ = writeln!(o, "<h2 id=\"warnings\">Warnings</h2>");
    if items.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"ok\">Every run was recorded and every flow that should complete did.</p>"
        );
        return;
    }
    let _ = writeln!(o, "<div class=\"warn\"><ul>");
    const SHOWN: usize = 50;
    for it in items.iter().take(SHOWN) {
        let _ = writeln!(o, "<li>{}</li>", escape(it));
    }
    if items.len() > SHOWN {
        let _ = writeln!(o, "<li>… and {} more</li>", items.len() - SHOWN);
    }
    let _ = writeln!(o, "</ul></div>");
}

/// An axis name and its value.
type Axis = (String, String);

/// Writes the results tables; returns every metric they show (in first-shown order).
fn table_section(o: &mut String, d: &ResultsDir) -> Vec<String> {
    let mut shown: Vec<String> = Vec::new();
    let names = d.flow_names();
    let available = crate::available_metrics(d);
    let _ = writeln!(
        o,
        "<h2 id=\"results\">Results per sweep point</h2>\n<p>mean ± 95% Student-t CI half-width; n/N = runs \
         that measured the value / runs recorded at the point. Cells where n &lt; N are \
         highlighted: those runs did not complete (or did not measure it). Every metric is in \
         <code>summary.csv</code>.</p>"
    );
    // Points with the same axes share a table (a study's experiments get one each), with a
    // column per axis that varies among them and per metric measured among them.
    let mut groups: Vec<(std::collections::BTreeSet<&str>, Vec<usize>)> = Vec::new();
    for p in &d.points {
        let set = crate::sweep::axis_set(p);
        match groups.iter_mut().find(|(s, _)| *s == set) {
            Some((_, v)) => v.push(p.index),
            None => groups.push((set, vec![p.index])),
        }
    }
    let several = groups.len() > 1;
    for (_, members) in &groups {
        let pts: Vec<&crate::data::PointData> =
            members.iter().filter_map(|&i| d.points.get(i)).collect();
        let first = pts[0];
        let (constant, varying): (Vec<&Axis>, Vec<&Axis>) = first
            .axes
            .iter()
            .partition(|kv| pts.iter().all(|p| p.axes.contains(kv)));
        let axes: Vec<&str> = varying.iter().map(|(k, _)| k.as_str()).collect();
        if several && !constant.is_empty() {
            let ctx: Vec<(String, String)> = constant.into_iter().cloned().collect();
            let _ = writeln!(o, "<h3>{}</h3>", escape(&key_label(&ctx)));
        }
        let group_runs: Vec<&crate::data::RunData> =
            members.iter().flat_map(|&p| d.runs_of(p)).collect();
        let mut metrics: Vec<String> = Vec::new();
        for i in 0..names.len().max(1) {
            for m in TABLE_METRICS {
                if m.starts_with("window_") && !crate::has_window(d) {
                    continue;
                }
                let path = format!("flows.{i}.{m}");
                if group_runs.iter().any(|r| r.metrics.contains_key(&path)) {
                    metrics.push(path);
                }
            }
            // A flow of several connections (0-RTT: the second resumes the first) gets each
            // connection's times: the flow's completion covers them all, and the comparison
            // that matters is often the second connection's.
            let second = format!("flows.{i}.connections.1.completion_s");
            if group_runs.iter().any(|r| r.metrics.contains_key(&second)) {
                for k in 0.. {
                    let mut any = false;
                    for m in CONNECTION_METRICS {
                        let path = format!("flows.{i}.connections.{k}.{m}");
                        if group_runs.iter().any(|r| r.metrics.contains_key(&path)) {
                            metrics.push(path);
                            any = true;
                        }
                    }
                    if !any {
                        break;
                    }
                }
            }
        }
        for m in &available {
            let lower = m.to_ascii_lowercase();
            if metric::BY_NAME.iter().any(|w| lower.contains(w))
                && !metrics.contains(m)
                && group_runs.iter().any(|r| r.metrics.contains_key(m))
            {
                metrics.push(m.clone());
            }
        }
        let scales: Vec<metric::Scale> = metrics
            .iter()
            .map(|m| {
                let max = group_runs
                    .iter()
                    .filter_map(|r| r.metrics.get(m))
                    .fold(0.0_f64, |a, v| a.max(v.abs()));
                metric::scale(m, max)
            })
            .collect();
        let _ = write!(
            o,
            "<div class=\"scroll\"><table class=\"results\"><tr><th>point</th>"
        );
        for a in &axes {
            let _ = write!(o, "<th>{}</th>", escape(a));
        }
        for (m, sc) in metrics.iter().zip(&scales) {
            let _ = write!(
                o,
                "<th>{}</th>",
                escape(&metric::axis_label(&metric::label(m, &names), sc))
            );
        }
        let _ = writeln!(o, "</tr>");
        for p in &pts {
            let runs = d.runs_of(p.index);
            let _ = write!(o, "<tr><td class=\"num\">{}</td>", p.index);
            for a in &axes {
                let v = p
                    .axes
                    .iter()
                    .find(|(k, _)| k == a)
                    .map_or("–", |(_, v)| v.as_str());
                let _ = write!(o, "<td>{}</td>", escape(v));
            }
            for (m, sc) in metrics.iter().zip(&scales) {
                let values: Vec<f64> = runs.iter().filter_map(|r| r.value(m)).collect();
                let big_n = runs.len();
                let class = if values.len() < big_n {
                    "num incomplete"
                } else {
                    "num"
                };
                let text = match analysis::summarize(&values) {
                    Ok(s) => format!("{} ({}/{big_n})", mean_cell(&s, sc.factor), values.len()),
                    Err(_) => format!("– (0/{big_n})"),
                };
                let _ = write!(o, "<td class=\"{class}\">{}</td>", escape(&text));
            }
            let _ = writeln!(o, "</tr>");
        }
        let _ = writeln!(o, "</table></div>");
        for m in metrics {
            if !shown.contains(&m) {
                shown.push(m);
            }
        }
    }
    shown
}

/// A results-table cell: the mean ± the half-width of its 95% interval, scaled by `factor`;
/// `± –` for a single run, which has no spread to estimate (a zero-width interval would read as
/// a perfectly repeatable measurement).
fn mean_cell(s: &analysis::Summary, factor: f64) -> String {
    match s.ci95() {
        None => format!("{} ± –", crate::chart::tick(s.mean * factor)),
        Some(_) => crate::chart::mean_ci(s.mean * factor, s.ci95_half_width() * factor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{FlowInfo, PointData};

    #[test]
    fn a_single_run_has_no_interval_and_several_have_one() {
        let one = analysis::summarize(&[5.0]).expect("one value");
        assert_eq!(mean_cell(&one, 1.0), "5 ± –");
        let three = analysis::summarize(&[1.0, 2.0, 3.0]).expect("three values");
        assert_eq!(mean_cell(&three, 1e3), "2000 ± 2484");
    }
    fn point(index: usize, variant: Option<&str>, stack: &str) -> PointData {
        PointData {
            index,
            axes: variant
                .map(|v| vec![("variant".to_string(), v.to_string())])
                .unwrap_or_default(),
            flows: vec![FlowInfo {
                name: "page".into(),
                stack: stack.into(),
                workload: "Download".into(),
            }],
            ..PointData::default()
        }
    }

    fn dir(points: Vec<PointData>) -> ResultsDir {
        ResultsDir {
            dir: "r".into(),
            scenario: "s".into(),
            base_seed: None,
            points,
            runs: Vec::new(),
            series: Default::default(),
        }
    }

    #[test]
    fn a_flows_stack_is_named_per_variant_when_variants_change_it() {
        let d = dir(vec![
            point(0, Some("quic-1rtt"), "Quic"),
            point(1, Some("quic-0rtt"), "Quic"),
            point(2, Some("tcp-tls1.3"), "Tcp"),
        ]);
        assert_eq!(
            stacks_of_flow(&d, 0),
            "QUIC (quinn) (quic-1rtt, quic-0rtt); TCP (tcp-tls1.3)"
        );
        let d = dir(vec![point(0, None, "Quic"), point(1, None, "Quic")]);
        assert_eq!(stacks_of_flow(&d, 0), "QUIC (quinn)");
        let d = dir(vec![point(0, None, "Quic"), point(1, None, "Tcp")]);
        assert_eq!(
            stacks_of_flow(&d, 0),
            "QUIC (quinn) (point 0); TCP (point 1)"
        );
    }

    fn run(point: usize, rep: u32, completion_s: f64) -> crate::data::RunData {
        crate::data::RunData {
            id: format!("p{point}-r{rep}"),
            point,
            rep,
            json: serde_json::Value::Null,
            metrics: [("flows.0.completion_s".to_string(), completion_s)].into(),
        }
    }

    #[test]
    fn only_downloads_that_did_not_complete_are_warned_about() {
        // Flow 0 is a bulk transfer (it never completes, by design); flow 1 a download that
        // completed in one of two runs.
        let mut p = point(0, None, "Tcp");
        p.flows = vec![
            FlowInfo {
                name: "bulk".into(),
                stack: "Tcp".into(),
                workload: "Bulk".into(),
            },
            FlowInfo {
                name: "page".into(),
                stack: "Quic".into(),
                workload: "Download".into(),
            },
        ];
        let mut d = dir(vec![p]);
        for rep in 0..2 {
            let json = serde_json::json!({"flows": [{"name": "bulk"}, {"name": "page"}]});
            let mut metrics = std::collections::BTreeMap::new();
            metrics.insert("flows.0.goodput_bps".to_string(), 1e6);
            if rep == 0 {
                metrics.insert("flows.1.completion_s".to_string(), 2.0);
            }
            d.runs.push(crate::data::RunData {
                id: format!("p0-r{rep}"),
                point: 0,
                rep,
                json,
                metrics: metrics.into_iter().collect(),
            });
        }
        let mut o = String::new();
        warnings_section(&mut o, &d);
        assert_eq!(o.matches("did not complete").count(), 1, "{o}");
        assert!(
            o.contains("flow page did not complete in 1 of 2 runs"),
            "{o}"
        );
    }

    #[test]
    fn variants_get_a_paired_table_and_a_single_variant_none() {
        let mut d = dir(vec![
            point(0, Some("quic-1rtt"), "Quic"),
            point(1, Some("tcp-tls1.3"), "Tcp"),
        ]);
        // Differences 0.5, 0.7, 0.3 s: mean 0.5 s, paired t p = 0.0494 (scipy ttest_rel).
        for (rep, (a, b)) in [(1.0, 1.5), (2.0, 2.7), (1.5, 1.8)].into_iter().enumerate() {
            d.runs.push(run(0, rep as u32, a));
            d.runs.push(run(1, rep as u32, b));
        }
        let html = render(&d, &[]);
        let section = &html[html.find("id=\"paired\"").expect("a paired section")..];
        assert!(section.contains("tcp-tls1.3 − quic-1rtt"), "{section}");
        assert!(section.contains("500.0 ms ["), "{section}");
        assert!(
            section.contains("<td class=\"num\">0.049</td>"),
            "{section}"
        );
        assert!(html.contains("href=\"#paired\""));
        let mut one = dir(vec![point(0, Some("quic-1rtt"), "Quic")]);
        one.runs.push(run(0, 0, 1.0));
        assert!(!render(&one, &[]).contains("id=\"paired\""));
    }

    #[test]
    fn a_flow_of_two_connections_shows_each_connection_and_pairs_the_second() {
        let mut d = dir(vec![
            point(0, Some("quic-1rtt"), "Quic"),
            point(1, Some("quic-0rtt"), "Quic"),
        ]);
        for (rep, (a, b)) in [(0.30, 0.25), (0.32, 0.26), (0.31, 0.24)]
            .into_iter()
            .enumerate()
        {
            for (p, second) in [(0, a), (1, b)] {
                let mut r = run(p, rep as u32, 0.6);
                r.metrics
                    .insert("flows.0.connections.0.completion_s".into(), 0.3);
                r.metrics
                    .insert("flows.0.connections.1.completion_s".into(), second);
                d.runs.push(r);
            }
        }
        let html = render(&d, &[]);
        assert!(
            html.contains("completion (flow page, connection 2)"),
            "{html}"
        );
        let paired = &html[html.find("id=\"paired\"").expect("paired")..];
        // Connection 2: 0.25 − 0.30, 0.26 − 0.32, 0.24 − 0.31 → mean −60 ms.
        assert!(paired.contains("-60.00 ms ["), "{paired}");
    }
}
