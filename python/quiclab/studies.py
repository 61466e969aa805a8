"""The command line's analyses as library calls: ``compare`` (the same metric across results
directories) and ``validate`` (seed 001's analytic cases). Both run the Rust code the
``quiclab`` binary runs (``analysis::compare``, ``studies::validate``), so a number here equals
the one ``quiclab compare`` or ``quiclab validate`` prints."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from quiclab import _native

PathLike = Union[str, "os.PathLike[str]"]

#: Columns of :attr:`Comparison.df`, in order (``quiclab compare --json``'s fields).
COMPARE_COLUMNS = [
    "point",
    "source",
    "metric",
    "n",
    "runs",
    "median",
    "median_ci95_low",
    "median_ci95_high",
    "mean",
    "mean_ci95_half",
    "ratio_to_first",
]


@dataclass
class Comparison:
    """The rows of a comparison and the sweep points where a source measured nothing."""

    #: One row per (metric, sweep point, source) as ``quiclab compare --json`` prints them.
    rows: list[dict[str, object]]
    #: One warning per sweep point where a source has runs but none has a metric.
    missing: list[str] = field(default_factory=list)

    @property
    def df(self) -> pd.DataFrame:
        """The rows as a DataFrame (:data:`COMPARE_COLUMNS`; the median's interval split into
        two columns, NaN below 6 runs)."""
        flat = []
        for r in self.rows:
            ci = r.get("median_ci95") or (None, None)
            row = {k: v for k, v in r.items() if k != "median_ci95"}
            row["median_ci95_low"], row["median_ci95_high"] = ci
            flat.append(row)
        frame = pd.DataFrame(flat, columns=COMPARE_COLUMNS)
        # Absent values (no interval below 6 runs, no ratio to a zero median) are NaN.
        for c in COMPARE_COLUMNS[3:]:
            frame[c] = pd.to_numeric(frame[c], errors="coerce")
        return frame


def compare(
    sources: Union[Mapping[str, PathLike], Sequence[PathLike]],
    metrics: Union[str, Iterable[str]] = "flows.0.completion_s",
    where: Optional[Mapping[str, str]] = None,
) -> Comparison:
    """Medians with distribution-free 95% intervals, means with Student-t intervals and ratios
    to the first source of each metric, sweep point by sweep point, as ``quiclab compare``.

    ``sources``: results directories (or ``results.jsonl`` files), labelled by a mapping
    ``{label: dir}`` or by their paths; the first is the reference of the ratio. ``where``
    keeps only runs whose sweep axes have the given values.

    >>> quiclab.compare({"sim": "results/sim", "emu": "results/emu"}).df
    """
    if isinstance(sources, Mapping):
        specs = [f"{label}={os.fspath(path)}" for label, path in sources.items()]
    else:
        specs = [os.fspath(p) for p in sources]
    metric_list = [metrics] if isinstance(metrics, str) else list(metrics)
    filters = [f"{k}={v}" for k, v in (where or {}).items()]
    rows, missing = _native.compare(specs, metric_list, filters)
    return Comparison(rows=json.loads(rows), missing=list(missing))


@dataclass
class Validation:
    """A validation report: every checked point and whether all passed."""

    #: One dict per checked point (``case``, ``label``, ``expected``, ``measured``, ``error``,
    #: ``tolerance``, ``pass``, ``note``, ``unit``), as ``quiclab validate --json`` prints them.
    points: list[dict[str, object]]
    #: Whether every point is inside its tolerance.
    passed: bool
    #: The table as ``quiclab validate`` prints it.
    text: str

    @property
    def df(self) -> pd.DataFrame:
        """The points as a DataFrame."""
        return pd.DataFrame(self.points)


def validation_cases() -> list[str]:
    """The names of the validation cases, in the order they run."""
    return list(_native.validation_cases())


def validate(
    cases: Union[str, Iterable[str], None] = None,
    quick: bool = True,
    jobs: Optional[int] = None,
) -> Validation:
    """Runs validation cases (all when None) on the quick grid (``quick=False``: the full one),
    as ``quiclab validate [--quick] --case ...``. The GIL is released while it runs."""
    names = [] if cases is None else [cases] if isinstance(cases, str) else list(cases)
    text_json, text = _native.validate(names, quick, jobs)
    report = json.loads(text_json)
    points = report["points"]
    passed = bool(points) and all(p["pass"] for p in points)
    return Validation(points=points, passed=passed, text=text)
