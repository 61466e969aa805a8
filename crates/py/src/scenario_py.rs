//! A loaded scenario and what can be run from it: one run, runs in memory, a sweep into a
//! results directory.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use experiment::Executor;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use scenario::model::RunSpec;
use scenario::LoadedScenario;

use crate::distributed_py::NativeOpenSweep;
use crate::errors::{experiment_error, run_error, scenario_error, ExperimentError};
use crate::running::interruptible;

/// Loads the scenario file `path` with `overrides` (`key=value`, as `--set`) and `axes`
/// (`key=v1,v2,...`, as `--vary`). Raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (path, overrides = Vec::new(), axes = Vec::new()))]
pub fn load_file(
    py: Python<'_>,
    path: PathBuf,
    overrides: Vec<String>,
    axes: Vec<String>,
) -> PyResult<NativeScenario> {
    let loaded = py
        .detach(|| scenario::load(&path, &overrides, &axes))
        .map_err(|e| scenario_error(py, &e))?;
    Ok(NativeScenario::new(loaded))
}

/// Loads scenario `text`. `file_name` names it in errors (and, without `.toml`, is the default
/// scenario name); relative paths inside it (rate traces) are resolved against `base_dir`.
/// Raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (text, file_name, base_dir, overrides = Vec::new(), axes = Vec::new()))]
pub fn load_text(
    py: Python<'_>,
    text: &str,
    file_name: &str,
    base_dir: PathBuf,
    overrides: Vec<String>,
    axes: Vec<String>,
) -> PyResult<NativeScenario> {
    let loaded = py
        .detach(|| scenario::parse_str(text, file_name, &base_dir, &overrides, &axes))
        .map_err(|e| scenario_error(py, &e))?;
    Ok(NativeScenario::new(loaded))
}

/// A scenario with its sweep expanded into points and runs (`scenario::LoadedScenario`).
#[pyclass(module = "quiclab._native", frozen)]
pub struct NativeScenario {
    loaded: Arc<LoadedScenario>,
    runs: Arc<Vec<RunSpec>>,
}

impl NativeScenario {
    fn new(loaded: LoadedScenario) -> Self {
        let runs = loaded.runs();
        NativeScenario {
            loaded: Arc::new(loaded),
            runs: Arc::new(runs),
        }
    }

    /// The loaded scenario (for the distributed module).
    pub fn loaded(&self) -> &LoadedScenario {
        &self.loaded
    }

    fn spec(&self, index: usize) -> PyResult<&RunSpec> {
        self.runs.get(index).ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "run index {index} out of range: the scenario has {} runs",
                self.runs.len()
            ))
        })
    }
}

/// One result line as `results.jsonl` holds it, and its series as `series/<id>.csv` holds
/// them (the header alone when none were recorded).
fn to_json(run: &results::Run) -> PyResult<(String, String)> {
    let value = serde_json::to_value(run)
        .map_err(|e| ExperimentError::new_err(format!("cannot serialise the result: {e}")))?;
    // The store's form (keys sorted): tables built from memory and from results.jsonl then
    // have their columns in the same order.
    let line = results::store::canonical(&value).to_string();
    Ok((line, run.series_csv()))
}

/// What one run of [`NativeScenario::run_many`] gave: id, result line, series, error.
type Outcome = (String, Option<String>, Option<String>, Option<String>);

#[pymethods]
impl NativeScenario {
    /// `run.name`, or the file name without `.toml`.
    #[getter]
    fn name(&self) -> String {
        self.loaded.name.clone()
    }

    /// `run.seed`, the base every run's seed derives from.
    #[getter]
    fn base_seed(&self) -> u64 {
        self.loaded.base_seed
    }

    /// `run.reps`: repetitions of every sweep point.
    #[getter]
    fn reps(&self) -> u32 {
        self.loaded.reps
    }

