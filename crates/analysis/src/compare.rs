//! Comparison of results directories (`quiclab compare`): the same metric from several sources,
//! side by side, sweep point by sweep point, as medians with distribution-free 95% intervals and
//! as ratios to the first source; then the comparisons as measured quantities with their tests:
//!
//! - within a source whose sweep has a `variant` axis, every variant against a baseline variant,
//!   repetitions paired by index (`crate::paired`);
//! - across sources (simulator against emulator), each source against the first as independent
//!   samples: Welch and Mann–Whitney (`crate::inference::unpaired`).
//!
//! Each table's p-values are Holm-adjusted across that table. Medians rather than means in the
//! first table because download times are skewed: one retransmission timeout moves a mean far
//! more than a median.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use results::store::ResultsStore;

use crate::format;

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
    /// The baseline variant is not a variant of a source.
    #[error("{source_label}: {source}")]
    Paired {
        /// The source.
        source_label: String,
        /// Why.
        source: crate::paired::PairedError,
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

/// A comparison: its rows, the paired and unpaired tests, and the sweep points where a source
/// measured nothing.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// One row per (metric, sweep point, source) with the metric.
    pub rows: Vec<CompareRow>,
    /// Per source with at least two variants: every variant against the baseline.
    pub paired: Vec<PairedTable>,
    /// With two sources or more: every source against the first, point by point.
    pub unpaired: Vec<UnpairedRow>,
    /// One line per sweep point where a source has runs but none has a metric.
    pub missing: Vec<String>,
}

/// The paired comparisons of one source's variants; p-values Holm-adjusted across the table.
#[derive(Debug, Clone, Serialize)]
pub struct PairedTable {
    /// Label of the source.
    pub source: String,
    /// Its rows.
    pub rows: Vec<crate::paired::PairedRow>,
    /// The harm each variant shows against the baseline taken as the run without a
    /// competitor (`crate::harm`), for the metrics whose direction is known.
    pub harm: Vec<crate::harm::HarmRow>,
}

/// One source against the first source at one sweep point, for one metric (source − first),
/// the runs of each taken as independent samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnpairedRow {
    /// The sweep point, as in [`CompareRow::point`].
    pub point: String,
    /// Dotted metric path.
    pub metric: String,
    /// Label of the source.
    pub source: String,
    /// Label of the first source, the reference.
    pub reference: String,
    /// Runs of the source with the metric.
    pub n: usize,
    /// Runs of the reference with the metric.
    pub n_reference: usize,
    /// Mean of the source minus mean of the reference.
    pub diff: f64,
    /// Welch 95% interval of the difference.
    pub diff_ci: Option<(f64, f64)>,
    /// Mean of the source over mean of the reference.
    pub ratio: Option<f64>,
    /// Percentile bootstrap 95% interval of the ratio.
    pub ratio_ci: Option<(f64, f64)>,
    /// Welch t-test p-value.
    pub p_welch: Option<f64>,
    /// Mann–Whitney U p-value.
    pub p_mann_whitney: Option<f64>,
    /// `p_welch` Holm-adjusted across the table.
    pub p_welch_holm: Option<f64>,
    /// `p_mann_whitney` Holm-adjusted across the table.
    pub p_mann_whitney_holm: Option<f64>,
    /// Hedges' g.
    pub effect_size: Option<f64>,
}

/// Compares `metrics` over the sources `specs` (`LABEL=PATH` or `PATH`: a results directory
/// or a results.jsonl file; the first is the reference of the ratio), keeping only runs whose
/// sweep axes match every `KEY=VALUE` of `filters`. Variants are compared with `baseline`
/// (the first variant of each source when None).
pub fn compare(
    specs: &[String],
    metrics: &[String],
    filters: &[String],
    baseline: Option<&str>,
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
    compare_sources(&sources, metrics, baseline)
}

