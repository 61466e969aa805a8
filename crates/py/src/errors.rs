//! Python exceptions for the libraries' errors, with the same messages the CLI prints.
//!
//! One base class, [`QuiclabError`], so `except quiclab.QuiclabError` catches everything this
//! package raises on purpose; subclasses say which stage failed.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    quiclab,
    QuiclabError,
    PyException,
    "Base class of every error quiclab raises."
);
create_exception!(
    quiclab,
    ScenarioError,
    QuiclabError,
    "A scenario file, text or override is invalid. The message is `file:line:col: what; allowed: ...` as the CLI prints it; the attributes `file`, `line`, `column` (None when unknown), `message` and `allowed` (list of accepted values or keys) carry the parts."
);
create_exception!(
    quiclab,
    RunError,
    QuiclabError,
    "One run produced no result (the engine refused or failed it, or panicked)."
);
create_exception!(
    quiclab,
    FlowError,
    RunError,
    "A run finished, but a flow of it reported an error (a connection lost, a handshake refused): raised by `Scenario.run` unless `check=False`. The attributes `run` (the run id), `flows` (list of `(flow name, error)`) and `result` (the `RunResult`) carry the parts."
);
create_exception!(
    quiclab,
    ExperimentError,
    QuiclabError,
    "A sweep could not start, record or finish: the results directory holds other results, is locked by another sweep, cannot be written, or a results file cannot be read."
);

/// A [`ScenarioError`] exception with the error's parts as attributes.
pub fn scenario_error(py: Python<'_>, e: &scenario::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory
    // exhaustion; the message alone is still right if it did.
    let _ = value.setattr("file", e.file.clone());
    let _ = value.setattr("line", e.line);
    let _ = value.setattr("column", e.column);
    let _ = value.setattr("message", e.message.clone());
    let _ = value.setattr("allowed", e.allowed.clone());
    err
}

/// An [`ExperimentError`] exception with the error and its causes.
pub fn experiment_error(e: &experiment::ExperimentError) -> PyErr {
    ExperimentError::new_err(experiment::error::chain(e))
}

/// A [`RunError`] exception for run `id`.
pub fn run_error(id: &str, e: &experiment::EngineError) -> PyErr {
    RunError::new_err(format!("run {id} failed: {}", experiment::error::chain(e)))
}
