//! Comparison of results directories (`quiclab compare`): the same metric from several sources,
//! side by side, sweep point by sweep point, as medians with distribution-free 95% intervals and
//! as ratios to the first source.
//!
//! This is how a simulated run is checked against the emulator (`quiclab sim` and `quiclab emu`
//! of one scenario file), or two variants against each other. Medians rather than means because
//! download times are skewed: one retransmission timeout moves a mean far more than a median.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use results::store::ResultsStore;

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A filter is not `KEY=VALUE`.
    #[error("--where {0:?}: expected KEY=VALUE (a sweep axis and its value)")]
    Filter(String),
    /// The path holds no results store.
    #[error("{}: no {} here (pass a results directory written by `quiclab sim` or `quiclab emu`)", .0.display(), results::layout::RESULTS_FILE)]
    NotResults(PathBuf),
    /// The store could not be read.
    #[error("cannot open {}", .path.display())]
    Store {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: results::store_error::Error,
    },
    /// No run of a source is left after the filters.
    #[error("{}: no runs (after --where filters)", .0.display())]
    NoRuns(PathBuf),
    /// No run of a source has the metric.
    #[error("{source_label}: no run has the metric {metric:?}")]
    NoMetric {
        /// The source.
        source_label: String,
        /// The metric.
        metric: String,
    },
    /// The values could not be summarised.
    #[error("{label}: cannot summarise {metric} at {point}")]
    Stats {
        /// The source.
        label: String,
        /// The metric.
        metric: String,
        /// The sweep point.
        point: String,
        /// Why.
        source: crate::StatsError,
    },
}

/// One source of a comparison: a label and the runs it holds (after the filters).
#[derive(Debug, Clone)]
pub struct Source {
    /// Label of the source (the path itself when none was given).
    pub label: String,
    /// Its stored runs, as written to `results.jsonl`.
    pub runs: Vec<Value>,
}

/// A comparison: its rows and the sweep points where a source measured nothing.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// One row per (metric, sweep point, source) with the metric.
    pub rows: Vec<CompareRow>,
    /// One line per sweep point where a source has runs but none has a metric.
    pub missing: Vec<String>,
}

/// Compares `metrics` over the sources `specs` (`LABEL=PATH` or `PATH`: a results directory
/// or a results.jsonl file; the first is the reference of the ratio), keeping only runs whose
/// sweep axes match every `KEY=VALUE` of `filters`.
pub fn compare(
    specs: &[String],
    metrics: &[String],
    filters: &[String],
) -> Result<Comparison, CompareError> {
    let filters = parse_filters(filters)?;
    let mut sources = Vec::new();
    for spec in specs {
        let (label, path) = split_source(spec);
        let runs: Vec<Value> = load_runs(&path)?
            .into_iter()
            .filter(|r| matches(r, &filters))
            .collect();
        if runs.is_empty() {
            return Err(CompareError::NoRuns(path));
        }
        sources.push(Source { label, runs });
    }
    compare_sources(&sources, metrics)
}

/// [`compare`] over sources already loaded.
pub fn compare_sources(sources: &[Source], metrics: &[String]) -> Result<Comparison, CompareError> {
    let pairs: Vec<(String, Vec<Value>)> = sources
        .iter()
        .map(|s| (s.label.clone(), s.runs.clone()))
        .collect();
    let rows = compare_rows(&pairs, metrics)?;
    let missing = missing(&pairs, &rows, metrics);
    Ok(Comparison { rows, missing })
}

