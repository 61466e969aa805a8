//! Pantheon's throughput-against-delay figure: each sweep point (a scheme, a buffer, a queue
//! discipline) one named point at its mean delay and mean throughput, inside the 95%
//! confidence ellipse of that mean ([`analysis::ellipse`]). Up and to the left is better.
//!
//! One figure per experiment of a study directory (points of different experiments answer
//! different questions), one colour per protocol variant; each point is named by its other
//! axes' values. The throughput is the sum of the measurement-window goodput of one flow and
//! its copies (`down`, `down.0` …), so a multi-flow load is drawn as the capacity it uses.

use analysis::ellipse::mean_ellipse95;
use analysis::paired::VARIANT_AXIS;

use crate::chart::{self, TradeoffChart, TradeoffPoint, TradeoffSeries};
use crate::data::{PointData, ResultsDir, RunData};
use crate::error::FigureError;
use crate::sweep::{n_of_n, EXPERIMENT_AXIS};
use crate::{Figure, FigureKind, FigureSize};

/// Figure size, px.
pub const SIZE: (u32, u32) = (960, 560);
/// Points on a drawn ellipse's boundary.
const BOUNDARY_POINTS: usize = 72;

/// What a throughput-against-delay figure draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TradeoffSpec {
    /// Run-level delay metric, in seconds (drawn in ms): `probes.0.rtt.p95_s`.
    pub delay: String,
    /// What that delay is, for the axis and title (`ping RTT p95`).
    pub delay_label: String,
    /// The flow whose window goodput (summed over its copies) is the throughput.
    pub flow: String,
}

impl TradeoffSpec {
    /// `METRIC:FLOW` as `quiclab plot --tradeoff` takes it (`probes.0.rtt.p95_s:down`); the
    /// metric path is its own label.
    pub fn parse(text: &str) -> Result<TradeoffSpec, String> {
        match text.rsplit_once(':') {
            Some((delay, flow)) if !delay.is_empty() && !flow.is_empty() => Ok(TradeoffSpec {
                delay: delay.to_string(),
                delay_label: delay.to_string(),
                flow: flow.to_string(),
            }),
            _ => Err(format!(
                "{text:?}: expected DELAY_METRIC:FLOW, e.g. probes.0.rtt.p95_s:down"
            )),
        }
    }
}

/// The run's (delay in ms, throughput in Mbit/s), if it measured both.
fn pair(spec: &TradeoffSpec, point: &PointData, run: &RunData) -> Option<(f64, f64)> {
    let delay = run.metrics.get(&spec.delay)?;
    let copy_prefix = format!("{}.", spec.flow);
    let mine: Vec<usize> = point
        .flows
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name == spec.flow || f.name.starts_with(&copy_prefix))
        .map(|(i, _)| i)
        .collect();
    if mine.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    for i in mine {
        sum += run.metrics.get(&format!("flows.{i}.window_goodput_bps"))?;
    }
    Some((delay * 1e3, sum / 1e6))
}

fn axis<'a>(p: &'a PointData, name: &str) -> Option<&'a str> {
    p.axes
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The figures of `spec` over `d`: one per experiment that has a point measuring both values.
/// A delay metric or flow name the directory does not have is an error naming what it has.
pub fn figures(
    d: &ResultsDir,
    spec: &TradeoffSpec,
    size: FigureSize,
) -> Result<Vec<Figure>, FigureError> {
    if !d.runs.iter().any(|r| r.metrics.contains_key(&spec.delay)) {
        return Err(FigureError::Unknown {
            what: "--tradeoff delay metric",
            given: spec.delay.clone(),
            available: crate::listing(
                crate::available_metrics(d)
                    .iter()
                    .filter(|m| m.ends_with("_s")),
            ),
        });
    }
    let names = d.flow_names();
    let copy_prefix = format!("{}.", spec.flow);
    if !names
        .iter()
        .any(|n| *n == spec.flow || n.starts_with(&copy_prefix))
    {
        return Err(FigureError::Unknown {
            what: "--tradeoff flow",
            given: spec.flow.clone(),
            available: crate::listing(names.iter()),
        });
    }
    let mut experiments: Vec<Option<&str>> = Vec::new();
    for p in &d.points {
        let e = axis(p, EXPERIMENT_AXIS);
        if !experiments.contains(&e) {
            experiments.push(e);
        }
    }
    let mut out = Vec::new();
    for experiment in experiments {
        if let Some(f) = figure(d, spec, experiment, size)? {
            out.push(f);
        }
    }
    Ok(out)
}

