//! From runs to summaries: metric extraction, `summary.csv`, and human-readable tables.

mod csv;
mod flatten;
mod table;

pub use csv::{summary_csv, write_summary_csv};
pub use flatten::{flatten_numeric, metrics_from_runs, SKIPPED_KEY};
pub use table::{incomplete_warnings, render_table};

use serde_json::Value;

use crate::stats::{summarize, Summary};

/// The summary of one metric at one sweep point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SummaryRow {
    /// Index of the sweep point.
    pub point: usize,
    /// Sweep axis names and their values at this point, in sweep order.
    pub axes: Vec<(String, String)>,
    /// Dotted metric path, e.g. `flows.0.goodput_bps`.
    pub metric: String,
    /// Statistics over the repetitions at this point.
    pub summary: Summary,
}

/// One row per numeric metric found in `runs` (the repetitions of one sweep point), by metric name.
///
/// Only measured values count: a metric that is absent (`null` or missing: the engine could not
/// measure it) in some runs is summarised over the runs that have it, and its `n` says how many
/// those were; a metric absent from every run has no row. A measured `0` is a value like any
/// other.
pub fn summary_rows(point: usize, axes: &[(String, String)], runs: &[Value]) -> Vec<SummaryRow> {
    let mut metrics = std::collections::BTreeMap::<String, Vec<f64>>::new();
    for run in runs {
        for (k, v) in flatten_numeric(run) {
            metrics.entry(k).or_default().push(v);
        }
    }
    metrics
        .into_iter()
        // JSON numbers are finite and each list is non-empty, so summarize cannot fail here.
        .filter_map(|(metric, values)| {
            let summary = summarize(&values).ok()?;
            Some(SummaryRow {
                point,
                axes: axes.to_vec(),
                metric,
                summary,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_cover_every_metric_with_its_own_n() {
        let runs = [
            json!({"id": "a", "goodput_bps": 1.0, "loss": 0.1}),
            json!({"id": "b", "goodput_bps": 3.0}),
        ];
        let axes = vec![("rate".to_owned(), "10Mbit".to_owned())];
        let rows = summary_rows(4, &axes, &runs);
        let got: Vec<(&str, usize, f64)> = rows
            .iter()
            .map(|r| (r.metric.as_str(), r.summary.n, r.summary.mean))
            .collect();
        assert_eq!(got, [("goodput_bps", 2, 2.0), ("loss", 1, 0.1)]);
        assert!(rows.iter().all(|r| r.point == 4 && r.axes == axes));
    }

    #[test]
    fn summary_csv_excludes_absent_values() {
        // Two emulator runs: the first measured no completion (null), neither measured
        // congestion events; a measured zero loss counts.
        let runs = [
            json!({"flows": [{"completion_s": null, "congestion_events": null, "packets_lost": 0}]}),
            json!({"flows": [{"completion_s": 3.0, "congestion_events": null, "packets_lost": 4}]}),
        ];
        let csv = summary_csv(&summary_rows(0, &[], &runs));
        let lines: Vec<&str> = csv.lines().collect();
        // completion_s: n = 1 and mean 3 (a zero in place of the null would give mean 1.5).
        // A single value has no sd and no interval: empty fields, not zeros.
        assert_eq!(lines[1], "0,flows.0.completion_s,1,3,,,,3,3,3", "{csv}");
        assert!(lines[2].starts_with("0,flows.0.packets_lost,2,2,"), "{csv}");
        assert!(!csv.contains("congestion_events"), "{csv}");
        assert_eq!(lines.len(), 3, "{csv}");
    }
}
