//! The figures a scenario asks for (`[[figure]]`, recorded with each point in `sweep.json`):
//! a metric against a sweep axis, a metric's distribution per point, or the time series of
//! each point's representative run, over the points and with the lines the figure names.
//!
//! In a study (`quiclab reproduce`) every experiment's scenario brings its own figures; they
//! are drawn over that experiment's points only.

use std::collections::{BTreeMap, BTreeSet};

use analysis::paired::VARIANT_AXIS;
use serde::Deserialize;

use crate::chart::{self, Cdf, CdfChart, Panel, PanelChart};
use crate::data::{PointData, ResultsDir};
use crate::error::FigureError;
use crate::sweep::{
    axis_value, key_label, lines_are, lines_over, measure_figure, n_of_n, series_key, AxisScale,
    MeasureSpec, EXPERIMENT_AXIS, MEAN_CI_BARS,
};
use crate::{metric, series, Figure, FigureKind, FigureSize};

/// A `[[figure]]` as `sweep.json` records it (the scenario crate's `FigureSpec`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct DeclaredSpec {
    /// File stem.
    pub name: String,
    /// `line`, `cdf` or `series`.
    pub kind: String,
    /// Metrics (line, cdf) or time-series columns (series).
    pub y: Vec<String>,
    /// The sweep axis on x (line).
    #[serde(default)]
    pub x: Option<String>,
    /// Axes whose values make the lines; empty: every other axis that varies.
    #[serde(default)]
    pub series: Vec<String>,
    /// Only points whose axis takes one of these values.
    #[serde(default)]
    pub filter: Vec<(String, Vec<String>)>,
    /// `auto`, `linear` or `log`.
    #[serde(default)]
    pub x_scale: Option<String>,
    /// See `x_scale`.
    #[serde(default)]
    pub y_scale: Option<String>,
    /// Title.
    #[serde(default)]
    pub title: Option<String>,
    /// Series: the flow drawn.
    #[serde(default)]
    pub flow: Option<String>,
    /// Series: end of the time axis.
    #[serde(default)]
    pub until: Option<Until>,
}

/// A duration as serde writes `std::time::Duration`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Until {
    secs: u64,
    nanos: u32,
}

impl Until {
    fn seconds(self) -> f64 {
        self.secs as f64 + f64::from(self.nanos) / 1e9
    }
}

fn scale(name: Option<&str>, default: AxisScale) -> AxisScale {
    match name {
        Some("linear") => AxisScale::Linear,
        Some("log") => AxisScale::Log,
        Some("auto") => AxisScale::Auto,
        _ => default,
    }
}

/// A declared figure with the experiment whose points it covers (a study's), if any.
#[derive(Debug, Clone, PartialEq)]
struct Declared<'a> {
    spec: &'a DeclaredSpec,
    experiment: Option<String>,
}

/// Every distinct declared figure of `d`, in the order the points bring them.
fn declared(d: &ResultsDir) -> Vec<Declared<'_>> {
    let mut out: Vec<Declared<'_>> = Vec::new();
    for p in &d.points {
        let experiment = axis_value(p, EXPERIMENT_AXIS);
        for spec in &p.figures {
            let dec = Declared {
                spec,
                experiment: experiment.clone(),
            };
            if !out.contains(&dec) {
                out.push(dec);
            }
        }
    }
    out
}

/// Whether any point of `d` declares a figure.
pub fn any(d: &ResultsDir) -> bool {
    d.points.iter().any(|p| !p.figures.is_empty())
}

