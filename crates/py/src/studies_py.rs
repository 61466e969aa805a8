//! The library calls behind `quiclab compare` and `quiclab validate`, for Python: the same
//! code (`analysis::compare`, `studies::validate`), results as the JSON text the CLI's `--json`
//! prints.

use pyo3::prelude::*;

use crate::errors::{ExperimentError, QuiclabError};

/// Compares `metrics` across results directories as `quiclab compare --json` does: `sources`
/// are `LABEL=DIR` or `DIR` (the first is the reference of the ratio and of the unpaired
/// tests), `filters` `KEY=VALUE` sweep axes, `baseline` the variant the others are compared
/// with (the first when None). Returns `(rows, missing, paired, unpaired)`: the rows as one JSON
/// array, one warning per sweep point where a source measured none of a metric, the paired
/// tables (one per source with variants) and the unpaired rows as JSON arrays.
#[pyfunction]
#[pyo3(signature = (sources, metrics, filters = Vec::new(), baseline = None))]
pub fn compare(
    py: Python<'_>,
    sources: Vec<String>,
    metrics: Vec<String>,
    filters: Vec<String>,
    baseline: Option<String>,
) -> PyResult<(String, Vec<String>, String, String)> {
    let comparison = py
        .detach(|| analysis::compare::compare(&sources, &metrics, &filters, baseline.as_deref()))
        .map_err(|e| ExperimentError::new_err(experiment::error::chain(&e)))?;
    let err = |e: serde_json::Error| QuiclabError::new_err(e.to_string());
    Ok((
        serde_json::to_string(&comparison.rows).map_err(err)?,
        comparison.missing.clone(),
        serde_json::to_string(&comparison.paired).map_err(err)?,
        serde_json::to_string(&comparison.unpaired).map_err(err)?,
    ))
}

/// The names of the validation cases, in the order they run.
#[pyfunction]
pub fn validation_cases() -> Vec<&'static str> {
    studies::validate::CASES.to_vec()
}

/// Runs validation cases (`cases`; all when empty) on the quick or the full grid on `jobs`
/// threads (all cores when None), as `quiclab validate --json` does. Returns the report as JSON
/// text and its table as `quiclab validate` prints it.
#[pyfunction]
#[pyo3(signature = (cases = Vec::new(), quick = true, jobs = None))]
pub fn validate(
    py: Python<'_>,
    cases: Vec<String>,
    quick: bool,
    jobs: Option<usize>,
) -> PyResult<(String, String)> {
    if let Some(bad) = cases
        .iter()
        .find(|c| !studies::validate::CASES.contains(&c.as_str()))
    {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown validation case {bad:?}; allowed: {}",
            studies::validate::CASES.join(", ")
        )));
    }
    if jobs == Some(0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "jobs must be at least 1",
        ));
    }
    let grid = if quick {
        studies::validate::Grid::Quick
    } else {
        studies::validate::Grid::Full
    };
    let report = py
        .detach(|| studies::validate::run(grid, &cases, &experiment::Threads::new(jobs), &()))
        .map_err(|e| ExperimentError::new_err(experiment::error::chain(&e)))?;
    let json = serde_json::to_string(&report).map_err(|e| QuiclabError::new_err(e.to_string()))?;
    Ok((json, report.render()))
}
