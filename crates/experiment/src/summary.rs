//! A sweep's summary: `summary.csv`, every numeric metric per point, from the stored runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use analysis::SummaryRow;
use results::store::ResultsStore;
use scenario::model::RunSpec;
use scenario::LoadedScenario;
use serde_json::Value;

use crate::error::ExperimentError;
use results::layout::SUMMARY_FILE;

/// Top-level result fields that identify or describe a run rather than measure it; averaging
/// them (a mean seed, a mean point index) would only clutter the summary.
const IDENTIFIERS: [&str; 4] = ["seed", "point", "rep", "events"];

/// Writes `out/summary.csv` from the stored runs of this sweep and returns its rows.
pub fn write(
    out: &Path,
    loaded: &LoadedScenario,
    runs: &[RunSpec],
    store: &ResultsStore,
) -> Result<Vec<SummaryRow>, ExperimentError> {
    // One stored line at a time, reduced to its numbers at once: at the point limit the
    // runs as `Value`s would be the largest thing in memory.
    let mut acc = Accumulator::new(runs);
    store.for_each_result(|line| acc.add(line))?;
    let rows = acc.rows(loaded);
    analysis::write_summary_csv(&out.join(SUMMARY_FILE), &rows)?;
    Ok(rows)
}

/// Summary rows point by point. Only lines of this sweep's runs count: a results directory
/// resumed with fewer repetitions still holds the extra ones, and they were not asked for.
pub fn rows(loaded: &LoadedScenario, runs: &[RunSpec], stored: &[Value]) -> Vec<SummaryRow> {
    rows_of(loaded, runs, stored.iter().cloned())
}

/// [`rows`] over owned lines.
fn rows_of(
    loaded: &LoadedScenario,
    runs: &[RunSpec],
    stored: impl IntoIterator<Item = Value>,
) -> Vec<SummaryRow> {
    let mut acc = Accumulator::new(runs);
    for line in stored {
        acc.add(line);
    }
    acc.rows(loaded)
}

/// Every numeric metric of every wanted run, by point: the numbers only, so runs can be added
/// one at a time and dropped.
struct Accumulator<'a> {
    wanted: BTreeMap<&'a str, usize>,
    seen: BTreeSet<String>,
    by_point: BTreeMap<usize, BTreeMap<String, Vec<f64>>>,
}

impl<'a> Accumulator<'a> {
    fn new(runs: &'a [RunSpec]) -> Self {
        Accumulator {
            wanted: runs.iter().map(|r| (r.id.as_str(), r.point)).collect(),
            seen: BTreeSet::new(),
            by_point: BTreeMap::new(),
        }
    }

    fn add(&mut self, line: Value) {
        let Some(id) = line.get("id").and_then(Value::as_str) else {
            return;
        };
        // finalize already deduplicated; this guards a summary of a store not yet finalized.
        let Some(&point) = self.wanted.get(id) else {
            return;
        };
        if !self.seen.insert(id.to_string()) {
            return;
        }
        let metrics = self.by_point.entry(point).or_default();
        for (k, v) in analysis::flatten_numeric(&measurements(line)) {
            metrics.entry(k).or_default().push(v);
        }
    }

    /// The rows, point by point and metric by metric (what `analysis::summary_rows` gives).
    fn rows(self, loaded: &LoadedScenario) -> Vec<SummaryRow> {
        let mut rows = Vec::new();
        for (point, metrics) in self.by_point {
            let axes = loaded
                .points
                .get(point)
                .map(|p| p.axes.as_slice())
                .unwrap_or_default();
            for (metric, values) in metrics {
                // JSON numbers are finite and each list is non-empty, so this cannot fail.
                if let Ok(summary) = analysis::summarize(&values) {
                    rows.push(SummaryRow {
                        point,
                        axes: axes.to_vec(),
                        metric,
                        summary,
                    });
                }
            }
        }
        rows
    }
}

/// `line` without its identifier fields.
fn measurements(mut v: Value) -> Value {
    if let Value::Object(map) = &mut v {
        for key in IDENTIFIERS {
            map.remove(key);
        }
    }
    v
}

/// Flow names of the point with the most flows (a sweep over flow counts changes them): the
/// columns a table of the summary shows.
pub fn flow_names(loaded: &LoadedScenario) -> Vec<String> {
    loaded
        .points
        .iter()
        .max_by_key(|p| p.scenario.flows.len())
        .map(|p| p.scenario.flows.iter().map(|f| f.name.clone()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loaded(points: usize) -> LoadedScenario {
        let text = "[run]\nduration = \"1s\"\n";
        let axis = vec![format!(
            "link.delay={}",
            (0..points)
                .map(|i| format!("{}ms", i + 1))
                .collect::<Vec<_>>()
                .join(",")
        )];
        scenario::parse_str(text, "t.toml", Path::new("."), &[], &axis).expect("valid scenario")
    }

    fn spec(id: &str, point: usize, rep: u32, seed: u64) -> RunSpec {
        RunSpec {
            id: id.into(),
            point,
            rep,
            seed,
        }
    }

    #[test]
    fn rows_group_by_point_skip_identifiers_and_foreign_runs() {
        let l = loaded(2);
        let runs = vec![
            spec("p0-r0", 0, 0, 1),
            spec("p0-r1", 0, 1, 2),
            spec("p1-r0", 1, 0, 3),
        ];
        let stored = vec![
            json!({"id": "p0-r0", "point": 0, "seed": 1, "rep": 0, "events": 5, "x": 1.0}),
            json!({"id": "p0-r1", "point": 0, "seed": 2, "rep": 1, "events": 6, "x": 3.0}),
            json!({"id": "p1-r0", "point": 1, "seed": 3, "rep": 0, "events": 7, "x": 10.0}),
            json!({"id": "p0-r9", "point": 0, "seed": 9, "rep": 9, "events": 8, "x": 100.0}),
        ];
        let r = rows(&l, &runs, &stored);
        let got: Vec<(usize, &str, usize, f64)> = r
            .iter()
            .map(|r| (r.point, r.metric.as_str(), r.summary.n, r.summary.mean))
            .collect();
        assert_eq!(got, [(0, "x", 2, 2.0), (1, "x", 1, 10.0)]);
        assert_eq!(r[1].axes, l.points[1].axes);
    }
}