/// The declared figures of `d`, drawn at `size`.
pub fn figures(d: &ResultsDir, size: FigureSize) -> Result<Vec<Figure>, FigureError> {
    let mut out = Vec::new();
    for dec in declared(d) {
        let points: Vec<&PointData> = d
            .points
            .iter()
            .filter(|p| {
                dec.experiment.is_none()
                    || axis_value(p, EXPERIMENT_AXIS).as_ref() == dec.experiment.as_ref()
            })
            .filter(|p| {
                dec.spec
                    .filter
                    .iter()
                    .all(|(k, vs)| axis_value(p, k).is_some_and(|v| vs.contains(&v)))
            })
            .collect();
        let id = match &dec.experiment {
            Some(e) => format!("fig-{}-{}", metric::slug(e), dec.spec.name),
            None => format!("fig-{}", dec.spec.name),
        };
        let drawn = match dec.spec.kind.as_str() {
            "line" => line(d, dec.spec, &points, &id, size)?,
            "cdf" => cdf(d, dec.spec, &points, &id, size)?,
            _ => series_figure(d, dec.spec, &points, &id, size)?
                .into_iter()
                .collect(),
        };
        out.extend(drawn.into_iter().map(|mut f| {
            f.kind = FigureKind::Declared;
            f
        }));
    }
    Ok(out)
}

/// The metrics `spec.y` names, expanded; an unknown one is an error listing what exists.
fn metrics(d: &ResultsDir, spec: &DeclaredSpec) -> Result<Vec<String>, FigureError> {
    let available = crate::available_metrics(d);
    let (got, unmatched) = metric::expand(&spec.y, &available);
    match unmatched.first() {
        Some(u) => Err(FigureError::Unknown {
            what: "figure.y",
            given: format!("{u} in figure {}", spec.name),
            available: crate::listing(&available),
        }),
        None => Ok(got),
    }
}

/// The axes whose values make the lines: the declared ones, else every axis varying over
/// `points` other than `except`.
fn series_axes(
    d: &ResultsDir,
    spec: &DeclaredSpec,
    points: &[&PointData],
    except: &[&str],
) -> Vec<String> {
    if !spec.series.is_empty() {
        return spec.series.clone();
    }
    d.axis_names()
        .into_iter()
        .filter(|a| !except.contains(&a.as_str()))
        .filter(|a| {
            let vals: BTreeSet<Option<String>> = points.iter().map(|p| axis_value(p, a)).collect();
            vals.len() > 1
        })
        .collect()
}

/// Id of the `i`-th of `n` figures of one declaration.
fn nth_id(id: &str, metric_path: &str, n: usize) -> String {
    if n == 1 {
        id.to_string()
    } else {
        format!("{id}-{}", metric::slug(metric_path))
    }
}

fn line(
    d: &ResultsDir,
    spec: &DeclaredSpec,
    points: &[&PointData],
    id: &str,
    size: FigureSize,
) -> Result<Vec<Figure>, FigureError> {
    let Some(axis) = spec.x.as_deref() else {
        return Ok(Vec::new());
    };
    let ms = metrics(d, spec)?;
    let lines_by = series_axes(d, spec, points, &[axis, EXPERIMENT_AXIS]);
    let mut out = Vec::new();
    for m in &ms {
        let Some((x_values, measured)) = lines_over(d, points, m, axis, &lines_by) else {
            continue;
        };
        let label = metric::label(m, &ResultsDir::flow_names_of(points.iter().copied()));
        let title = spec
            .title
            .clone()
            .unwrap_or_else(|| format!("{label} vs {axis}"));
        let series_are = lines_are(&lines_by);
        let fig = measure_figure(&MeasureSpec {
            id: nth_id(id, m, ms.len()),
            title,
            metric: m,
            label,
            axis,
            x_values: &x_values,
            series_are: &series_are,
            series: &measured,
            size,
            bars: MEAN_CI_BARS,
            x_scale: scale(spec.x_scale.as_deref(), AxisScale::Auto),
            y_scale: scale(spec.y_scale.as_deref(), AxisScale::Linear),
        })?;
        out.extend(fig);
    }
    Ok(out)
}

