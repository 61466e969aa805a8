"""Results as pandas DataFrames: of one run, of a sweep in memory, or of a results directory.

Every table has the columns of the results schema (``docs/results.md``): one row per run ×
flow for :attr:`Results.df`, one row per sample × flow × run for :attr:`Results.series`. The
flattening is the Rust ``analysis`` crate's, the one that writes ``results.parquet``, so a
DataFrame built here from ``results.jsonl`` equals ``pandas.read_parquet`` of the directory's
``results.parquet``. A value an engine did not measure is missing (NaN / None), never 0.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from quiclab import _native

PathLike = Union[str, "os.PathLike[str]"]

#: File names inside a results directory, from the Rust crate that writes them.
RESULTS_JSONL = _native.RESULTS_FILE
RESULTS_PARQUET = _native.RESULTS_PARQUET
SERIES_PARQUET = _native.SERIES_PARQUET
CONNECTIONS_PARQUET = _native.CONNECTIONS_PARQUET
SERIES_DIR = _native.SERIES_DIR
SUMMARY_CSV = _native.SUMMARY_FILE

#: The field that marks an error record in results.jsonl (a run that crashed the engine).
ERROR_FIELD = _native.ERROR_FIELD


#: Arrow types of the flattening's column types: those ``results.parquet`` stores.
_ARROW_TYPES = {
    "f64": "float64",
    "i64": "int64",
    "u64": "uint64",
    "string": "string",
    "bool": "bool_",
}


def _to_frame(columns: Sequence[tuple[str, str, list[Any]]]) -> pd.DataFrame:
    """A DataFrame of typed columns, converted as ``pandas.read_parquet`` converts the same
    columns read from a Parquet file, so that both give equal frames (same dtypes: a nullable
    integer column with nulls becomes float64 with NaN, strings pandas' string type)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = [pa.array(values, type=getattr(pa, _ARROW_TYPES[kind])()) for _, kind, values in columns]
    table = pa.table(arrays, names=[name for name, _, _ in columns])
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    buffer.seek(0)
    return pd.read_parquet(buffer)


def _frame(lines: Sequence[str]) -> pd.DataFrame:
    """One row per run × flow from result lines (JSON text as in results.jsonl)."""
    return _to_frame(_native.flatten(list(lines)))


def _series_frame(lines: Sequence[str], series: Mapping[str, str]) -> pd.DataFrame:
    """The time series of the runs ``lines`` (``series``: run id → its series CSV text)."""
    return _to_frame(_native.series_table(list(lines), dict(series)))


class RunResult:
    """The result of one run (:meth:`quiclab.Scenario.run`)."""

    def __init__(self, data: dict[str, Any], series_csv: str) -> None:
        #: The run's results as ``results.jsonl`` holds them (a dict of the results schema).
        self.data = data
        self._series_csv = series_csv

    @property
    def id(self) -> str:
        """The run's id (``p{point}-r{rep}``)."""
        return self.data["id"]

    def __getitem__(self, key: str) -> Any:
        """A top-level field of the result (``r["end_s"]``, ``r["flows"]``)."""
        return self.data[key]

    def __repr__(self) -> str:
        flows = ", ".join(f["name"] for f in self.data.get("flows", []))
        return f"<quiclab.RunResult {self.id} of {self.data.get('scenario')!r}: flows {flows}>"

    @property
    def df(self) -> pd.DataFrame:
        """One row per flow, the columns of :attr:`Results.df`."""
        return _frame([json.dumps(self.data)])

    @property
    def series(self) -> pd.DataFrame:
        """The time series (one row per sample and flow; empty unless recorded)."""
        return _series_frame([json.dumps(self.data)], {self.id: self._series_csv})


class Results:
    """The results of a sweep: in memory (:meth:`quiclab.Scenario.sweep` without ``out``) or
    read from a results directory (:func:`read_results`)."""

    def __init__(
        self,
        runs: list[dict[str, Any]],
        *,
        series_csv: Optional[Mapping[str, str]] = None,
        failures: Iterable[tuple[str, str]] = (),
        errors: Iterable[dict[str, Any]] = (),
        path: Optional[Path] = None,
    ) -> None:
        #: Each run's results as a dict of the results schema, in run order.
        self.runs = runs
        #: Runs that produced no result: ``(id, message)``.
        self.failures = list(failures)
        #: Error records of results.jsonl (runs that crashed the engine), as dicts.
        self.errors = list(errors)
        #: The results directory, if the results live in one.
        self.path = path
        self._series_csv = dict(series_csv or {})
        self._df: Optional[pd.DataFrame] = None
        self._connections: Optional[pd.DataFrame] = None
        self._series: Optional[pd.DataFrame] = None

    @classmethod
    def read(
        cls, path: PathLike, *, failures: Iterable[tuple[str, str]] = ()
    ) -> "Results":
        """Reads the results directory ``path`` (see :func:`read_results`)."""
        path = Path(path)
        jsonl = path / RESULTS_JSONL
        if not jsonl.is_file():
            raise _native.ExperimentError(
                f"{path} holds no {RESULTS_JSONL}: not a quiclab results directory"
            )
        runs, errors = [], []
        with open(jsonl, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    # A crash leaves at most a partial last line; the store skips it too.
                    if not line.endswith("\n"):
                        continue
                    raise _native.ExperimentError(f"{jsonl}:{number}:{e.colno}: {e.msg}") from e
                if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                    continue
                if isinstance(record.get(ERROR_FIELD), str):
                    errors.append(record)
                else:
                    runs.append(record)
        return cls(runs, failures=failures, errors=errors, path=path)

    def __len__(self) -> int:
        """Runs with a result."""
        return len(self.runs)

    def __repr__(self) -> str:
        where = f" in {self.path}" if self.path else ""
        return (
            f"<quiclab.Results: {len(self.runs)} runs{where}, "
            f"{len(self.failures) + len(self.errors)} failed>"
        )

    @property
    def df(self) -> pd.DataFrame:
        """One row per run × flow: run identity (``id``, ``point``, ``rep``, ``seed``), the
        sweep axes (one column each, values as written), the flow's index and name and every
        measured field (``docs/results.md`` lists the columns).

        From a directory with ``results.parquet`` this is ``pandas.read_parquet`` of it; else
        the same table built from ``results.jsonl``.
        """
        if self._df is None:
            parquet = self.path / RESULTS_PARQUET if self.path else None
            if parquet is not None and parquet.is_file():
                self._df = pd.read_parquet(parquet)
            else:
                self._df = _frame([json.dumps(r) for r in self.runs])
        return self._df

    @property
    def connections(self) -> pd.DataFrame:
        """One row per run × flow × connection: run identity, sweep axes, the flow's index and
        name, ``connection`` (its index in the flow) and the connection's fields (handshake,
        first byte, completion, bytes, 0-RTT accepted), so a flow's second connection can be
        compared on its own.

        From a directory with ``connections.parquet`` this is ``pandas.read_parquet`` of it;
        else the same table built from ``results.jsonl``.
        """
        if self._connections is None:
            parquet = self.path / CONNECTIONS_PARQUET if self.path else None
            if parquet is not None and parquet.is_file():
                self._connections = pd.read_parquet(parquet)
            else:
                lines = [json.dumps(r) for r in self.runs]
                self._connections = _to_frame(_native.connections_table(lines))
        return self._connections

    @property
    def series(self) -> pd.DataFrame:
        """The time series of every run: one row per sample × flow × run, with the run's
        identity and sweep axes as columns (empty when series were not recorded)."""
        if self._series is None:
            self._series = self._load_series()
        return self._series

    def _load_series(self) -> pd.DataFrame:
        if self.path is not None:
            parquet = self.path / SERIES_PARQUET
            if parquet.is_file():
                return pd.read_parquet(parquet)
            texts = {}
            for r in self.runs:
                csv = self.path / SERIES_DIR / f"{r['id']}.csv"
                if csv.is_file():
                    texts[r["id"]] = csv.read_text(encoding="utf-8")
        else:
            texts = self._series_csv
        return _series_frame([json.dumps(r) for r in self.runs], texts)

    @property
    def summary(self) -> pd.DataFrame:
        """``summary.csv`` of the directory: n, mean, sd and 95% CI per metric and point."""
        if self.path is None:
            raise ValueError("a summary is written into a results directory: sweep(out=...)")
        return pd.read_csv(self.path / SUMMARY_CSV)


def read_results(path: PathLike) -> Results:
    """Reads an existing results directory (``quiclab sim --out``, a Python or Dask sweep).

    The runs come from ``results.jsonl`` (error records, of runs that crashed the engine, are
    in :attr:`Results.errors`); the tables from ``results.parquet`` / ``series.parquet`` where
    they exist, else from ``results.jsonl`` / ``series/*.csv``. Raises
    :class:`quiclab.ExperimentError` if ``path`` is not a results directory.
    """
    return Results.read(path)