/// [`compare`] over sources already loaded.
pub fn compare_sources(
    sources: &[Source],
    metrics: &[String],
    baseline: Option<&str>,
) -> Result<Comparison, CompareError> {
    let pairs: Vec<(String, Vec<Value>)> = sources
        .iter()
        .map(|s| (s.label.clone(), s.runs.clone()))
        .collect();
    let rows = compare_rows(&pairs, metrics)?;
    let missing = missing(&pairs, &rows, metrics);
    let mut paired = Vec::new();
    for source in sources {
        let set = paired_set(&source.runs, metrics);
        if !set.has_pairs() {
            continue;
        }
        let rows =
            crate::paired::paired_rows(&set, baseline).map_err(|e| CompareError::Paired {
                source_label: source.label.clone(),
                source: e,
            })?;
        let (harm, _) =
            crate::harm::harm_rows(&set, baseline).map_err(|e| CompareError::Paired {
                source_label: source.label.clone(),
                source: e,
            })?;
        paired.push(PairedTable {
            source: source.label.clone(),
            rows,
            harm,
        });
    }
    let unpaired = unpaired_rows(&pairs, metrics);
    Ok(Comparison {
        rows,
        paired,
        unpaired,
        missing,
    })
}

/// The runs' values of `metrics` by sweep point and repetition (`rep`; a run without one is
/// left out, it cannot be paired).
fn paired_set(runs: &[Value], metrics: &[String]) -> crate::paired::PairedSet {
    let mut set = crate::paired::PairedSet::new();
    let paths: Vec<&str> = metrics.iter().map(String::as_str).collect();
    for run in runs {
        let Some(rep) = run
            .get("rep")
            .and_then(Value::as_u64)
            .and_then(|r| u32::try_from(r).ok())
        else {
            continue;
        };
        let axes = axes_of(run);
        let values = crate::metrics_from_runs(std::slice::from_ref(run), &paths);
        for metric in metrics {
            if let Some(&v) = values.get(metric.as_str()).and_then(|v| v.first()) {
                set.add(&axes, rep, metric, v);
            }
        }
    }
    set
}

