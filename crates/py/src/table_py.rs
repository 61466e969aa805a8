//! Tables for DataFrames: `analysis`'s flattening (the one `results.parquet` is written from),
//! handed to Python as typed columns.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::Value;

use crate::errors::ExperimentError;

/// One column for Python: name, type (`f64`, `i64`, `u64`, `string`, `bool`) and values
/// (`None` = null).
type PyColumn<'py> = (String, &'static str, Bound<'py, PyList>);

/// Parses result lines (JSON text as in results.jsonl); `what` names them in errors.
fn parse_lines(lines: &[String]) -> PyResult<Vec<Value>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| {
                ExperimentError::new_err(format!("result line {}: not JSON: {e}", i + 1))
            })
        })
        .collect()
}

/// A table's columns as Python lists.
fn columns<'py>(py: Python<'py>, table: analysis::Table) -> PyResult<Vec<PyColumn<'py>>> {
    table
        .columns
        .into_iter()
        .map(|c| {
            let kind = c.values.type_name();
            let list = match c.values {
                analysis::Values::F64(v) => PyList::new(py, v)?,
                analysis::Values::I64(v) => PyList::new(py, v)?,
                analysis::Values::U64(v) => PyList::new(py, v)?,
                analysis::Values::Str(v) => PyList::new(py, v)?,
                analysis::Values::Bool(v) => PyList::new(py, v)?,
            };
            Ok((c.name, kind, list))
        })
        .collect()
}

/// One row per run × flow of the result `lines` (JSON text as in results.jsonl; error records
/// are left out): `[(name, type, values)]`, the columns of `results.parquet`.
#[pyfunction]
pub fn flatten<'py>(py: Python<'py>, lines: Vec<String>) -> PyResult<Vec<PyColumn<'py>>> {
    let runs = py.detach(|| parse_lines(&lines))?;
    let table = py.detach(|| analysis::flatten(&runs));
    columns(py, table)
}

/// One row per run × flow × connection of the result `lines`: the columns of
/// `connections.parquet`.
#[pyfunction]
pub fn connections_table<'py>(py: Python<'py>, lines: Vec<String>) -> PyResult<Vec<PyColumn<'py>>> {
    let runs = py.detach(|| parse_lines(&lines))?;
    let table = py.detach(|| analysis::connections_table(&runs));
    columns(py, table)
}

/// The time series of the runs `lines`: one row per run × sample, from `series` (run id → the
/// text of its `series/<id>.csv`; a run without an entry has no rows). Columns as
/// [`flatten`]'s, those of `series.parquet`.
#[pyfunction]
pub fn series_table<'py>(
    py: Python<'py>,
    lines: Vec<String>,
    series: HashMap<String, String>,
) -> PyResult<Vec<PyColumn<'py>>> {
    let runs = py.detach(|| parse_lines(&lines))?;
    let table = py.detach(|| analysis::series_table(&runs, |id| series.get(id).cloned()));
    columns(py, table)
}

/// Statistics of `values` as `analysis::summarize` computes them for `summary.csv`: `n`,
/// `mean`, `sd`, `ci95_low`, `ci95_high` (Student-t 95% interval of the mean), `min`,
/// `median`, `max`. Raises ValueError for no values or a value that is not finite.
#[pyfunction]
pub fn summarize<'py>(
    py: Python<'py>,
    values: Vec<f64>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let s = analysis::summarize(&values)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("n", s.n)?;
    for (k, v) in [
        ("mean", s.mean),
        ("sd", s.sd),
        ("ci95_low", s.ci95_low),
        ("ci95_high", s.ci95_high),
        ("min", s.min),
        ("median", s.median),
        ("max", s.max),
    ] {
        d.set_item(k, v)?;
    }
    Ok(d)
}