/// One (sweep point, metric, source) line of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// The sweep point: its axes as `name=value` separated by spaces (a `variant` axis
    /// included), empty for a scenario without a sweep. Runs of different points are never
    /// pooled.
    pub point: String,
    /// Label of the source.
    pub source: String,
    /// Dotted metric path.
    pub metric: String,
    /// Runs at this point that had the metric.
    pub n: usize,
    /// Runs at this point (after `--where`); `runs - n` did not measure the metric (a download
    /// that did not complete within `run.duration` has no completion time).
    pub runs: usize,
    /// Median of the metric.
    pub median: f64,
    /// Distribution-free 95% interval of the median (None below 6 runs).
    pub median_ci95: Option<(f64, f64)>,
    /// Mean and the half-width of its Student-t 95% interval.
    pub mean: f64,
    /// Half-width of the 95% interval of the mean.
    pub mean_ci95_half: f64,
    /// This median divided by the first source's median of the same metric.
    pub ratio_to_first: Option<f64>,
}

/// `LABEL=PATH` or `PATH` (labelled by the path itself).
pub fn split_source(spec: &str) -> (String, PathBuf) {
    match spec.split_once('=') {
        Some((label, path)) if !label.is_empty() && !label.contains('/') => {
            (label.to_string(), PathBuf::from(path))
        }
        _ => (spec.to_string(), PathBuf::from(spec)),
    }
}

fn parse_filters(filters: &[String]) -> Result<Vec<(String, String)>, CompareError> {
    filters
        .iter()
        .map(|f| match f.split_once('=') {
            Some((k, v)) => Ok((k.to_string(), v.to_string())),
            None => Err(CompareError::Filter(f.clone())),
        })
        .collect()
}

fn matches(run: &Value, filters: &[(String, String)]) -> bool {
    filters.iter().all(|(k, v)| {
        run.get("axes")
            .and_then(|a| a.get(k))
            .and_then(Value::as_str)
            .is_some_and(|x| x == v)
    })
}

/// Every run stored in a results directory or a results.jsonl file.
pub fn load_runs(path: &Path) -> Result<Vec<Value>, CompareError> {
    let dir = if path.is_file() {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        path.to_path_buf()
    };
    if !dir.join(results::layout::RESULTS_FILE).is_file() {
        return Err(CompareError::NotResults(path.to_path_buf()));
    }
    let store_error = |source| CompareError::Store {
        path: dir.clone(),
        source,
    };
    ResultsStore::open(&dir)
        .and_then(|store| store.load())
        .map_err(store_error)
}

/// A run's sweep point as `name=value` pairs separated by spaces (axes in name order).
fn point_of(run: &Value) -> String {
    run.get("axes")
        .and_then(Value::as_object)
        .map(|axes| {
            axes.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), str::to_string)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The sweep points of every source, in the order they first appear (the first source's
/// order, which is the sweep's), each with every source's runs at it.
fn by_point(sources: &[(String, Vec<Value>)]) -> Vec<(String, Vec<Vec<&Value>>)> {
    let mut points: Vec<(String, Vec<Vec<&Value>>)> = Vec::new();
    for (s, (_, runs)) in sources.iter().enumerate() {
        for run in runs {
            let key = point_of(run);
            let at = match points.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    points.push((key, vec![Vec::new(); sources.len()]));
                    points.len() - 1
                }
            };
            points[at].1[s].push(run);
        }
    }
    points
}