/// Every source against the first, metric by metric and point by point, where both have
/// values; p-values Holm-adjusted across all rows.
fn unpaired_rows(sources: &[(String, Vec<Value>)], metrics: &[String]) -> Vec<UnpairedRow> {
    let mut rows = Vec::new();
    if sources.len() < 2 {
        return rows;
    }
    let paths: Vec<&str> = metrics.iter().map(String::as_str).collect();
    let points = by_point(sources);
    for metric in metrics {
        for (point, per) in &points {
            let values: Vec<Vec<f64>> = per
                .iter()
                .map(|runs| {
                    let owned: Vec<Value> = runs.iter().map(|r| (*r).clone()).collect();
                    crate::metrics_from_runs(&owned, &paths)
                        .remove(metric.as_str())
                        .unwrap_or_default()
                })
                .collect();
            for (s, (label, _)) in sources.iter().enumerate().skip(1) {
                let Ok(u) = crate::inference::unpaired(
                    &values[s],
                    &values[0],
                    crate::inference::BOOTSTRAP_SEED,
                ) else {
                    continue;
                };
                rows.push(UnpairedRow {
                    point: point.clone(),
                    metric: metric.clone(),
                    source: label.clone(),
                    reference: sources[0].0.clone(),
                    n: u.n_a,
                    n_reference: u.n_b,
                    diff: u.diff,
                    diff_ci: u.diff_ci,
                    ratio: u.ratio,
                    ratio_ci: u.ratio_ci,
                    p_welch: u.p_welch,
                    p_mann_whitney: u.p_mann_whitney,
                    p_welch_holm: None,
                    p_mann_whitney_holm: None,
                    effect_size: u.effect_size,
                });
            }
        }
    }
    let w = crate::inference::holm(&rows.iter().map(|r| r.p_welch).collect::<Vec<_>>());
    let m = crate::inference::holm(&rows.iter().map(|r| r.p_mann_whitney).collect::<Vec<_>>());
    for ((r, w), m) in rows.iter_mut().zip(w).zip(m) {
        r.p_welch_holm = w;
        r.p_mann_whitney_holm = m;
    }
    rows
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
    /// Mean of the metric.
    pub mean: f64,
    /// Half-width of the Student-t 95% interval of the mean (None for a single run).
    pub mean_ci95_half: Option<f64>,
    /// The Student-t 95% interval of the mean as shown: None for a single run, the lower end
    /// clipped at 0 when no value is negative (`Summary::ci95`).
    pub mean_ci95: Option<(f64, f64)>,
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

/// A run's sweep axes as (name, value) pairs, in name order.
fn axes_of(run: &Value) -> Vec<(String, String)> {
    run.get("axes")
        .and_then(Value::as_object)
        .map(|axes| {
            axes.iter()
                .map(|(k, v)| {
                    let v = v.as_str().map_or(v.to_string(), str::to_string);
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A run's sweep point as `name=value` pairs separated by spaces (axes in name order).
fn point_of(run: &Value) -> String {
    axes_of(run)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
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
                    mean_ci95_half: (summary.n > 1).then(|| summary.ci95_half_width()),
                    mean_ci95: summary.ci95(),
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
/// warning line under it per row that lacks the metric in some runs. Values print in the
/// metric's unit (from its suffix) with four significant digits; a single run has no interval
/// (`± –`), and a metric never negative has its interval's lower end clipped at 0.
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
            .map(|(lo, hi)| format::interval(&r.metric, lo, hi))
            .unwrap_or_else(|| "n < 6".to_string());
        let ratio = r.ratio_to_first.map(format::sig4).unwrap_or_default();
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
            format::value(&r.metric, r.median),
            ci,
            format::mean_ci(&r.metric, r.mean, r.mean_ci95),
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

/// The whole comparison as text: the table of [`render`], then each source's paired table and
/// the unpaired table, each under a line saying what it compares.
pub fn render_all(c: &Comparison) -> String {
    let mut out = render(&c.rows);
    for table in &c.paired {
        let baseline = table.rows.first().map_or("", |r| r.baseline.as_str());
        out.push_str(&format!(
            "\nPaired: variants of {} against {baseline}, repetitions matched by index; p-values Holm-adjusted across this table\n\n",
            table.source
        ));
        out.push_str(&crate::paired::render_paired(&table.rows));
    }
    if !c.unpaired.is_empty() {
        out.push_str(
            "\nUnpaired: each source against the first, runs as independent samples; p-values Holm-adjusted across this table\n\n",
        );
        out.push_str(&render_unpaired(&c.unpaired));
    }
    out
}

/// The unpaired rows as a Markdown table.
pub fn render_unpaired(rows: &[UnpairedRow]) -> String {
    use tables::Align::{Left, Right};
    let mut t = tables::Markdown::with_columns([
        ("point", Left),
        ("metric", Left),
        ("source − reference", Left),
        ("n", Right),
        ("difference [95% CI, Welch]", Left),
        ("ratio [95% CI]", Left),
        ("p (Welch, Holm)", Right),
        ("p (Mann–Whitney, Holm)", Right),
        ("Hedges' g", Right),
    ]);
    let dash = || "–".to_string();
    for r in rows {
        let diff = format::diff_with_interval(&r.metric, r.diff, r.diff_ci);
        let ratio = format::ratio_with_interval(r.ratio, r.ratio_ci);
        t.row([
            r.point.clone(),
            r.metric.clone(),
            format!("{} − {}", r.source, r.reference),
            format!("{}, {}", r.n, r.n_reference),
            diff,
            ratio,
            r.p_welch_holm.map(format::p_value).unwrap_or_else(dash),
            r.p_mann_whitney_holm
                .map(format::p_value)
                .unwrap_or_else(dash),
            r.effect_size.map(format::sig4).unwrap_or_else(dash),
        ]);
    }
    t.render()
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
            table.contains("| link.rtt=0 | flows.0.completion_s | emu | 7/7 | 8.000 s | [2.000 s, 14.00 s] | 8.000 ± 3.996 s | 2.000 |"),
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

    fn variant_runs(variant: &str, times: &[f64]) -> Vec<Value> {
        times
            .iter()
            .enumerate()
            .map(|(rep, t)| {
                json!({"rep": rep, "axes": {"link.rtt": "20ms", "variant": variant},
                       "flows": [{"completion_s": t}]})
            })
            .collect()
    }

    #[test]
    fn variants_are_compared_paired_and_sources_unpaired() {
        let mut a = variant_runs("quic", &[1.0, 2.0, 3.0, 4.0]);
        a.extend(variant_runs("tcp", &[1.5, 2.9, 3.2, 4.9]));
        let b = variant_runs("quic", &[2.0, 2.1, 2.7, 3.3]);
        let sources = [
            Source {
                label: "sim".into(),
                runs: a,
            },
            Source {
                label: "emu".into(),
                runs: b,
            },
        ];
        let metrics = ["flows.0.completion_s".to_string()];
        let c = compare_sources(&sources, &metrics, None).unwrap();
        // Only sim has two variants.
        assert_eq!(c.paired.len(), 1);
        let p = &c.paired[0].rows;
        assert_eq!(
            (p.len(), p[0].variant.as_str(), p[0].baseline.as_str()),
            (1, "tcp", "quic")
        );
        // scipy.stats.ttest_rel([1.5, 2.9, 3.2, 4.9], [1, 2, 3, 4]).pvalue
        assert!((p[0].p_t.unwrap() - 0.034_932_701_484_079_63).abs() < 1e-12);
        // emu against sim at variant=quic only (emu has no tcp).
        assert_eq!(c.unpaired.len(), 1);
        let u = &c.unpaired[0];
        assert_eq!((u.source.as_str(), u.reference.as_str()), ("emu", "sim"));
        assert_eq!(u.point, "link.rtt=20ms variant=quic");
        // scipy.stats.ttest_ind([2, 2.1, 2.7, 3.3], [1, 2, 3, 4], equal_var=False).pvalue
        assert!(
            (u.p_welch.unwrap() - 0.973_588_486_334_720_6).abs() < 1e-9,
            "{:?}",
            u.p_welch
        );
        let text = render_all(&c);
        assert!(
            text.contains("Paired: variants of sim against quic"),
            "{text}"
        );
        assert!(text.contains("| tcp − quic | 4 |"), "{text}");
        assert!(text.contains("| emu − sim | 4, 4 |"), "{text}");
        // Another baseline flips the paired difference; an unknown one is an error.
        let c = compare_sources(&sources, &metrics, Some("tcp")).unwrap();
        assert!(c.paired[0].rows[0].diff < 0.0);
        let err = compare_sources(&sources, &metrics, Some("udp"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("sim") && err.contains("udp"), "{err}");
    }

    #[test]
    fn a_connection_metric_compares_the_second_connection() {
        // A 0-RTT flow: two connections; the comparison that matters is the second one's.
        let conn = |variant: &str, seconds: &[f64]| -> Vec<Value> {
            seconds
                .iter()
                .enumerate()
                .map(|(rep, t)| {
                    json!({"rep": rep, "axes": {"variant": variant},
                           "flows": [{"completion_s": 1.0,
                                      "connections": [{"completion_s": 0.5}, {"completion_s": t}]}]})
                })
                .collect()
        };
        let mut runs = conn("quic-1rtt", &[0.30, 0.32, 0.31]);
        runs.extend(conn("quic-0rtt", &[0.25, 0.26, 0.24]));
        let sources = [Source {
            label: "sim".into(),
            runs,
        }];
        let metrics = ["flows.0.connections.1.completion_s".to_string()];
        let c = compare_sources(&sources, &metrics, None).unwrap();
        let p = &c.paired[0].rows[0];
        assert_eq!((p.variant.as_str(), p.n_pairs), ("quic-0rtt", 3));
        assert!((p.diff + 0.06).abs() < 1e-12, "{p:?}");
    }

    #[test]
    fn a_single_run_has_no_mean_interval() {
        let rows = compare_rows(
            &[("sim".into(), runs(&[2.0]))],
            &["flows.0.completion_s".into()],
        )
        .unwrap();
        assert_eq!((rows[0].mean_ci95_half, rows[0].mean_ci95), (None, None));
        assert!(
            render(&rows).contains("| 2.000 s ± – |"),
            "{}",
            render(&rows)
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
