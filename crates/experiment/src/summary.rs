//! A sweep's summary: `summary.csv`, every numeric metric per point, from the stored runs, and
//! `comparisons.csv` when the scenario has variants: every variant against the first, point by
//! point, repetitions paired by index (`analysis::paired`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use analysis::SummaryRow;
use results::store::ResultsStore;
use scenario::model::RunSpec;
use scenario::LoadedScenario;
use serde_json::Value;

use crate::error::ExperimentError;
use results::layout::{COMPARISONS_FILE, SUMMARY_FILE};

/// Top-level result fields that identify or describe a run rather than measure it; averaging
/// them (a mean seed, a mean point index) would only clutter the summary.
const IDENTIFIERS: [&str; 4] = ["seed", "point", "rep", "events"];

/// Writes `out/summary.csv` from the stored runs of this sweep, and `out/comparisons.csv` when
/// its points have at least two variants, and returns the summary rows.
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
    let paired = acc.paired(loaded);
    let rows = acc.rows(loaded);
    analysis::write_summary_csv(&out.join(SUMMARY_FILE), &rows)?;
    if paired.has_pairs() {
        // The first variant is the baseline, so no name can be unknown.
        let comparisons = analysis::paired::paired_rows(&paired, None).unwrap_or_default();
        analysis::paired::write_comparisons_csv(&out.join(COMPARISONS_FILE), &comparisons)?;
    }
    Ok(rows)
}

/// Summary rows point by point. Only lines of this sweep's runs count: a results directory
/// resumed with fewer repetitions still holds the extra ones, and they were not asked for.
pub fn rows(loaded: &LoadedScenario, runs: &[RunSpec], stored: &[Value]) -> Vec<SummaryRow> {
    rows_of(loaded, runs, stored.iter().cloned())
}

/// Every numeric metric of this sweep's stored runs: point → metric → (repetition, value), in
/// store order, for tables that pair runs themselves (a study pairs its protocols' readings).
pub fn values(
    runs: &[RunSpec],
    stored: &[Value],
) -> BTreeMap<usize, BTreeMap<String, Vec<(u32, f64)>>> {
    let mut acc = Accumulator::new(runs);
    for line in stored {
        acc.add(line.clone());
    }
    acc.by_point
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

/// Every numeric metric of every wanted run, by point: the numbers and their repetition only, so
/// runs can be added one at a time and dropped.
struct Accumulator<'a> {
    wanted: BTreeMap<&'a str, (usize, u32)>,
    seen: BTreeSet<String>,
    by_point: BTreeMap<usize, BTreeMap<String, Vec<(u32, f64)>>>,
}

impl<'a> Accumulator<'a> {
    fn new(runs: &'a [RunSpec]) -> Self {
        Accumulator {
            wanted: runs
                .iter()
                .map(|r| (r.id.as_str(), (r.point, r.rep)))
                .collect(),
            seen: BTreeSet::new(),
            by_point: BTreeMap::new(),
        }
    }

    fn add(&mut self, line: Value) {
        let Some(id) = line.get("id").and_then(Value::as_str) else {
            return;
        };
        // finalize already deduplicated; this guards a summary of a store not yet finalized.
        let Some(&(point, rep)) = self.wanted.get(id) else {
            return;
        };
        if !self.seen.insert(id.to_string()) {
            return;
        }
        let metrics = self.by_point.entry(point).or_default();
        for (k, v) in analysis::flatten_numeric(&measurements(line)) {
            metrics.entry(k).or_default().push((rep, v));
        }
    }

    /// The values by point, metric and repetition for the paired comparisons of variants;
    /// points without a `variant` axis add nothing.
    fn paired(&self, loaded: &LoadedScenario) -> analysis::paired::PairedSet {
        let mut set = analysis::paired::PairedSet::new();
        for (point, metrics) in &self.by_point {
            let Some(axes) = loaded.points.get(*point).map(|p| p.axes.as_slice()) else {
                continue;
            };
            for (metric, values) in metrics {
                for &(rep, v) in values {
                    set.add(axes, rep, metric, v);
                }
            }
        }
        set
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
                let values: Vec<f64> = values.into_iter().map(|(_, v)| v).collect();
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

    #[test]
    fn variants_are_paired_by_repetition_point_by_point() {
        let text =
            "[run]\nduration = \"1s\"\n\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"b\"\nset = { \"run.duration\" = \"2s\" }\n";
        let axis = vec!["link.delay=1ms,2ms".to_string()];
        let l = scenario::parse_str(text, "t.toml", Path::new("."), &[], &axis).expect("valid");
        let variant = |p: &scenario::model::SweepPoint| {
            p.axes
                .iter()
                .find(|(k, _)| k == "variant")
                .map(|(_, v)| v.clone())
        };
        let runs: Vec<RunSpec> = (0..l.points.len())
            .flat_map(|p| (0..3).map(move |r| spec(&format!("p{p}-r{r}"), p, r, 0)))
            .collect();
        // Variant b is variant a plus the repetition index + 1 at every point.
        let stored: Vec<Value> = runs
            .iter()
            .map(|r| {
                let b = variant(&l.points[r.point]).as_deref() == Some("b");
                let delay = l.points[r.point].axes.iter().any(|(_, v)| v == "2ms");
                let offset = if delay { 10.0 } else { 0.0 };
                let x = offset + f64::from(r.rep) + if b { f64::from(r.rep) + 1.0 } else { 0.0 };
                json!({"id": r.id, "x": x})
            })
            .collect();
        let mut acc = Accumulator::new(&runs);
        for line in stored {
            acc.add(line);
        }
        let rows = analysis::paired::paired_rows(&acc.paired(&l), None).unwrap();
        // Two delays, one comparison each (b against a), whatever the points' order.
        assert_eq!(rows.len(), 2, "{rows:?}");
        for r in &rows {
            assert_eq!(
                (r.variant.as_str(), r.baseline.as_str(), r.n_pairs),
                ("b", "a", 3)
            );
            // Differences 1, 2, 3: mean 2; pooling the delays would mix in their offset of 10.
            assert_eq!(r.diff, 2.0);
            assert!(r.point.iter().all(|(k, _)| k != "variant"));
        }
        assert_ne!(rows[0].point, rows[1].point);
    }
}