    /// Accepted input that is probably not what was meant, with its place.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.loaded.warnings.clone()
    }

    /// One line per flow saying what it does (stack, controller, workload and direction, size
    /// or duration), as `quiclab sim` prints before running: of sweep point `point`, or each
    /// distinct line of every point once when None.
    #[pyo3(signature = (point = None))]
    fn describe(&self, point: Option<usize>) -> PyResult<Vec<String>> {
        let Some(point) = point else {
            return Ok(self.loaded.describe_flows());
        };
        let p = self.loaded.points.get(point).ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "point {point} out of range: the scenario has {} points",
                self.loaded.points.len()
            ))
        })?;
        Ok(p.scenario.describe_flows())
    }

    /// Each sweep point's axis values: a list of `(key, value)` per point.
    #[getter]
    fn points(&self) -> Vec<Vec<(String, String)>> {
        self.loaded.points.iter().map(|p| p.axes.clone()).collect()
    }

    /// Every run in run order: `(id, point, rep, seed)`.
    #[getter]
    fn runs(&self) -> Vec<(String, usize, u32, u64)> {
        self.runs
            .iter()
            .map(|r| (r.id.clone(), r.point, r.rep, r.seed))
            .collect()
    }

    /// The resolved scenario of sweep point `point` as JSON (every key with its default
    /// filled in).
    fn point_json(&self, point: usize) -> PyResult<String> {
        let p = self.loaded.points.get(point).ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "point {point} out of range: the scenario has {} points",
                self.loaded.points.len()
            ))
        })?;
        serde_json::to_string(&p.scenario)
            .map_err(|e| ExperimentError::new_err(format!("cannot serialise the scenario: {e}")))
    }

    /// Runs run `index` (run order) with the simulator and returns `(result JSON, series
    /// CSV)`; the series has no rows unless `series`. Raises `RunError` if the run produced no
    /// result.
    #[pyo3(signature = (index, series = false))]
    fn run(&self, py: Python<'_>, index: usize, series: bool) -> PyResult<(String, String)> {
        let spec = self.spec(index)?.clone();
        let point = self.loaded.points.get(spec.point).ok_or_else(|| {
            ExperimentError::new_err(format!("run {} refers to a missing sweep point", spec.id))
        })?;
        let outputs = experiment::RunOutputs {
            trace_id: None,
            series,
            results_dir: None,
        };
        let engine = sim::SimEngine::default();
        let result = interruptible(py, |_| {
            experiment::execute_one(&engine, point, &spec, &outputs)
        })?;
        to_json(&result.map_err(|e| run_error(&spec.id, &e))?)
    }

    /// Runs the runs `indices` (all, in run order, when None) with the simulator on `jobs`
    /// threads (None: one per core), without a results directory. Returns one
    /// `(id, result JSON, series CSV, error)` per run, in the order asked: a run that failed
    /// has no result and its error message.
    #[pyo3(signature = (indices = None, jobs = None, series = false))]
    fn run_many(
        &self,
        py: Python<'_>,
        indices: Option<Vec<usize>>,
        jobs: Option<usize>,
        series: bool,
    ) -> PyResult<Vec<Outcome>> {
        let indices = indices.unwrap_or_else(|| (0..self.runs.len()).collect());
        let specs = indices
            .iter()
            .map(|&i| self.spec(i))
            .collect::<PyResult<Vec<&RunSpec>>>()?;
        let several = specs.len() > 1;
        let jobs_list = specs
            .iter()
            .map(|spec| {
                let point = self.loaded.points.get(spec.point).ok_or_else(|| {
                    ExperimentError::new_err(format!(
                        "run {} refers to a missing sweep point",
                        spec.id
                    ))
                })?;
                Ok(experiment::Job {
                    point,
                    spec,
                    outputs: experiment::RunOutputs {
                        trace_id: several.then(|| spec.id.clone()),
                        series,
                        results_dir: None,
                    },
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let engine = sim::SimEngine::default();
        let executor = experiment::Threads::new(jobs);
        // The executor itself (rather than `run_in_memory`, which never stops) so an interrupt
        // starts no new run; the runs in progress finish and the interrupt is raised.
        let slots: Mutex<Vec<Option<Result<results::Run, experiment::EngineError>>>> =
            Mutex::new((0..jobs_list.len()).map(|_| None).collect());
        interruptible(py, |stop| {
            let done = |i: usize, result| {
                let mut slots = slots.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(slot) = slots.get_mut(i) {
                    *slot = Some(result);
                }
            };
            executor.execute(&engine, &jobs_list, &|| stop.load(Ordering::SeqCst), &done)
        })?
        .map_err(|e| experiment_error(&e))?;
        let results = slots
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_iter()
            // Nothing stopped the executor (an interrupt has raised above), so a job it never
            // reported was abandoned.
            .map(|slot| slot.unwrap_or(Err(experiment::EngineError::Interrupted)));
        specs
            .iter()
            .zip(results)
            .map(|(spec, result)| match result {
                Ok(run) => {
                    let (line, series) = to_json(&run)?;
                    Ok((spec.id.clone(), Some(line), Some(series), None))
                }
                Err(e) => Ok((
                    spec.id.clone(),
                    None,
                    None,
                    Some(experiment::error::chain(&e)),
                )),
            })
            .collect()
    }

    /// Runs the sweep into the results directory `out` with the simulator on `jobs` threads
    /// (None: one per core), as `quiclab sim --out` does: refuses a directory with other
    /// results unless `resume`, records series into `out/series/` when `series`. Returns a
    /// dict: `finished` (bool), `total`, and either `failures` (list of `(id, message,
    /// recorded)`) or `complete` (runs in the store when interrupted). Raises
    /// `ExperimentError`; Ctrl-C stops the sweep (resumable) and raises KeyboardInterrupt.
    #[pyo3(signature = (out, jobs = None, resume = false, series = true))]
    fn sweep<'py>(
        &self,
        py: Python<'py>,
        out: PathBuf,
        jobs: Option<usize>,
        resume: bool,
        series: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let sweep = experiment::Sweep {
            loaded: &self.loaded,
            out: &out,
            resume,
            series,
        };
        let engine = sim::SimEngine::default();
        let executor = experiment::Threads::new(jobs);
        let outcome = interruptible(py, |stop| {
            experiment::run_sweep(
                &sweep,
                &engine,
                &executor,
                &|| stop.load(Ordering::SeqCst),
                &(),
            )
        })?
        .map_err(|e| experiment_error(&e))?;
        outcome_dict(py, outcome)
    }
    /// Opens the sweep's results directory `out` for execution elsewhere (Dask): checks and
    /// locks it as `sweep` does (refusing other results unless `resume`) and returns the
    /// handle that hands out pending tasks and records their outcomes.
    #[pyo3(signature = (out, resume = false, series = true))]
    fn open_sweep(
        &self,
        py: Python<'_>,
        out: PathBuf,
        resume: bool,
        series: bool,
    ) -> PyResult<NativeOpenSweep> {
        let sweep = experiment::Sweep {
            loaded: &self.loaded,
            out: &out,
            resume,
            series,
        };
        let open = py
            .detach(|| experiment::OpenSweep::open(&sweep).map(|o| o.into_owned()))
            .map_err(|e| experiment_error(&e))?;
        Ok(NativeOpenSweep::new(open))
    }
}

/// A sweep's outcome as a Python dict (see [`NativeScenario::sweep`]).
pub fn outcome_dict(
    py: Python<'_>,
    outcome: experiment::SweepOutcome,
) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    match outcome {
        experiment::SweepOutcome::Finished {
            total, failures, ..
        } => {
            d.set_item("finished", true)?;
            d.set_item("total", total)?;
            let failures: Vec<(String, String, bool)> = failures
                .into_iter()
                .map(|f| (f.id, f.message, f.recorded))
                .collect();
            d.set_item("failures", failures)?;
        }
        experiment::SweepOutcome::Interrupted {
            total, complete, ..
        } => {
            d.set_item("finished", false)?;
            d.set_item("total", total)?;
            d.set_item("complete", complete)?;
        }
    }
    Ok(d)
}