/// Median, interval and ratio of every metric of every source, sweep point by sweep point
/// (runs of different points are never pooled); the ratio is to the first source that has the
/// metric at the same point.
fn compare_rows(
    sources: &[(String, Vec<Value>)],
    metrics: &[String],
) -> Result<Vec<CompareRow>, CompareError> {
    let paths: Vec<&str> = metrics.iter().map(String::as_str).collect();
    let points = by_point(sources);
    let mut rows = Vec::new();
    for metric in metrics {
        for ((label, _), s) in sources.iter().zip(0..) {
            let any = points.iter().any(|(_, per)| {
                let runs: Vec<Value> = per[s].iter().map(|r| (*r).clone()).collect();
                crate::metrics_from_runs(&runs, &paths)
                    .get(metric.as_str())
                    .is_some_and(|v| !v.is_empty())
            });
            if !any {
                return Err(CompareError::NoMetric {
                    source_label: label.clone(),
                    metric: metric.clone(),
                });
            }
        }
        for (point, per) in &points {
            let mut first_median = None;
            for ((label, _), runs) in sources.iter().zip(per) {
                let owned: Vec<Value> = runs.iter().map(|r| (*r).clone()).collect();
                let values = crate::metrics_from_runs(&owned, &paths)
                    .remove(metric.as_str())
                    .unwrap_or_default();
                if values.is_empty() {
                    continue;
                }
                let summary = crate::summarize(&values).map_err(|source| CompareError::Stats {
                    label: label.clone(),
                    metric: metric.clone(),
                    point: point.clone(),
                    source,
                })?;
                let first = *first_median.get_or_insert(summary.median);
                rows.push(CompareRow {
                    point: point.clone(),
                    source: label.clone(),
                    metric: metric.clone(),
                    n: summary.n,
                    runs: runs.len(),
                    median: summary.median,
                    median_ci95: crate::median_ci95(&values),
                    mean: summary.mean,
                    mean_ci95_half: summary.ci95_half_width(),
                    ratio_to_first: (first != 0.0).then(|| summary.median / first),
                });
            }
        }
    }
    Ok(rows)
}

/// Sweep points where a source has runs but none of them has a metric (no row in the table).
fn missing(
    sources: &[(String, Vec<Value>)],
    rows: &[CompareRow],
    metrics: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for metric in metrics {
        for (point, per) in by_point(sources) {
            for ((label, _), runs) in sources.iter().zip(&per) {
                let has_row = rows
                    .iter()
                    .any(|r| r.point == point && r.source == *label && r.metric == *metric);
                if !runs.is_empty() && !has_row {
                    out.push(format!(
                        "none of the {} runs at {} ({label}) has {metric} (not completed within run.duration, or not measured)",
                        runs.len(),
                        if point.is_empty() { "the only point" } else { &point },
                    ));
                }
            }
        }
    }
    out
}

/// The rows as a Markdown table (it reads fine in a terminal and pastes into a README), with a
/// warning line under it per row that lacks the metric in some runs.
pub fn render(rows: &[CompareRow]) -> String {
    use tables::Align::{Left, Right};
    let mut t = tables::Markdown::with_columns([
        ("point", Left),
        ("metric", Left),
        ("source", Left),
        ("n/N", Right),
        ("median", Right),
        ("median 95% CI", Left),
        ("mean ± 95% CI", Left),
        ("ratio to first", Right),
    ]);
    let mut notes = Vec::new();
    for r in rows {
        let ci = r
            .median_ci95
            .map(|(lo, hi)| format!("[{}, {}]", num(lo), num(hi)))
            .unwrap_or_else(|| "n < 6".to_string());
        let ratio = r
            .ratio_to_first
            .map(|x| format!("{x:.3}"))
            .unwrap_or_default();
        if r.n < r.runs {
            notes.push(format!(
                "warning: {} of {} runs at {} ({}) have no {} (not completed within run.duration, or not measured)",
                r.runs - r.n,
                r.runs,
                if r.point.is_empty() { "the only point" } else { &r.point },
                r.source,
                r.metric
            ));
        }
        t.row([
            r.point.clone(),
            r.metric.clone(),
            r.source.clone(),
            format!("{}/{}", r.n, r.runs),
            num(r.median),
            ci,
            format!("{} ± {}", num(r.mean), num(r.mean_ci95_half)),
            ratio,
        ]);
    }
    let mut out = t.render();
    for n in notes {
        out.push_str(&n);
        out.push('\n');
    }
    out
}

