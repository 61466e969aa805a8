//! The seam to executors in other processes (Dask): a sweep opened for execution elsewhere,
//! and the function a worker calls on one task.
//!
//! Tasks and outcomes cross as the JSON of `experiment::Task` / `experiment::TaskOutcome`, so a
//! worker needs nothing but this module and the task's text; the client records outcomes into
//! the results store as they arrive and finalises it in run order (`experiment::OpenSweep`).

use std::sync::Mutex;

use experiment::{OpenSweep, Task, TaskOutcome};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{experiment_error, ExperimentError};
use crate::scenario_py::outcome_dict;

/// Parses a task's JSON, naming what was wrong.
fn parse_task(task: &str) -> PyResult<Task> {
    serde_json::from_str(task)
        .map_err(|e| ExperimentError::new_err(format!("not a quiclab task: {e}")))
}

/// Runs one task (the JSON of an `experiment::Task`) with the simulator, the GIL released, and
/// returns `(kind, outcome JSON)`: kind is `"done"`, `"panicked"` (a bug the same task repeats;
/// recorded as an error record) or `"failed"` (no result; worth retrying). Pure: the same task
/// gives the same outcome on any machine.
#[pyfunction]
pub fn execute_task(py: Python<'_>, task: &str) -> PyResult<(&'static str, String)> {
    let task = parse_task(task)?;
    let engine = sim::SimEngine::default();
    let outcome = py.detach(|| experiment::execute_task(&engine, &task));
    let kind = match &outcome {
        TaskOutcome::Done(_) => "done",
        TaskOutcome::Panicked(_) => "panicked",
        TaskOutcome::Failed(_) => "failed",
    };
    let text = serde_json::to_string(&outcome)
        .map_err(|e| ExperimentError::new_err(format!("cannot serialise the outcome: {e}")))?;
    Ok((kind, text))
}

/// The outcome JSON of a task that produced no result for `message` (a worker lost, a task
/// that kept failing after its retries): recorded as a failure, retried on resume.
#[pyfunction]
pub fn failed_outcome(message: String) -> PyResult<String> {
    serde_json::to_string(&TaskOutcome::Failed(message))
        .map_err(|e| ExperimentError::new_err(format!("cannot serialise the outcome: {e}")))
}

/// A sweep opened for execution elsewhere (`experiment::OpenSweep`): the results directory is
/// locked, checked and resumable from the moment it is opened until [`NativeOpenSweep::finish`]
/// or [`NativeOpenSweep::close`] (or the object is collected).
#[pyclass(module = "quiclab._native", frozen)]
pub struct NativeOpenSweep {
    /// `None` once finished or closed.
    inner: Mutex<Option<OpenSweep<'static>>>,
}

impl NativeOpenSweep {
    /// Wraps an open sweep.
    pub fn new(open: OpenSweep<'static>) -> Self {
        NativeOpenSweep {
            inner: Mutex::new(Some(open)),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&OpenSweep<'static>) -> PyResult<T>) -> PyResult<T> {
        let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(open) => f(open),
            None => Err(ExperimentError::new_err(
                "this sweep is finished or closed; open it again (resume) to go on",
            )),
        }
    }
}

#[pymethods]
impl NativeOpenSweep {
    /// Runs of the sweep.
    #[getter]
    fn total(&self) -> PyResult<usize> {
        self.with(|o| Ok(o.total()))
    }

    /// Runs already complete in the directory when it was opened (resumed).
    #[getter]
    fn resumed(&self) -> PyResult<usize> {
        self.with(|o| Ok(o.resumed()))
    }

    /// The tasks not yet complete in the store, in run order, as JSON (optionally only shard
    /// `(i, n)`: runs whose index is `i` modulo `n`).
    #[pyo3(signature = (shard = None))]
    fn pending(&self, shard: Option<(usize, usize)>) -> PyResult<Vec<String>> {
        if let Some((i, n)) = shard {
            if n == 0 || i >= n {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "shard ({i}, {n}): need 0 <= i < n"
                )));
            }
        }
        self.with(|o| {
            o.pending(shard)
                .iter()
                .map(|t| {
                    serde_json::to_string(t).map_err(|e| {
                        ExperimentError::new_err(format!("cannot serialise a task: {e}"))
                    })
                })
                .collect()
        })
    }

    /// Records the outcome (JSON from `execute_task` or `failed_outcome`) of `task` (its JSON
    /// from `pending`). A run recorded before keeps its line (a retried task recorded twice is
    /// one line). Raises `ExperimentError` if the outcome cannot be stored.
    fn record(&self, py: Python<'_>, task: &str, outcome: &str) -> PyResult<()> {
        let task = parse_task(task)?;
        let outcome: TaskOutcome = serde_json::from_str(outcome)
            .map_err(|e| ExperimentError::new_err(format!("not a quiclab task outcome: {e}")))?;
        self.with(|o| {
            py.detach(|| o.record(&task, outcome))
                .map_err(|e| experiment_error(&e))
        })
    }

    /// Finalises the store in run order and writes `summary.csv` if every task has an outcome,
    /// else leaves it resumable; returns the outcome dict of `NativeScenario.sweep`. Unlocks
    /// the directory.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let open = self
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| ExperimentError::new_err("this sweep is already finished or closed"))?;
        let outcome = py
            .detach(|| open.finish())
            .map_err(|e| experiment_error(&e))?;
        outcome_dict(py, outcome)
    }

    /// Leaves the store as it is (resumable) and unlocks the directory. Does nothing if
    /// already finished or closed.
    fn close(&self) {
        drop(self.inner.lock().unwrap_or_else(|p| p.into_inner()).take());
    }
}
