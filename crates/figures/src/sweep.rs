//! Sweep figures: each metric against each sweep axis, one line per combination of the other
//! axes that vary alongside it (a `variant` axis is just one of them), 95% CI error bars, n/N.
//!
//! Points are grouped by their axes only, so a directory whose points have different axes (the
//! studies of `quiclab reproduce`: `experiment`, `variant`, then each experiment's own
//! parameter) gives one figure per (metric, parameter) over the points that have it.

use std::collections::BTreeSet;

use crate::chart::{self, CiPoint, Line, LineChart, XAxis};
use crate::data::{PointData, ResultsDir};
use crate::error::FigureError;
use crate::metric;
use crate::{Figure, FigureKind, FigureSize};

/// Figure size, px.
pub const SIZE: (u32, u32) = (960, 500);

/// The leading number of an axis value and the rest (`"0.5%"` → (0.5, `"%"`)); `None` when the
/// value does not start with a number.
pub fn numeric(value: &str) -> Option<(f64, String)> {
    let v = value.trim();
    let end = v
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '-' || *c == '+'))
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    let x: f64 = v[..end].parse().ok()?;
    Some((x, v[end..].trim().to_string()))
}

/// How the values of one axis are placed: numbers with one shared unit on a numeric axis,
/// anything else as categories in sweep order.
fn x_axis(values: &[String]) -> (XAxis, Vec<f64>, String) {
    let parsed: Vec<Option<(f64, String)>> = values.iter().map(|v| numeric(v)).collect();
    if values.len() >= 2 && parsed.iter().all(Option::is_some) {
        let units: BTreeSet<&str> = parsed.iter().flatten().map(|(_, u)| u.as_str()).collect();
        if units.len() == 1 {
            let unit = units.into_iter().next().unwrap_or_default().to_string();
            let xs = parsed.into_iter().flatten().map(|(x, _)| x).collect();
            return (XAxis::Numeric, xs, unit);
        }
    }
    if values.len() >= 2 {
        if let Some((xs, unit)) = with_units(values) {
            return (XAxis::Numeric, xs, unit);
        }
    }
    (
        XAxis::Categories(values.to_vec()),
        (0..values.len()).map(|i| i as f64).collect(),
        String::new(),
    )
}

/// Values in different units of one quantity (`"1kbit"`, `"10Mbit"`; `"500us"`, `"20ms"`,
/// `"1s"`; `"64kB"`, `"1MB"`) as numbers in one display unit chosen for the largest.
fn with_units(values: &[String]) -> Option<(Vec<f64>, String)> {
    let has_unit = |v: &String| numeric(v).is_some_and(|(_, u)| !u.is_empty());
    if !values.iter().all(has_unit) {
        return None;
    }
    let all = |f: &dyn Fn(&str) -> Option<f64>| -> Option<Vec<f64>> {
        values.iter().map(|v| f(v)).collect()
    };
    let (raw, base) =
        if let Some(xs) = all(&|v| units::parse_duration(v).ok().map(|d| d.as_secs_f64())) {
            (xs, "x_s")
        } else if let Some(xs) = all(&|v| units::parse_size(v).ok().map(|b| b as f64)) {
            // Sizes before rates: the rate parser also reads "64KB" (as bytes per second), the
            // size parser refuses bits and "/s", so a window sweep stays in bytes.
            (xs, "x_bytes")
        } else if let Some(xs) = all(&|v| match units::parse_rate(v) {
            Ok(units::Rate::Bps(b)) => Some(b as f64),
            _ => None,
        }) {
            (xs, "x_bps")
        } else {
            return None;
        };
    let max = raw.iter().copied().fold(0.0, f64::max);
    let sc = metric::scale(base, max);
    Some((raw.iter().map(|x| x * sc.factor).collect(), sc.unit))
}