fn cdf(
    d: &ResultsDir,
    spec: &DeclaredSpec,
    points: &[&PointData],
    id: &str,
    size: FigureSize,
) -> Result<Vec<Figure>, FigureError> {
    let ms = metrics(d, spec)?;
    let lines_by = series_axes(d, spec, points, &[EXPERIMENT_AXIS]);
    let mut out = Vec::new();
    for m in &ms {
        let mut curves: Vec<Cdf> = Vec::new();
        for p in points {
            let runs = d.runs_of(p.index);
            let values: Vec<f64> = runs.iter().filter_map(|r| r.value(m)).collect();
            let key = series_key(p, &lines_by);
            let label = key_label(&key);
            // Points that differ only in axes the figure does not separate pool their runs.
            match curves.iter_mut().find(|c| c.label == label) {
                Some(c) => {
                    c.values.extend(values);
                    c.runs += runs.len();
                }
                None => curves.push(Cdf {
                    label,
                    note: String::new(),
                    values,
                    runs: runs.len(),
                }),
            }
        }
        if curves.iter().all(|c| c.values.is_empty()) {
            continue;
        }
        for c in &mut curves {
            c.note = n_of_n(&[(c.values.len(), c.runs)]);
        }
        let all: Vec<f64> = curves
            .iter()
            .flat_map(|c| c.values.iter().copied())
            .collect();
        let max = all.iter().copied().fold(0.0, f64::max);
        let sc = metric::scale(m, max);
        for c in &mut curves {
            for v in &mut c.values {
                *v *= sc.factor;
            }
        }
        let label = metric::label(m, &ResultsDir::flow_names_of(points.iter().copied()));
        let title = spec
            .title
            .clone()
            .unwrap_or_else(|| format!("CDF of {label}"));
        let missing: usize = curves.iter().map(|c| c.runs - c.values.len()).sum();
        let foot = "empirical CDF over the n runs (of N recorded) that measured it";
        let print = size.is_print();
        if print {
            for c in &mut curves {
                c.label = crate::sweep::values_only(&c.label);
            }
        }
        let x_name = if print {
            metric::without_context(&label)
        } else {
            label.clone()
        };
        let svg = chart::cdf_chart(
            &CdfChart {
                title: if print { String::new() } else { title.clone() },
                x_label: metric::axis_label(&x_name, &sc),
                log_x: false,
                curves,
                footnote: if print {
                    String::new()
                } else {
                    foot.to_string()
                },
            },
            size.canvas(crate::cdf::SIZE),
        )?;
        out.push(Figure {
            id: nth_id(id, m, ms.len()),
            title,
            caption: format!(
                "{foot}; one curve per {}.",
                if lines_by.is_empty() {
                    "figure".to_string()
                } else {
                    lines_by.join(" × ")
                }
            ),
            svg,
            kind: FigureKind::Declared,
            missing_runs: missing,
        });
    }
    Ok(out)
}

