//! quiclab's Python binding: the `quiclab._native` extension module.
//!
//! A thin layer over the libraries the CLI uses — `scenario` to load a scenario with overrides
//! and sweep axes, `experiment` to run one run, a sweep in memory or a sweep into a results
//! directory, `analysis::compare` and `studies` for `compare` and `validate` — so Python gets the
//! same results as the `quiclab` command line (there is no second runner).
//! The pythonic API (DataFrames, `Results`, Dask) lives in `python/quiclab/`; this module
//! passes results across as the JSON text `results.jsonl` holds, which keeps one
//! serialisation of a run.
//!
//! The GIL is released while simulating ([`running::interruptible`]), so other Python threads
//! (a Dask worker's, a notebook's) carry on, and Ctrl-C (a notebook's interrupt) stops a sweep
//! cleanly: runs in progress finish, no new one starts, the results directory stays
//! resumable.

#![warn(missing_docs)]

pub mod distributed_py;
pub mod errors;
pub mod inference_py;
pub mod running;
pub mod scenario_py;
pub mod studies_py;
pub mod table_py;

use pyo3::prelude::*;

/// The extension module: exceptions, scenario loading and the run functions.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("QuiclabError", py.get_type::<errors::QuiclabError>())?;
    m.add("ScenarioError", py.get_type::<errors::ScenarioError>())?;
    m.add("RunError", py.get_type::<errors::RunError>())?;
    m.add("FlowError", py.get_type::<errors::FlowError>())?;
    m.add("ExperimentError", py.get_type::<errors::ExperimentError>())?;
    m.add_class::<scenario_py::NativeScenario>()?;
    m.add_class::<distributed_py::NativeOpenSweep>()?;
    m.add_function(wrap_pyfunction!(distributed_py::execute_task, m)?)?;
    m.add_function(wrap_pyfunction!(distributed_py::failed_outcome, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_py::load_file, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_py::load_text, m)?)?;
    m.add_function(wrap_pyfunction!(table_py::flatten, m)?)?;
    m.add_function(wrap_pyfunction!(table_py::series_table, m)?)?;
    m.add_function(wrap_pyfunction!(table_py::connections_table, m)?)?;
    m.add_function(wrap_pyfunction!(table_py::summarize, m)?)?;
    m.add_function(wrap_pyfunction!(studies_py::compare, m)?)?;
    m.add_function(wrap_pyfunction!(inference_py::paired, m)?)?;
    m.add_function(wrap_pyfunction!(inference_py::unpaired, m)?)?;
    m.add_function(wrap_pyfunction!(inference_py::holm, m)?)?;
    m.add_function(wrap_pyfunction!(inference_py::bootstrap_mean_ci, m)?)?;
    m.add_function(wrap_pyfunction!(studies_py::validate, m)?)?;
    m.add_function(wrap_pyfunction!(studies_py::validation_cases, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The names inside a results directory, from their one home.
    m.add("RESULTS_FILE", results::layout::RESULTS_FILE)?;
    m.add("RESULTS_PARQUET", results::layout::RESULTS_PARQUET)?;
    m.add("SERIES_PARQUET", results::layout::SERIES_PARQUET)?;
    m.add("CONNECTIONS_PARQUET", results::layout::CONNECTIONS_PARQUET)?;
    m.add("SERIES_DIR", results::layout::SERIES_DIR)?;
    m.add("SUMMARY_FILE", results::layout::SUMMARY_FILE)?;
    m.add("COMPARISONS_FILE", results::layout::COMPARISONS_FILE)?;
    m.add("ERROR_FIELD", results::store::ERROR_FIELD)?;
    Ok(())
}