/// Whether values are best read on a log axis: all positive, spanning at least two decades,
/// and spread over them (1, 2, 5, 10, 100 Mbit/s) rather than one stand-in near zero far from
/// the rest (1 kbit/s written for "no background" beside 10–30 Mbit/s), which a log axis
/// would make the widest gap of the figure.
fn spread_over_decades(xs: &[f64]) -> bool {
    if xs.len() < 3 || xs.iter().any(|x| *x <= 0.0 || !x.is_finite()) {
        return false;
    }
    let mut logs: Vec<f64> = xs.iter().map(|x| x.log10()).collect();
    logs.sort_by(f64::total_cmp);
    let span = logs[logs.len() - 1] - logs[0];
    let widest = logs.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    span >= 2.0 && widest <= span / 2.0
}

/// A series label `a=x, b=y` as `x, y` (labels without `=` stay as they are).
pub fn values_only(label: &str) -> String {
    label
        .split(", ")
        .map(|part| part.split_once('=').map_or(part, |(_, v)| v))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `name=value, …` of a series key.
pub fn key_label(key: &[(String, String)]) -> String {
    if key.is_empty() {
        return "all runs".into();
    }
    key.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `n/N = a/b`, or ranges when they differ between points.
pub fn n_of_n(ns: &[(usize, usize)]) -> String {
    let range = |v: Vec<usize>| {
        let (lo, hi) = (
            v.iter().copied().min().unwrap_or(0),
            v.iter().copied().max().unwrap_or(0),
        );
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    };
    format!(
        "n/N = {}/{}",
        range(ns.iter().map(|p| p.0).collect()),
        range(ns.iter().map(|p| p.1).collect())
    )
}

/// The sweep axes with more than one value.
pub fn varying_axes(d: &ResultsDir) -> Vec<String> {
    d.axis_names()
        .into_iter()
        .filter(|a| {
            let vals: BTreeSet<&str> = d
                .points
                .iter()
                .filter_map(|p| p.axes.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str()))
                .collect();
            vals.len() > 1
        })
        .collect()
}

/// The names of a point's axes, as a set.
pub fn axis_set(p: &crate::data::PointData) -> BTreeSet<&str> {
    p.axes.iter().map(|(k, _)| k.as_str()).collect()
}

/// The varying axes a figure can have on x: those whose points all have the same axes (a grid).
///
/// A directory that joins several sweeps with different axes (a study of `quiclab reproduce`:
/// `experiment` and `variant` on every point, each experiment's own parameter only on its
/// points) has figures against each experiment's parameter; `experiment` itself, whose points
/// have different parameters, would line up unrelated points and is left out.
pub fn plottable_axes(d: &ResultsDir) -> Vec<String> {
    varying_axes(d)
        .into_iter()
        .filter(|a| a != EXPERIMENT_AXIS)
        .filter(|a| {
            let sets: BTreeSet<BTreeSet<&str>> = d
                .points
                .iter()
                .filter(|p| p.axes.iter().any(|(k, _)| k == a))
                .map(axis_set)
                .collect();
            sets.len() == 1
        })
        .collect()
}

/// The axis `quiclab reproduce` gives each of a study's experiments. Experiments are separate
/// set-ups: they are never an x axis, and experiments that share an axis get a figure each
/// rather than one figure mixing their series.
pub const EXPERIMENT_AXIS: &str = "experiment";

/// One figure per (metric, axis) where the axis takes at least two values and the metric was
/// measured somewhere — per experiment when several experiments share the axis; metrics and
/// axes in the order given.
pub fn figures(
    d: &ResultsDir,
    metrics: &[String],
    axes: &[String],
    size: FigureSize,
) -> Result<Vec<Figure>, FigureError> {
    let mut out = Vec::new();
    for m in metrics {
        for a in axes {
            let facets = experiments_with(d, a);
            if facets.len() < 2 {
                out.extend(figure(d, m, a, None, size)?);
                continue;
            }
            for e in &facets {
                out.extend(figure(d, m, a, Some(e), size)?);
            }
        }
    }
    Ok(out)
}

/// The experiments (values of [`EXPERIMENT_AXIS`], in order of appearance) whose points have
/// `axis`.
fn experiments_with(d: &ResultsDir, axis: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &d.points {
        let has_axis = p.axes.iter().any(|(k, _)| k == axis);
        let exp = p.axes.iter().find(|(k, _)| k == EXPERIMENT_AXIS);
        if let (true, Some((_, e))) = (has_axis, exp) {
            if !out.contains(e) {
                out.push(e.clone());
            }
        }
    }
    out
}

/// One series of a sweep figure: its key and, per x value, the point indices.
struct SeriesCells {
    key: Vec<(String, String)>,
    cells: Vec<Vec<usize>>,
}

/// The value of `axis` at point `p`, if the point has that axis.
pub(crate) fn axis_value(p: &PointData, axis: &str) -> Option<String> {
    p.axes
        .iter()
        .find(|(n, _)| n == axis)
        .map(|(_, v)| v.clone())
}

/// The key of point `p`'s line when lines are made by `axes`: each axis with its value ("–"
/// where the point has no such axis).
pub(crate) fn series_key(p: &PointData, axes: &[String]) -> Vec<(String, String)> {
    axes.iter()
        .map(|a| (a.clone(), axis_value(p, a).unwrap_or_else(|| "–".into())))
        .collect()
}

/// What one line of a figure stands for, for its caption: the axes that make the lines.
pub(crate) fn lines_are(axes: &[String]) -> String {
    if axes.is_empty() {
        "sweep".to_string()
    } else {
        axes.join(" × ")
    }
}

/// The lines of `metric` against `axis` over `subset`, one per combination of the values of
/// `series_axes`: the x values in order of appearance and each line's estimate per x value.
/// `None` when the axis takes fewer than two values there.
pub(crate) fn lines_over(
    d: &ResultsDir,
    subset: &[&PointData],
    metric_path: &str,
    axis: &str,
    series_axes: &[String],
) -> Option<(Vec<String>, Vec<Measured>)> {
    let mut x_values: Vec<String> = Vec::new();
    for p in subset {
        if let Some(v) = axis_value(p, axis) {
            if !x_values.contains(&v) {
                x_values.push(v);
            }
        }
    }
    if x_values.len() < 2 {
        return None;
    }
    let mut series: Vec<SeriesCells> = Vec::new();
    for p in subset {
        let key = series_key(p, series_axes);
        let xi = axis_value(p, axis)
            .and_then(|v| x_values.iter().position(|x| *x == v))
            .unwrap_or(0);
        let s = match series.iter_mut().position(|s| s.key == key) {
            Some(i) => &mut series[i],
            None => {
                series.push(SeriesCells {
                    key,
                    cells: vec![Vec::new(); x_values.len()],
                });
                series.last_mut().expect("just pushed")
            }
        };
        s.cells[xi].push(p.index);
    }
    let measured = series
        .iter()
        .map(|s| Measured {
            label: key_label(&s.key),
            cells: s
                .cells
                .iter()
                .enumerate()
                .filter(|(_, cell)| !cell.is_empty())
                .map(|(xi, cell)| {
                    let runs: Vec<_> = cell.iter().flat_map(|&p| d.runs_of(p)).collect();
                    let values: Vec<f64> =
                        runs.iter().filter_map(|r| r.value(metric_path)).collect();
                    (
                        x_values[xi].clone(),
                        analysis::summarize(&values)
                            .ok()
                            .map(|sum| Estimate::of(&sum, metric_path)),
                        runs.len(),
                    )
                })
                .collect(),
        })
        .collect();
    Some((x_values, measured))
}

fn figure(
    d: &ResultsDir,
    metric_path: &str,
    axis: &str,
    experiment: Option<&str>,
    size: FigureSize,
) -> Result<Option<Figure>, FigureError> {
    let subset: Vec<&PointData> = d
        .points
        .iter()
        .filter(|p| axis_value(p, axis).is_some())
        .filter(|p| experiment.is_none_or(|e| axis_value(p, EXPERIMENT_AXIS).as_deref() == Some(e)))
        .collect();
    // The other axes that vary inside the subset define the series.
    let others: Vec<String> = d
        .axis_names()
        .into_iter()
        .filter(|a| a != axis)
        .filter(|a| {
            let vals: BTreeSet<Option<String>> = subset.iter().map(|p| axis_value(p, a)).collect();
            vals.len() > 1
        })
        .collect();
    let Some((x_values, measured)) = lines_over(d, &subset, metric_path, axis, &others) else {
        return Ok(None);
    };
    let label = metric::label(
        metric_path,
        &ResultsDir::flow_names_of(subset.iter().copied()),
    );
    let id = match experiment {
        Some(e) => format!(
            "sweep-{}-{}-vs-{}",
            metric::slug(e),
            metric::slug(metric_path),
            metric::slug(axis)
        ),
        None => format!(
            "sweep-{}-vs-{}",
            metric::slug(metric_path),
            metric::slug(axis)
        ),
    };
    let title = match experiment {
        Some(e) => format!("{label} vs {axis} ({e})"),
        None => format!("{label} vs {axis}"),
    };
    let series_are = lines_are(&others);
    measure_figure(&MeasureSpec {
        id,
        title,
        metric: metric_path,
        label,
        axis,
        x_values: &x_values,
        series_are: &series_are,
        series: &measured,
        size,
        bars: MEAN_CI_BARS,
        x_scale: AxisScale::Auto,
        y_scale: AxisScale::Linear,
    })
}

/// One line of a [`measure_figure`]: per x value (an axis value as written in the scenario),
/// the estimate from the runs that measured the metric (`None`: none did) and how many runs
/// were recorded there.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Legend label.
    pub label: String,
    /// (x value, estimate, runs recorded), in x order.
    pub cells: Vec<(String, Option<Estimate>, usize)>,
}

