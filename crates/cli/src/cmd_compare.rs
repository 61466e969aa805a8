//! `quiclab compare`: the same metric from several results directories, side by side, as medians
//! with distribution-free 95% intervals and as ratios to the first source.
//!
//! This is how a simulated run is checked against the emulator (`quiclab sim` and `quiclab emu`
//! of one scenario file), or two variants against each other. Medians rather than means because
//! download times are skewed: one retransmission timeout moves a mean far more than a median.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use report::ResultsStore;
use serde::Serialize;
use serde_json::Value;

use crate::exit::{self, Exit};

/// Options of `quiclab compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Results to compare: `LABEL=DIR` or `DIR` (a results directory or a results.jsonl file).
    /// The first one is the reference of the ratio column.
    #[arg(required = true, num_args = 2..)]
    pub sources: Vec<String>,
    /// Dotted metric path inside each run (repeatable), e.g. `flows.0.goodput_bps`.
    #[arg(long = "metric", default_value = "flows.0.completion_s")]
    pub metrics: Vec<String>,
    /// Only runs whose sweep axes match `KEY=VALUE` (repeatable).
    #[arg(long = "where")]
    pub filters: Vec<String>,
    /// Print the rows as one JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One (source, metric) line of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Label of the source.
    pub source: String,
    /// Dotted metric path.
    pub metric: String,
    /// Runs that had the metric.
    pub n: usize,
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

/// Runs `quiclab compare`.
pub fn run(args: &CompareArgs) -> anyhow::Result<Exit> {
    let filters = parse_filters(&args.filters)?;
    let mut sources = Vec::new();
    for spec in &args.sources {
        let (label, path) = split_source(spec);
        let runs = load_runs(&path)?;
        let runs: Vec<Value> = runs.into_iter().filter(|r| matches(r, &filters)).collect();
        if runs.is_empty() {
            bail!("{}: no runs (after --where filters)", path.display());
        }
        sources.push((label, runs));
    }
    let rows = compare_rows(&sources, &args.metrics)?;
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        print!("{}", render(&rows));
    }
    Ok(exit::SUCCESS)
}

/// `LABEL=PATH` or `PATH` (labelled by the path itself).
fn split_source(spec: &str) -> (String, PathBuf) {
    match spec.split_once('=') {
        Some((label, path)) if !label.is_empty() && !label.contains('/') => {
            (label.to_string(), PathBuf::from(path))
        }
        _ => (spec.to_string(), PathBuf::from(spec)),
    }
}

fn parse_filters(filters: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    filters
        .iter()
        .map(|f| match f.split_once('=') {
            Some((k, v)) => Ok((k.to_string(), v.to_string())),
            None => bail!("--where {f:?}: expected KEY=VALUE (a sweep axis and its value)"),
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
fn load_runs(path: &Path) -> anyhow::Result<Vec<Value>> {
    let dir = if path.is_file() {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        path.to_path_buf()
    };
    if !dir.join(report::store::RESULTS_FILE).is_file() {
        bail!(
            "{}: no {} here (pass a results directory written by `quiclab sim` or `quiclab emu`)",
            path.display(),
            report::store::RESULTS_FILE
        );
    }
    let store =
        ResultsStore::open(&dir).with_context(|| format!("cannot open {}", dir.display()))?;
    Ok(store.load()?)
}

/// Median, interval and ratio of every metric of every source.
fn compare_rows(
    sources: &[(String, Vec<Value>)],
    metrics: &[String],
) -> anyhow::Result<Vec<CompareRow>> {
    let paths: Vec<&str> = metrics.iter().map(String::as_str).collect();
    let mut rows = Vec::new();
    for metric in metrics {
        let mut first_median = None;
        for (label, runs) in sources {
            let values = report::metrics_from_runs(runs, &paths)
                .remove(metric.as_str())
                .unwrap_or_default();
            if values.is_empty() {
                bail!("{label}: no run has the metric {metric:?}");
            }
            let summary = report::summarize(&values)
                .with_context(|| format!("{label}: cannot summarise {metric}"))?;
            let first = *first_median.get_or_insert(summary.median);
            rows.push(CompareRow {
                source: label.clone(),
                metric: metric.clone(),
                n: summary.n,
                median: summary.median,
                median_ci95: report::median_ci95(&values),
                mean: summary.mean,
                mean_ci95_half: summary.ci95_half_width(),
                ratio_to_first: (first != 0.0).then(|| summary.median / first),
            });
        }
    }
    Ok(rows)
}

/// A Markdown table (it reads fine in a terminal and pastes into a README).
fn render(rows: &[CompareRow]) -> String {
    let mut out = String::from(
        "| metric | source | n | median | median 95% CI | mean ± 95% CI | ratio to first |\n\
         |---|---|---:|---:|---|---|---:|\n",
    );
    for r in rows {
        let ci = r
            .median_ci95
            .map(|(lo, hi)| format!("[{}, {}]", num(lo), num(hi)))
            .unwrap_or_else(|| "n < 6".to_string());
        let ratio = r
            .ratio_to_first
            .map(|x| format!("{x:.3}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} ± {} | {} |\n",
            r.metric,
            r.source,
            r.n,
            num(r.median),
            ci,
            num(r.mean),
            num(r.mean_ci95_half),
            ratio
        ));
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
            .map(|t| json!({"axes": {"loss": "0"}, "flows": [{"completion_s": t}]}))
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
            table.contains("| flows.0.completion_s | emu | 7 | 8.000 |"),
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
        let f = parse_filters(&["loss=0".into()]).unwrap();
        assert!(matches(&runs(&[1.0])[0], &f));
        assert!(!matches(&runs(&[1.0])[0], &[("loss".into(), "1".into())]));
        assert!(parse_filters(&["loss".into()]).is_err());
    }
}
