//! A results directory as the figures see it: the runs of `results.jsonl` (as JSON, so a metric
//! added to the schema later is plotted by its name without a change here), the sweep points of
//! `sweep.json`, and the time series files under `series/`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::FigureError;
use results::layout::{
    ResultsLayout, DECLARED_FIGURES_FILE, MANIFEST_FILE, RESULTS_FILE, SERIES_DIR,
};

/// One stored run.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Run id (`p{point}-r{rep}`).
    pub id: String,
    /// Sweep point index.
    pub point: usize,
    /// Repetition index.
    pub rep: u32,
    /// The whole JSON line (metrics are read from it by dotted path).
    pub json: Value,
    /// Every numeric leaf by dotted path (`flows.0.goodput_bps`).
    pub metrics: BTreeMap<String, f64>,
}

/// A flow as the scenario declared it (from `sweep.json`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowInfo {
    /// Flow name.
    pub name: String,
    /// Stack (`Quic`, `Tcp` … as serialised).
    pub stack: String,
    /// Workload kind (`Download`, `Bulk` …).
    pub workload: String,
}

/// One sweep point.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointData {
    /// Point index.
    pub index: usize,
    /// Axis name → value, in sweep order.
    pub axes: Vec<(String, String)>,
    /// Scenario duration, s (absent when `sweep.json` is missing).
    pub duration_s: Option<f64>,
    /// Measurement window start, s.
    pub measure_from_s: Option<f64>,
    /// Measurement window end, s.
    pub measure_until_s: Option<f64>,
    /// The point's flows.
    pub flows: Vec<FlowInfo>,
    /// Its bottleneck in words (absent when `sweep.json` is missing).
    pub path: Option<String>,
    /// The figures its scenario asks for (`[[figure]]`).
    pub figures: Vec<crate::declared::DeclaredSpec>,
}

/// Everything the figures and the report read from a results directory.
#[derive(Debug, Clone)]
pub struct ResultsDir {
    /// The directory.
    pub dir: PathBuf,
    /// Scenario name.
    pub scenario: String,
    /// Base seed (absent without `sweep.json`).
    pub base_seed: Option<u64>,
    /// Sweep points in index order.
    pub points: Vec<PointData>,
    /// Runs in file order.
    pub runs: Vec<RunData>,
    /// Ids of runs that have a series file.
    pub series: BTreeSet<String>,
}

#[derive(Deserialize)]
struct Manifest {
    scenario: String,
    base_seed: u64,
    points: Vec<ManifestPoint>,
}

#[derive(Deserialize)]
struct ManifestPoint {
    axes: Vec<(String, String)>,
    scenario: ManifestScenario,
}

#[derive(Deserialize)]
struct ManifestScenario {
    duration: Option<Secs>,
    measure_from: Option<Secs>,
    measure_until: Option<Secs>,
    #[serde(default)]
    flows: Vec<ManifestFlow>,
    /// The bottleneck as recorded (both directions), for [`crate::path::describe`].
    #[serde(default)]
    bottleneck: Option<Value>,
}

/// `figures.json`: the declared figures and, per point, the indices of its own.
#[derive(Deserialize)]
struct DeclaredFile {
    figures: Vec<crate::declared::DeclaredSpec>,
    points: Vec<Vec<usize>>,
}

#[derive(Deserialize)]
struct Secs {
    secs: u64,
    nanos: u32,
}

impl Secs {
    fn seconds(&self) -> f64 {
        self.secs as f64 + f64::from(self.nanos) / 1e9
    }
}

#[derive(Deserialize)]
struct ManifestFlow {
    name: String,
    /// The stack's variant with its knobs (`{"Quic": {..}}`).
    transport: Value,
    workload: Value,
}

/// The variant name of a serde enum value (`"Quic"`, `{"Bulk": {..}}` → `Bulk`).
fn variant_name(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => m.keys().next().cloned().unwrap_or_default(),
        other => other.to_string(),
    }
}