/// A drawn value: its mean, the error bar around it and how many runs (or pairs) gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Mean.
    pub mean: f64,
    /// Lower end of the error bar.
    pub low: f64,
    /// Upper end of the error bar.
    pub high: f64,
    /// Runs (or pairs) behind it.
    pub n: usize,
}

impl Estimate {
    /// The mean of `sum` with its 95% interval as [`ci_bar`] draws it for `metric`.
    pub fn of(sum: &analysis::Summary, metric: &str) -> Estimate {
        let (low, high) = ci_bar(sum, metric);
        Estimate {
            mean: sum.mean,
            low,
            high,
            n: sum.n,
        }
    }
}

/// What a [`measure_figure`] draws.
#[derive(Debug, Clone)]
pub struct MeasureSpec<'a> {
    /// File stem.
    pub id: String,
    /// Title.
    pub title: String,
    /// The metric's path or field name (its unit suffix picks the display unit).
    pub metric: &'a str,
    /// Human name of the metric, without unit.
    pub label: String,
    /// The x axis's name.
    pub axis: &'a str,
    /// Every x value, in axis order.
    pub x_values: &'a [String],
    /// What one line stands for, for the caption (`variant`, `protocol`).
    pub series_are: &'a str,
    /// The lines.
    pub series: &'a [Measured],
    /// The size drawn at.
    pub size: FigureSize,
    /// What a point and its bar are, for the footnote.
    pub bars: &'a str,
    /// Scale of the x axis.
    pub x_scale: AxisScale,
    /// Scale of the y axis.
    pub y_scale: AxisScale,
}