fn series_figure(
    d: &ResultsDir,
    spec: &DeclaredSpec,
    points: &[&PointData],
    id: &str,
    size: FigureSize,
) -> Result<Option<Figure>, FigureError> {
    let lines_by = series_axes(d, spec, points, &[EXPERIMENT_AXIS]);
    let until = spec.until.map(Until::seconds);
    // One representative run per point, labelled by the figure's series axes. The variants of
    // a point share their seeds, so they all draw the repetition representative of the first
    // one: its lines then differ by the variant alone (the same loss draws, the same stretch
    // of a trace).
    let mut runs: Vec<(String, String)> = Vec::new();
    let mut rep_of_group: BTreeMap<Vec<(String, String)>, u32> = BTreeMap::new();
    for p in points {
        let group: Vec<(String, String)> = p
            .axes
            .iter()
            .filter(|(k, _)| k != VARIANT_AXIS)
            .cloned()
            .collect();
        let shared = rep_of_group.get(&group).and_then(|&rep| {
            d.runs_of(p.index)
                .into_iter()
                .find(|r| r.rep == rep && d.series.contains(&r.id))
        });
        let Some(r) = shared.or_else(|| series::representative(d, p.index)) else {
            continue;
        };
        rep_of_group.entry(group).or_insert(r.rep);
        let key = series_key(p, &lines_by);
        runs.push((key_label(&key), r.id.clone()));
    }
    if runs.is_empty() {
        return Ok(None);
    }
    let tables: Vec<(String, series::SeriesTable)> = runs
        .iter()
        .map(|(label, rid)| Ok((label.clone(), series::read(&d.series_path(rid))?)))
        .collect::<Result<_, FigureError>>()?;
    let mut panels = Vec::new();
    for col in &spec.y {
        let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for (label, table) in &tables {
            // A run shorter than one sample bin has no rows: nothing to draw, nothing wrong.
            if table.t.is_empty() {
                continue;
            }
            let Some(values) = table.columns.get(col) else {
                let have: Vec<String> = table.columns.keys().cloned().collect();
                return Err(FigureError::Unknown {
                    what: "figure.y",
                    given: format!("{col} in series figure {}", spec.name),
                    available: format!("time-series columns: {}", crate::listing(&have)),
                });
            };
            let flow = match &spec.flow {
                Some(f) => f.clone(),
                None => table.flow.first().cloned().unwrap_or_default(),
            };
            let pts: Vec<(f64, f64)> = table
                .t
                .iter()
                .zip(values)
                .zip(&table.flow)
                .filter(|((t, v), fl)| {
                    **fl == flow && v.is_finite() && until.is_none_or(|u| **t <= u)
                })
                // An sRTT of 0 is "no RTT sample yet", not a measured zero.
                .filter(|((_, v), _)| col != "srtt_ms" || **v > 0.0)
                .map(|((t, v), _)| (*t, *v))
                .collect();
            lines.push((label.clone(), pts));
        }
        let max = lines
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let sc = metric::scale(col, max);
        for (_, pts) in &mut lines {
            for p in pts.iter_mut() {
                p.1 *= sc.factor;
            }
        }
        panels.push(Panel {
            y_label: metric::axis_label(&column_name(col), &sc),
            lines,
        });
    }
    if panels
        .iter()
        .all(|p: &Panel| p.lines.iter().all(|(_, pts)| pts.is_empty()))
    {
        return Ok(None);
    }
    let title = spec.title.clone().unwrap_or_else(|| {
        format!(
            "{} over time",
            spec.y
                .iter()
                .map(|c| column_name(c))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    let n = panels.len();
    let svg = chart::panel_chart(
        &PanelChart {
            title: if size.is_print() {
                String::new()
            } else {
                title.clone()
            },
            x_label: "time [s]".into(),
            panels,
        },
        size.panels_canvas(series::WIDTH, series::PANEL_H, n),
    )?;
    let runs_text: Vec<String> = runs.iter().map(|(l, r)| format!("{r} ({l})")).collect();
    Ok(Some(Figure {
        id: id.to_string(),
        title,
        caption: format!(
            "Time series of each point's representative run (its first flow's completion time or \
             goodput is the median of the point's runs), one line per {}: {}.",
            if lines_by.is_empty() {
                "point".to_string()
            } else {
                lines_by.join(" × ")
            },
            runs_text.join(", ")
        ),
        svg,
        kind: FigureKind::Declared,
        missing_runs: 0,
    }))
}

/// A time-series column's name for an axis label (`cwnd_bytes` → `cwnd`, `srtt_ms` → `sRTT`).
fn column_name(col: &str) -> String {
    if let Some(name) = series::column_label(col) {
        return name.to_string();
    }
    let units = ["_bytes", "_ms", "_bps", "_packets", "_s"];
    let base = units
        .iter()
        .find_map(|u| col.strip_suffix(u))
        .unwrap_or(col);
    base.replace('_', " ")
}