impl ResultsDir {
    /// Reads `dir`. Fails when `results.jsonl` is missing or a line is not JSON; a missing
    /// `sweep.json` is tolerated (the points are then taken from the runs' own axes).
    pub fn open(dir: &Path) -> Result<ResultsDir, FigureError> {
        let results = dir.join(RESULTS_FILE);
        if !results.is_file() {
            return Err(FigureError::NotResults(dir.to_path_buf()));
        }
        let file = fsutil::open_read(&results).map_err(FigureError::io(&results))?;
        let mut runs = Vec::new();
        for (i, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(FigureError::io(&results))?;
            if line.trim().is_empty() {
                continue;
            }
            let json: Value = serde_json::from_str(&line).map_err(|e| FigureError::Json {
                path: results.clone(),
                line: i + 1,
                source: e,
            })?;
            runs.push(run_data(json));
        }
        let manifest_path = dir.join(MANIFEST_FILE);
        let manifest: Option<Manifest> = if manifest_path.is_file() {
            let f = fsutil::open_read(&manifest_path).map_err(FigureError::io(&manifest_path))?;
            Some(
                serde_json::from_reader(BufReader::new(f)).map_err(|e| FigureError::Json {
                    path: manifest_path.clone(),
                    line: e.line(),
                    source: e,
                })?,
            )
        } else {
            None
        };
        let (scenario, base_seed, points) = match manifest {
            Some(m) => (
                m.scenario,
                Some(m.base_seed),
                m.points
                    .into_iter()
                    .enumerate()
                    .map(|(index, p)| PointData {
                        index,
                        axes: p.axes,
                        duration_s: p.scenario.duration.as_ref().map(Secs::seconds),
                        measure_from_s: p.scenario.measure_from.as_ref().map(Secs::seconds),
                        measure_until_s: p.scenario.measure_until.as_ref().map(Secs::seconds),
                        path: p
                            .scenario
                            .bottleneck
                            .as_ref()
                            .and_then(crate::path::describe),
                        figures: Vec::new(),
                        flows: p
                            .scenario
                            .flows
                            .iter()
                            .map(|f| FlowInfo {
                                name: f.name.clone(),
                                stack: variant_name(&f.transport),
                                workload: variant_name(&f.workload),
                            })
                            .collect(),
                    })
                    .collect(),
            ),
            None => (
                runs.first()
                    .and_then(|r| r.json.get("scenario")?.as_str().map(str::to_string))
                    .unwrap_or_default(),
                None,
                points_from_runs(&runs),
            ),
        };
        let mut points = points;
        let declared_path = dir.join(DECLARED_FIGURES_FILE);
        if declared_path.is_file() {
            let f = fsutil::open_read(&declared_path).map_err(FigureError::io(&declared_path))?;
            let declared: DeclaredFile =
                serde_json::from_reader(BufReader::new(f)).map_err(|e| FigureError::Json {
                    path: declared_path.clone(),
                    line: e.line(),
                    source: e,
                })?;
            for (p, mine) in points.iter_mut().zip(&declared.points) {
                p.figures = mine
                    .iter()
                    .filter_map(|&k| declared.figures.get(k).cloned())
                    .collect();
            }
        }
        let mut series = BTreeSet::new();
        let sdir = dir.join(SERIES_DIR);
        if let Ok(entries) = std::fs::read_dir(&sdir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(id) = name.strip_suffix(".csv") {
                    if e.file_type().is_ok_and(|t| t.is_file()) {
                        series.insert(id.to_string());
                    }
                }
            }
        }
        Ok(ResultsDir {
            dir: dir.to_path_buf(),
            scenario,
            base_seed,
            points,
            runs,
            series,
        })
    }

    /// Runs of point `p`, in repetition order.
    pub fn runs_of(&self, p: usize) -> Vec<&RunData> {
        let mut v: Vec<&RunData> = self.runs.iter().filter(|r| r.point == p).collect();
        v.sort_by_key(|r| r.rep);
        v
    }

    /// Repetitions the sweep asked for, as far as the directory shows: the highest repetition
    /// index recorded at any point, plus one.
    pub fn reps(&self) -> u32 {
        self.runs.iter().map(|r| r.rep + 1).max().unwrap_or(0)
    }

    /// Axis names in sweep order (union over points, first seen first).
    pub fn axis_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (k, _) in self.points.iter().flat_map(|p| &p.axes) {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
        names
    }

    /// Flow names by index over every point (see [`ResultsDir::flow_names_of`]; `flows.N.name`
    /// of the runs when `sweep.json` is missing).
    pub fn flow_names(&self) -> Vec<String> {
        if !self.points.iter().all(|p| p.flows.is_empty()) {
            return Self::flow_names_of(&self.points);
        }
        let mut names: Vec<String> = Vec::new();
        for r in &self.runs {
            if let Some(flows) = r.json.get("flows").and_then(Value::as_array) {
                for (i, f) in flows.iter().enumerate() {
                    if names.len() <= i {
                        names.push(
                            f.get("name")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                        );
                    }
                }
            }
        }
        names
    }

    /// Flow names by index as the given points have them: a name where every point with that
    /// flow agrees on it, empty where they differ (a study's experiments name their flows
    /// differently, so a figure of one experiment must not borrow another's names).
    pub fn flow_names_of<'a>(points: impl IntoIterator<Item = &'a PointData>) -> Vec<String> {
        let mut names: Vec<Option<String>> = Vec::new();
        for p in points {
            for (i, f) in p.flows.iter().enumerate() {
                if names.len() <= i {
                    names.push(Some(f.name.clone()));
                } else if names[i].as_deref().is_some_and(|n| n != f.name) {
                    names[i] = None;
                }
            }
        }
        names.into_iter().map(Option::unwrap_or_default).collect()
    }

    /// Indices of the flows that are copies of an earlier one in every point that has them: a
    /// flow spec with `count = n` expands into flows `name.0` … `name.{n-1}`, alike by
    /// construction, so figures of `name.0` stand for the rest.
    pub fn copied_flows(&self) -> std::collections::BTreeSet<usize> {
        let mut copy: Vec<Option<bool>> = Vec::new();
        for p in &self.points {
            for (i, f) in p.flows.iter().enumerate() {
                let is_copy = f.name.rsplit_once('.').is_some_and(|(base, k)| {
                    k.parse::<u32>().is_ok_and(|k| k >= 1)
                        && p.flows.iter().any(|g| g.name == format!("{base}.0"))
                });
                if copy.len() <= i {
                    copy.resize(i + 1, None);
                }
                copy[i] = Some(copy[i].unwrap_or(true) && is_copy);
            }
        }
        copy.iter()
            .enumerate()
            .filter(|(_, c)| **c == Some(true))
            .map(|(i, _)| i)
            .collect()
    }

    /// Leaves out of a default set of metrics those of the [`copied_flows`](Self::copied_flows):
    /// they would repeat the first copy's figures once per copy.
    pub fn drop_copied_flows(&self, metrics: &mut Vec<String>) {
        let copies = self.copied_flows();
        metrics.retain(|m| {
            !m.strip_prefix("flows.")
                .and_then(|rest| rest.split('.').next())
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| copies.contains(&i))
        });
    }

    /// Path of the series file of run `id`.
    pub fn series_path(&self, id: &str) -> PathBuf {
        ResultsLayout::new(&self.dir).series(id)
    }
}