/// How an axis of a line figure is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AxisScale {
    /// Logarithmic for positive values spread over two decades or more, else linear.
    #[default]
    Auto,
    /// Linear.
    Linear,
    /// Logarithmic where every value is positive.
    Log,
}

impl AxisScale {
    /// Whether values `xs` are drawn on a log axis.
    fn is_log(self, xs: &[f64]) -> bool {
        match self {
            AxisScale::Auto => spread_over_decades(xs),
            AxisScale::Linear => false,
            AxisScale::Log => xs.iter().all(|x| *x > 0.0 && x.is_finite()),
        }
    }
}

/// The footnote of a figure of means over runs.
pub const MEAN_CI_BARS: &str =
    "mean ± 95% Student-t CI over the n runs (of N recorded) that measured it";

/// A metric against an axis, one line per series with 95% CI bars and n/N, from statistics
/// already computed: the sweep figures and a study's own figures (its measure per protocol)
/// share it. `None` when nothing was measured.
pub fn measure_figure(spec: &MeasureSpec<'_>) -> Result<Option<Figure>, FigureError> {
    let (kind, xs, unit) = x_axis(spec.x_values);
    let x_of = |v: &str| {
        spec.x_values
            .iter()
            .position(|x| x == v)
            .map_or(0.0, |i| xs[i])
    };
    if spec
        .series
        .iter()
        .all(|s| s.cells.iter().all(|(_, sum, _)| sum.is_none()))
    {
        return Ok(None);
    }
    // One display unit for the whole figure, chosen for the largest value drawn.
    let max_abs = spec
        .series
        .iter()
        .flat_map(|s| &s.cells)
        .filter_map(|(_, est, _)| est.as_ref())
        .map(|e| e.high.abs().max(e.low.abs()).max(e.mean.abs()))
        .fold(0.0, f64::max);
    let sc = metric::scale(spec.metric, max_abs);
    let mut missing = 0;
    let lines: Vec<Line> = spec
        .series
        .iter()
        .map(|s| {
            let counts: Vec<(usize, usize)> = s
                .cells
                .iter()
                .map(|(_, sum, runs)| (sum.as_ref().map_or(0, |x| x.n), *runs))
                .collect();
            missing += counts.iter().map(|(n, big_n)| big_n - n).sum::<usize>();
            Line {
                label: s.label.clone(),
                note: n_of_n(&counts),
                points: s
                    .cells
                    .iter()
                    .filter_map(|(x, est, _)| est.as_ref().map(|e| (x, e)))
                    .map(|(x, e)| CiPoint {
                        x: x_of(x),
                        mean: e.mean * sc.factor,
                        low: e.low * sc.factor,
                        high: e.high * sc.factor,
                    })
                    .collect(),
            }
        })
        .collect();
    let axis = spec.axis;
    let print = spec.size.is_print();
    // In print the legend names series by their values alone (`quic-1rtt`, not
    // `variant=quic-1rtt`) and the y axis the metric without where it was measured: the
    // caption says both, and a one-column figure has no room for them.
    let lines: Vec<Line> = if print {
        lines
            .into_iter()
            .map(|l| Line {
                label: values_only(&l.label),
                ..l
            })
            .collect()
    } else {
        lines
    };
    let y_name = if print {
        metric::without_context(&spec.label)
    } else {
        spec.label.clone()
    };
    let x_label = if unit.is_empty() {
        axis.to_string()
    } else {
        format!("{axis} [{unit}]")
    };
    let mut foot = spec.bars.to_string();
    if missing > 0 {
        foot.push_str(&format!(" · ⚠ {missing} run(s) without a value"));
    }
    // In print the paper's caption carries the title and what the bars mean.
    let print = spec.size.is_print();
    // A log y axis needs every drawn value positive, interval ends included.
    let y_values: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().flat_map(|p| [p.low, p.mean]))
        .collect();
    let c = LineChart {
        title: if print {
            String::new()
        } else {
            spec.title.clone()
        },
        x_label,
        y_label: metric::axis_label(&y_name, &sc),
        x_axis: kind,
        lines,
        log_x: spec.x_scale.is_log(&xs),
        log_y: spec.y_scale.is_log(&y_values),
        x_extent: xs.clone(),
        footnote: if print { String::new() } else { foot.clone() },
    };
    let svg = chart::line_chart(&c, spec.size.canvas(SIZE))?;
    Ok(Some(Figure {
        id: spec.id.clone(),
        title: spec.title.clone(),
        caption: format!(
            "{} against {axis}; one {} per {}. {foot}.",
            metric::axis_label(&spec.label, &sc),
            if matches!(c.x_axis, XAxis::Categories(_)) {
                "bar"
            } else {
                "line"
            },
            spec.series_are
        ),
        svg,
        kind: FigureKind::Sweep,
        missing_runs: missing,
    }))
}

