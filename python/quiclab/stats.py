"""Statistics over repetitions, computed as quiclab's ``summary.csv`` computes them (the Rust
``analysis`` crate: Student-t 95% confidence intervals of the mean), and the comparison
statistics of ``comparisons.csv`` and ``quiclab compare`` (paired and unpaired tests, the Holm
adjustment, bootstrap intervals; docs/statistics.md)."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Union

import pandas as pd

from quiclab import _native

#: The statistics :func:`summarize` returns, in ``summary.csv``'s column order.
FIELDS = ["n", "mean", "sd", "ci95_low", "ci95_high", "min", "median", "max"]


def summarize(values: Iterable[float]) -> dict[str, float]:
    """``n``, ``mean``, ``sd``, ``ci95_low``, ``ci95_high``, ``min``, ``median`` and ``max`` of
    ``values``, missing values (None, NaN: not measured) left out. Raises ValueError if no value
    is left."""
    present = [float(v) for v in values if v is not None and not pd.isna(v)]
    return _native.summarize(present)


def summary(
    frame: pd.DataFrame, metric: str, by: Union[str, Sequence[str]]
) -> pd.DataFrame:
    """One row per group of ``by`` (sweep axes, ``flow``, ...) with :func:`summarize`'s
    statistics of column ``metric`` over the group's rows (its repetitions); groups in which
    ``metric`` was never measured are left out.

    >>> quiclab.stats.summary(res.df, "goodput_bps", by=["link.loss", "flow"])
    """
    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for group, part in frame.groupby(keys, sort=False):
        present = part[metric].dropna()
        if present.empty:
            continue
        values = group if isinstance(group, tuple) else (group,)
        rows.append({**dict(zip(keys, values)), **summarize(present)})
    return pd.DataFrame(rows, columns=keys + FIELDS)


def paired(
    variant: Sequence[float], baseline: Sequence[float], seed: int = 0
) -> dict[str, Optional[float]]:
    """``variant`` against ``baseline``, value i of one paired with value i of the other (the
    same repetition): ``n``, ``diff`` (mean of variant − baseline) with its Student-t 95%
    interval ``diff_low``/``diff_high``, ``ratio`` of the means with its percentile bootstrap
    95% interval ``ratio_low``/``ratio_high`` (resamples drawn from ``seed``), ``p_t``
    (``scipy.stats.ttest_rel``), ``p_wilcoxon`` (``scipy.stats.wilcoxon``) and
    ``effect_size`` (Cohen's d_z). What does not exist (an interval of one pair) is None."""
    return _native.paired([float(v) for v in variant], [float(v) for v in baseline], seed)


def unpaired(a: Sequence[float], b: Sequence[float], seed: int = 0) -> dict[str, Optional[float]]:
    """``a`` against ``b`` as independent samples: ``n_a``, ``n_b``, ``diff`` (mean a − mean
    b) with its Welch 95% interval, ``ratio`` with its bootstrap interval, ``p_welch``
    (``scipy.stats.ttest_ind(equal_var=False)``), ``p_mann_whitney``
    (``scipy.stats.mannwhitneyu``) and ``effect_size`` (Hedges' g)."""
    return _native.unpaired([float(v) for v in a], [float(v) for v in b], seed)


def holm(p: Sequence[Optional[float]]) -> list[Optional[float]]:
    """Holm–Bonferroni adjusted p-values, in the input's order; None stays None."""
    return _native.holm([None if v is None else float(v) for v in p])


def bootstrap_mean_ci(values: Sequence[float], seed: int = 0) -> Optional[tuple[float, float]]:
    """Percentile bootstrap 95% interval of the mean of ``values`` (2,000 resamples drawn from
    ``seed``); None below two values."""
    return _native.bootstrap_mean_ci([float(v) for v in values], seed)
