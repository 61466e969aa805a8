"""Statistics over repetitions, computed as quiclab's ``summary.csv`` computes them (the Rust
``analysis`` crate: Student-t 95% confidence intervals of the mean)."""

from __future__ import annotations

from typing import Iterable, Sequence, Union

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
