//! The comparison statistics of `analysis::inference` for Python: paired and unpaired
//! comparisons, the Holm adjustment and the bootstrap interval of a mean, each the number
//! `quiclab compare` and `comparisons.csv` report.

use pyo3::prelude::*;
use pyo3::types::PyDict;

fn value_error(e: impl std::fmt::Display) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(e.to_string())
}

fn set_ci(d: &Bound<'_, PyDict>, key: &str, ci: Option<(f64, f64)>) -> PyResult<()> {
    d.set_item(format!("{key}_low"), ci.map(|c| c.0))?;
    d.set_item(format!("{key}_high"), ci.map(|c| c.1))
}

/// `variant` against `baseline`, value i of one paired with value i of the other: `n`,
/// `diff` (variant − baseline) with `diff_low`/`diff_high` (Student-t 95%), `ratio` of means
/// with `ratio_low`/`ratio_high` (percentile bootstrap 95% drawn from `seed`), `p_t`
/// (`scipy.stats.ttest_rel`), `p_wilcoxon` (`scipy.stats.wilcoxon`), `effect_size` (Cohen's
/// d_z). Absent quantities are None. Raises ValueError for different lengths, no values or a
/// value that is not finite.
#[pyfunction]
#[pyo3(signature = (variant, baseline, seed = analysis::inference::BOOTSTRAP_SEED))]
pub fn paired<'py>(
    py: Python<'py>,
    variant: Vec<f64>,
    baseline: Vec<f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let p = analysis::inference::paired(&variant, &baseline, seed).map_err(value_error)?;
    let d = PyDict::new(py);
    d.set_item("n", p.n)?;
    d.set_item("diff", p.diff)?;
    set_ci(&d, "diff", p.diff_ci)?;
    d.set_item("ratio", p.ratio)?;
    set_ci(&d, "ratio", p.ratio_ci)?;
    d.set_item("p_t", p.p_t)?;
    d.set_item("p_wilcoxon", p.p_wilcoxon)?;
    d.set_item("effect_size", p.effect_size)?;
    Ok(d)
}

/// `a` against `b` as independent samples: `n_a`, `n_b`, `diff` (mean a − mean b) with
/// `diff_low`/`diff_high` (Welch 95%), `ratio` with `ratio_low`/`ratio_high` (bootstrap from
/// `seed`), `p_welch` (`scipy.stats.ttest_ind(equal_var=False)`), `p_mann_whitney`
/// (`scipy.stats.mannwhitneyu`), `effect_size` (Hedges' g). Absent quantities are None.
#[pyfunction]
#[pyo3(signature = (a, b, seed = analysis::inference::BOOTSTRAP_SEED))]
pub fn unpaired<'py>(
    py: Python<'py>,
    a: Vec<f64>,
    b: Vec<f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let u = analysis::inference::unpaired(&a, &b, seed).map_err(value_error)?;
    let d = PyDict::new(py);
    d.set_item("n_a", u.n_a)?;
    d.set_item("n_b", u.n_b)?;
    d.set_item("diff", u.diff)?;
    set_ci(&d, "diff", u.diff_ci)?;
    d.set_item("ratio", u.ratio)?;
    set_ci(&d, "ratio", u.ratio_ci)?;
    d.set_item("p_welch", u.p_welch)?;
    d.set_item("p_mann_whitney", u.p_mann_whitney)?;
    d.set_item("effect_size", u.effect_size)?;
    Ok(d)
}

/// Holm–Bonferroni adjusted `p` (None stays None and does not count).
#[pyfunction]
pub fn holm(p: Vec<Option<f64>>) -> Vec<Option<f64>> {
    analysis::inference::holm(&p)
}

/// Percentile bootstrap 95% interval of the mean of `values` drawn from `seed`; None below
/// two values.
#[pyfunction]
#[pyo3(signature = (values, seed = analysis::inference::BOOTSTRAP_SEED))]
pub fn bootstrap_mean_ci(values: Vec<f64>, seed: u64) -> Option<(f64, f64)> {
    analysis::inference::bootstrap_mean_ci(&values, seed)
}
