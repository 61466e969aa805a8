//! From runs to summaries: metric extraction, `summary.csv`, and human-readable tables.

mod csv;
mod flatten;
mod si;
mod table;

pub use csv::{summary_csv, write_summary_csv};
pub use flatten::{flatten_numeric, metrics_from_runs, SKIPPED_KEY};
pub use si::{si, si_pair};
pub use table::render_table;

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
/// A metric missing from some runs is summarised over the runs that have it; its n shows that.
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
}