fn figure(
    d: &ResultsDir,
    spec: &TradeoffSpec,
    experiment: Option<&str>,
    size: FigureSize,
) -> Result<Option<Figure>, FigureError> {
    let mut series: Vec<TradeoffSeries> = Vec::new();
    let mut counts: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut missing_runs = 0;
    for p in d
        .points
        .iter()
        .filter(|p| axis(p, EXPERIMENT_AXIS) == experiment)
    {
        let runs = d.runs_of(p.index);
        let pairs: Vec<(f64, f64)> = runs.iter().filter_map(|r| pair(spec, p, r)).collect();
        missing_runs += runs.len() - pairs.len();
        if pairs.is_empty() {
            continue;
        }
        let label = axis(p, VARIANT_AXIS).unwrap_or("all runs").to_string();
        let name = p
            .axes
            .iter()
            .filter(|(k, _)| k != EXPERIMENT_AXIS && k != VARIANT_AXIS)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let n = pairs.len() as f64;
        let (x, y) = (
            pairs.iter().map(|p| p.0).sum::<f64>() / n,
            pairs.iter().map(|p| p.1).sum::<f64>() / n,
        );
        // Runs that agree exactly (a deterministic stack on a path without randomness) leave
        // the point alone: a region of zero size would only hide it.
        let region = mean_ellipse95(&pairs)
            .filter(|e| e.semi_axes.0 > 0.0)
            .map(|e| e.boundary(BOUNDARY_POINTS))
            .unwrap_or_default();
        let i = match series.iter().position(|s| s.label == label) {
            Some(i) => i,
            None => {
                series.push(TradeoffSeries {
                    label,
                    note: String::new(),
                    points: Vec::new(),
                });
                counts.push(Vec::new());
                series.len() - 1
            }
        };
        series[i].points.push(TradeoffPoint { name, x, y, region });
        counts[i].push((pairs.len(), runs.len()));
    }
    if series.is_empty() {
        return Ok(None);
    }
    for (s, c) in series.iter_mut().zip(&counts) {
        s.note = n_of_n(c);
    }
    let suffix = experiment.map(|e| format!(" ({e})")).unwrap_or_default();
    let title = format!(
        "Throughput of {} against {}{suffix}",
        spec.flow, spec.delay_label
    );
    let print = size.is_print();
    let chart = TradeoffChart {
        title: if print { String::new() } else { title.clone() },
        x_label: format!("{} (ms, log scale)", spec.delay_label),
        y_label: format!("{} goodput (Mbit/s)", spec.flow),
        series,
        footnote: if print {
            String::new()
        } else {
            "Dot: mean over runs; shaded: its 95% confidence ellipse (Hotelling T²). Better: up and to the left.".into()
        },
    };
    let svg = chart::tradeoff_chart(&chart, size.canvas(SIZE)).map_err(FigureError::Chart)?;
    let slug = experiment
        .map(|e| format!("-{}", crate::metric::slug(e)))
        .unwrap_or_default();
    Ok(Some(Figure {
        id: format!("tradeoff{slug}"),
        title,
        caption: format!(
            "Each point is one sweep point's mean {} (x) and the summed measurement-window goodput of the `{}` flows (y), with the 95% confidence ellipse of the mean; runs missing either value are left out (n/N in the legend).",
            spec.delay_label, spec.flow
        ),
        svg,
        kind: FigureKind::Tradeoff,
        missing_runs,
    }))
}