impl RunData {
    /// The value of `metric` in this run: a metric path, or a ratio `A / B` of two
    /// ([`crate::metric::ratio`]; none when B is zero or either is absent).
    pub fn value(&self, metric: &str) -> Option<f64> {
        match crate::metric::ratio(metric) {
            Some((a, b)) => {
                let (a, b) = (self.metrics.get(a)?, self.metrics.get(b)?);
                (*b != 0.0).then(|| a / b)
            }
            None => self.metrics.get(metric).copied(),
        }
    }
}

/// Identifier fields that are numbers but not measurements.
const IDENTIFIERS: [&str; 4] = ["seed", "point", "rep", "events"];

fn run_data(json: Value) -> RunData {
    let mut measured = json.clone();
    if let Value::Object(m) = &mut measured {
        for k in IDENTIFIERS {
            m.remove(k);
        }
    }
    RunData {
        id: json
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        point: json.get("point").and_then(Value::as_u64).unwrap_or(0) as usize,
        rep: json.get("rep").and_then(Value::as_u64).unwrap_or(0) as u32,
        metrics: analysis::flatten_numeric(&measured),
        json,
    }
}

/// Points reconstructed from the runs (no `sweep.json`): index and axes only.
fn points_from_runs(runs: &[RunData]) -> Vec<PointData> {
    let mut by_point: BTreeMap<usize, Vec<(String, String)>> = BTreeMap::new();
    for r in runs {
        by_point.entry(r.point).or_insert_with(|| {
            r.json
                .get("axes")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default()
        });
    }
    let max = by_point.keys().next_back().copied().map_or(0, |m| m + 1);
    (0..max)
        .map(|index| PointData {
            index,
            axes: by_point.get(&index).cloned().unwrap_or_default(),
            ..PointData::default()
        })
        .collect()
}