/// The error bar of `sum`: its 95% interval as the tables show it (none for one run), never
/// beyond what `metric` can take (below 0, a share above 1).
pub fn ci_bar(sum: &analysis::Summary, metric: &str) -> (f64, f64) {
    let (lower, upper) = metric::domain(metric);
    let (low, high) = sum.ci95().unwrap_or((sum.mean, sum.mean));
    (
        lower.map_or(low, |l| low.max(l)),
        upper.map_or(high, |u| high.min(u)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_values_with_one_unit_are_numeric() {
        assert_eq!(numeric("0.5%"), Some((0.5, "%".into())));
        assert_eq!(numeric("10Mbit"), Some((10.0, "Mbit".into())));
        assert_eq!(numeric("-3"), Some((-3.0, String::new())));
        assert_eq!(numeric("cubic"), None);
        let (k, xs, unit) = x_axis(&["0%".into(), "0.5%".into(), "5%".into()]);
        assert_eq!(
            (k, xs, unit.as_str()),
            (XAxis::Numeric, vec![0.0, 0.5, 5.0], "%")
        );
        let (k, xs, unit) = x_axis(&["500ms".into(), "1s".into(), "2s".into()]);
        assert_eq!(
            (k, xs, unit.as_str()),
            (XAxis::Numeric, vec![0.5, 1.0, 2.0], "s")
        );
        let (_, xs, unit) = x_axis(&["1kbit".into(), "10Mbit".into(), "30Mbit".into()]);
        assert_eq!((xs, unit.as_str()), (vec![0.001, 10.0, 30.0], "Mbit/s"));
        // A window sweep is in bytes, not read as a rate of bytes per second.
        let (_, xs, unit) = x_axis(&["16KB".into(), "64KB".into(), "1MB".into()]);
        assert_eq!((xs, unit.as_str()), (vec![0.016, 0.064, 1.0], "MB"));
        let (k, _, _) = x_axis(&["10ms".into(), "1%".into()]);
        assert!(
            matches!(k, XAxis::Categories(_)),
            "different quantities stay categories"
        );
        let (k, _, _) = x_axis(&["newreno".into(), "cubic".into()]);
        assert_eq!(k, XAxis::Categories(vec!["newreno".into(), "cubic".into()]));
    }

    #[test]
    fn log_axis_only_for_values_spread_over_decades() {
        assert!(spread_over_decades(&[1.0, 2.0, 5.0, 10.0, 15.0, 100.0]));
        assert!(
            spread_over_decades(&[0.1, 1.0, 10.0]),
            "seed 002's sizes: 100 kB, 1 MB, 10 MB"
        );
        assert!(
            !spread_over_decades(&[0.001, 10.0, 20.0, 25.0, 30.0]),
            "one stand-in"
        );
        assert!(!spread_over_decades(&[2.0, 5.0, 10.0, 20.0]), "one decade");
        assert!(!spread_over_decades(&[0.0, 10.0, 1000.0]), "zero");
    }

    #[test]
    fn error_bars_stay_inside_the_metrics_domain() {
        // Two runs far apart: Student's t interval spans far beyond both values.
        let share = analysis::summarize(&[0.55, 0.99]).expect("two values");
        assert!(share.ci95_high > 1.0 && share.ci95_low < 0.0);
        assert_eq!(ci_bar(&share, "flows.0.share"), (0.0, 1.0));
        assert_eq!(ci_bar(&share, "fairness.jain"), (0.0, 1.0));
        let time = analysis::summarize(&[0.5, 9.5]).expect("two values");
        let (low, high) = ci_bar(&time, "flows.0.completion_s");
        assert_eq!(low, 0.0);
        assert!(high > 9.5, "no upper bound for a time");
        let one = analysis::summarize(&[3.0]).expect("one value");
        assert_eq!(ci_bar(&one, "flows.0.completion_s"), (3.0, 3.0));
    }

    #[test]
    fn n_of_n_shows_ranges() {
        assert_eq!(n_of_n(&[(5, 5), (5, 5)]), "n/N = 5/5");
        assert_eq!(n_of_n(&[(3, 5), (5, 5)]), "n/N = 3–5/5");
    }
}