/// Four significant digits, without scientific notation for the usual magnitudes.
fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn runs(times: &[f64]) -> Vec<Value> {
        times
            .iter()
            .map(|t| json!({"axes": {"link.rtt": "0"}, "flows": [{"completion_s": t}]}))
            .collect()
    }

    #[test]
    fn ratio_is_relative_to_the_first_source() {
        let a = runs(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        let b = runs(&[2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]);
        let rows = compare_rows(
            &[("sim".into(), a), ("emu".into(), b)],
            &["flows.0.completion_s".into()],
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].median, 4.0);
        assert_eq!(rows[1].median, 8.0);
        assert_eq!(rows[0].ratio_to_first, Some(1.0));
        assert_eq!(rows[1].ratio_to_first, Some(2.0));
        assert_eq!(rows[1].median_ci95, Some((2.0, 14.0)));
        let table = render(&rows);
        assert!(
            table.contains("| link.rtt=0 | flows.0.completion_s | emu | 7/7 | 8.000 |"),
            "{table}"
        );
    }

    fn point(rtt: &str, variant: Option<&str>, times: &[Option<f64>]) -> Vec<Value> {
        times
            .iter()
            .map(|t| {
                let mut axes = json!({"link.rtt": rtt});
                if let Some(v) = variant {
                    axes["variant"] = json!(v);
                }
                json!({"axes": axes, "flows": [{"completion_s": t}]})
            })
            .collect()
    }

    #[test]
    fn sweep_points_and_variants_are_compared_point_by_point_not_pooled() {
        // Regression: `compare` pooled every sweep point (n = 150 across all RTTs).
        let mut a = point("20ms", Some("quic"), &[Some(1.0), Some(1.0), Some(1.0)]);
        a.extend(point(
            "20ms",
            Some("tcp"),
            &[Some(3.0), Some(3.0), Some(3.0)],
        ));
        a.extend(point(
            "200ms",
            Some("quic"),
            &[Some(10.0), Some(10.0), None],
        ));
        let mut b = point("20ms", Some("quic"), &[Some(2.0), Some(2.0), Some(2.0)]);
        b.extend(point(
            "200ms",
            Some("quic"),
            &[Some(30.0), Some(30.0), Some(30.0)],
        ));
        let rows = compare_rows(
            &[("sim".into(), a), ("emu".into(), b)],
            &["flows.0.completion_s".into()],
        )
        .unwrap();
        type Line<'a> = (&'a str, &'a str, usize, usize, f64, Option<f64>);
        let got: Vec<Line> = rows
            .iter()
            .map(|r| {
                (
                    r.point.as_str(),
                    r.source.as_str(),
                    r.n,
                    r.runs,
                    r.median,
                    r.ratio_to_first,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("link.rtt=20ms variant=quic", "sim", 3, 3, 1.0, Some(1.0)),
                ("link.rtt=20ms variant=quic", "emu", 3, 3, 2.0, Some(2.0)),
                ("link.rtt=20ms variant=tcp", "sim", 3, 3, 3.0, Some(1.0)),
                ("link.rtt=200ms variant=quic", "sim", 2, 3, 10.0, Some(1.0)),
                ("link.rtt=200ms variant=quic", "emu", 3, 3, 30.0, Some(3.0)),
            ]
        );
        let table = render(&rows);
        assert!(table.contains("| 2/3 |"), "{table}");
        assert!(
            table.contains(
                "1 of 3 runs at link.rtt=200ms variant=quic (sim) have no flows.0.completion_s"
            ),
            "{table}"
        );
    }

    #[test]
    fn a_missing_metric_is_an_error_naming_it() {
        let err = compare_rows(&[("sim".into(), runs(&[1.0]))], &["flows.0.nope".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("flows.0.nope"), "{err}");
    }

    #[test]
    fn sources_and_filters_parse() {
        assert_eq!(
            split_source("sim=out/a"),
            ("sim".into(), PathBuf::from("out/a"))
        );
        assert_eq!(
            split_source("out/a=b"),
            ("out/a=b".into(), PathBuf::from("out/a=b"))
        );
        let f = parse_filters(&["link.rtt=0".into()]).unwrap();
        assert!(matches(&runs(&[1.0])[0], &f));
        assert!(!matches(
            &runs(&[1.0])[0],
            &[("link.rtt".into(), "1".into())]
        ));
        assert!(parse_filters(&["loss".into()]).is_err());
    }
}
