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


#: Columns of :attr:`Comparison.paired_df`, in order (``comparisons.csv``'s, with ``source``
#: first and the point as one ``name=value ...`` text).
PAIRED_COLUMNS = [
    "source",
    "point",
    "metric",
    "variant",
    "baseline",
    "n_pairs",
    "diff",
    "diff_low",
    "diff_high",
    "ratio",
    "ratio_low",
    "ratio_high",
    "p_t",
    "p_wilcoxon",
    "p_t_holm",
    "p_wilcoxon_holm",
    "effect_size",
]

#: Columns of :attr:`Comparison.unpaired_df`, in order.
UNPAIRED_COLUMNS = [
    "point",
    "metric",
    "source",
    "reference",
    "n",
    "n_reference",
    "diff",
    "diff_low",
    "diff_high",
    "ratio",
    "ratio_low",
    "ratio_high",
    "p_welch",
    "p_mann_whitney",
    "p_welch_holm",
    "p_mann_whitney_holm",
    "effect_size",
]


def _split_intervals(row: dict[str, object], keys: Sequence[str]) -> dict[str, object]:
    """``row`` with each ``<key>_ci`` pair split into ``<key>_low`` and ``<key>_high``."""
    out = {k: v for k, v in row.items() if not k.endswith("_ci")}
    for key in keys:
        ci = row.get(f"{key}_ci") or (None, None)
        out[f"{key}_low"], out[f"{key}_high"] = ci
    return out


def _numeric(frame: pd.DataFrame, text: int) -> pd.DataFrame:
    """Columns from position ``text`` on as numbers, absent values NaN."""
    for c in frame.columns[text:]:
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame


@dataclass
class Comparison:
    """The rows of a comparison, its paired and unpaired tests, and the sweep points where a
    source measured nothing."""

    #: One row per (metric, sweep point, source) as ``quiclab compare --json`` prints them.
    rows: list[dict[str, object]]
    #: One warning per sweep point where a source has runs but none has a metric.
    missing: list[str] = field(default_factory=list)
    #: Per source with variants: ``{"source": label, "rows": [...]}``, every variant against
    #: the baseline, repetitions paired by index, p-values Holm-adjusted per source.
    paired: list[dict[str, object]] = field(default_factory=list)
    #: With two sources or more: every source against the first as independent samples,
    #: p-values Holm-adjusted across these rows.
    unpaired: list[dict[str, object]] = field(default_factory=list)

    @property
    def paired_df(self) -> pd.DataFrame:
        """The paired comparisons as a DataFrame (:data:`PAIRED_COLUMNS`)."""
        flat = []
        for table in self.paired:
            for r in table["rows"]:  # type: ignore[union-attr]
                row = _split_intervals(r, ("diff", "ratio"))
                row["point"] = " ".join(f"{k}={v}" for k, v in r["point"])
                row["source"] = table["source"]
                flat.append(row)
        return _numeric(pd.DataFrame(flat, columns=PAIRED_COLUMNS), 5)

    @property
    def unpaired_df(self) -> pd.DataFrame:
        """The unpaired comparisons as a DataFrame (:data:`UNPAIRED_COLUMNS`)."""
        flat = [_split_intervals(r, ("diff", "ratio")) for r in self.unpaired]
        return _numeric(pd.DataFrame(flat, columns=UNPAIRED_COLUMNS), 4)

    @property
    def df(self) -> pd.DataFrame:
        """The rows as a DataFrame (:data:`COMPARE_COLUMNS`; the median's interval split into
        two columns, NaN below 6 runs)."""
        flat = []
        for r in self.rows:
            ci = r.get("median_ci95") or (None, None)
            row = {k: v for k, v in r.items() if k not in ("median_ci95", "mean_ci95")}
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
    baseline: Optional[str] = None,
) -> Comparison:
    """Medians with distribution-free 95% intervals, means with Student-t intervals and ratios
    to the first source of each metric, sweep point by sweep point, as ``quiclab compare``;
    with the paired comparisons of each source's variants against ``baseline`` (the first
    variant when None) and, for two sources or more, each against the first as independent
    samples (:attr:`Comparison.paired_df`, :attr:`Comparison.unpaired_df`).

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
    rows, missing, paired, unpaired = _native.compare(specs, metric_list, filters, baseline)
    return Comparison(
        rows=json.loads(rows),
        missing=list(missing),
        paired=json.loads(paired),
        unpaired=json.loads(unpaired),
    )


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
