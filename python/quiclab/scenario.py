"""Scenarios: load a scenario file or text with overrides and sweep axes, then run it.

A :class:`Scenario` is what ``quiclab sim`` works from after reading its command line:
the file with every ``--set`` override applied and its sweep (the file's ``[sweep]`` plus any
``--vary`` axes) expanded into points and repetitions. Running it goes through the same
experiment library as the CLI, so a sweep into a directory is the directory ``quiclab sim --out``
writes.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from quiclab import _native
from quiclab.results import Results, RunResult

#: Values accepted for an override or a sweep value: text as written in a scenario file
#: (``"5Mbit"``, ``"20ms"``, ``"1%"``), numbers, booleans, or lists of those.
Value = Union[str, int, float, bool, Sequence[Any]]

PathLike = Union[str, "os.PathLike[str]"]


class RunSpec(NamedTuple):
    """One run of a scenario: its id (``p{point}-r{rep}``), sweep point, repetition and seed."""

    id: str
    point: int
    rep: int
    seed: int


# Characters that would split a bare command-line value into several (``,`` between sweep
# values) or start a TOML string, array or table: such text is passed quoted.
_SPECIAL = set(',[]{}"\'=#')


def value_text(value: Value) -> str:
    """The text of ``value`` as it would follow ``--set key=`` on the command line.

    Text is passed as written (so ``"5Mbit"`` reads like ``--set link.rate=5Mbit``) unless it
    holds a character that the command-line syntax gives a meaning, when it is quoted; numbers
    and booleans are written the way TOML writes them; a list becomes a TOML array.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        return repr(value)
    if isinstance(value, str):
        if value.strip() != value or any(c in _SPECIAL for c in value) or value == "":
            return json.dumps(value)
        return value
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_quoted(v) for v in value) + "]"
    raise TypeError(
        f"unsupported value {value!r} of type {type(value).__name__}: "
        "use text (\"5Mbit\"), a number, a boolean or a list of those"
    )


def _quoted(value: Value) -> str:
    """``value`` inside a TOML array, where text must be quoted."""
    if isinstance(value, str):
        return json.dumps(value)
    return value_text(value)


def _overrides(
    set: Optional[Mapping[str, Value]], reps: Optional[int], seed: Optional[int]
) -> list[str]:
    """``key=value`` overrides, as ``--set``, ``--reps`` and ``--seed`` would give them."""
    out = [f"{key}={value_text(v)}" for key, v in (set or {}).items()]
    # The dedicated arguments win over a `set` of the same key, as on the command line.
    if reps is not None:
        out.append(f"run.reps={int(reps)}")
    if seed is not None:
        out.append(f"run.seed={int(seed)}")
    return out


def _axes(vary: Optional[Mapping[str, Iterable[Value]]]) -> list[str]:
    """``key=v1,v2,...`` sweep axes, as ``--vary`` would give them."""
    out = []
    for key, values in (vary or {}).items():
        if isinstance(values, (str, bytes)):
            raise TypeError(
                f"vary[{key!r}] must be a list of values, not the text {values!r}"
            )
        out.append(f"{key}=" + ",".join(value_text(v) for v in values))
    return out


def load(
    path: PathLike,
    *,
    set: Optional[Mapping[str, Value]] = None,
    vary: Optional[Mapping[str, Iterable[Value]]] = None,
    reps: Optional[int] = None,
    seed: Optional[int] = None,
) -> "Scenario":
    """Loads the scenario file ``path``.

    ``set`` overrides keys (``{"link.rate": "5Mbit"}`` is ``--set link.rate=5Mbit``), ``vary``
    adds sweep axes (``{"link.loss": ["0%", "1%"]}`` is ``--vary link.loss=0%,1%``, replacing a
    ``[sweep]`` axis of the same key), ``reps`` and ``seed`` override ``run.reps`` and
    ``run.seed``. Raises :class:`quiclab.ScenarioError` with the ``file:line:col`` message the
    CLI prints.
    """
    native = _native.load_file(os.fspath(path), _overrides(set, reps, seed), _axes(vary))
    return Scenario(native, source=Path(path))


def loads(
    text: str,
    *,
    name: str = "scenario.toml",
    base_dir: PathLike = ".",
    set: Optional[Mapping[str, Value]] = None,
    vary: Optional[Mapping[str, Iterable[Value]]] = None,
    reps: Optional[int] = None,
    seed: Optional[int] = None,
) -> "Scenario":
    """Loads a scenario from ``text`` (TOML, as in a scenario file).

    ``name`` stands for the file name in error messages and, without ``.toml``, is the scenario's
    name unless ``run.name`` sets one; relative paths inside the text (rate traces) are resolved
    against ``base_dir``. The other arguments are those of :func:`load`.
    """
    native = _native.load_text(
        text, name, os.fspath(base_dir), _overrides(set, reps, seed), _axes(vary)
    )
    return Scenario(native, source=None)


class Scenario:
    """A scenario with its sweep expanded: sweep points × repetitions = runs.

    Made by :func:`load` or :func:`loads`. Immutable: to change a key, load again with ``set``.
    """

    def __init__(self, native: "_native.NativeScenario", source: Optional[Path]) -> None:
        self._native = native
        #: The file it was loaded from (None for text).
        self.source = source

    @property
    def name(self) -> str:
        """``run.name``, or the file name without ``.toml``."""
        return self._native.name

    @property
    def seed(self) -> int:
        """``run.seed``: every run's seed derives from it and the run's point and repetition."""
        return self._native.base_seed

    @property
    def reps(self) -> int:
        """``run.reps``: repetitions of every sweep point."""
        return self._native.reps

    @property
    def warnings(self) -> list[str]:
        """Accepted input that is probably not what was meant (the CLI prints these)."""
        return self._native.warnings

    @property
    def points(self) -> list[dict[str, str]]:
        """Each sweep point's axis values (``{key: value as written}``; ``{}`` without a sweep)."""
        return [dict(axes) for axes in self._native.points]

    @property
    def runs(self) -> list[RunSpec]:
        """Every run, in run order (point by point, repetitions in order)."""
        return [RunSpec(*r) for r in self._native.runs]

    def __len__(self) -> int:
        """Number of runs."""
        return len(self._native.runs)

    def __repr__(self) -> str:
        return (
            f"<quiclab.Scenario {self.name!r}: {len(self._native.points)} points × "
            f"{self.reps} reps = {len(self)} runs>"
        )

    def resolved(self, point: int = 0) -> dict[str, Any]:
        """The resolved scenario of sweep point ``point``: every key, defaults filled in."""
        return json.loads(self._native.point_json(point))

    def _index(self, run: Union[int, str]) -> int:
        if isinstance(run, str):
            for i, spec in enumerate(self._native.runs):
                if spec[0] == run:
                    return i
            ids = [r[0] for r in self._native.runs]
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            raise KeyError(f"no run {run!r} in this scenario; runs: {shown}")
        return int(run)

    def describe(self, point: Optional[int] = None) -> list[str]:
        """One line per flow saying what it does, as ``quiclab sim`` prints before running
        (``"flow0: quic, cubic, bulk upload (client → server) for 30s"``): of sweep point
        ``point``, or, by default, each distinct line of every point once."""
        return self._native.describe(point)

    def run(
        self, run: Union[int, str] = 0, *, series: bool = True, check: bool = True
    ) -> RunResult:
        """Runs one run with the simulator and returns its result.

        ``run`` is a run id (``"p1-r0"``) or an index in run order (default: the first run).
        ``series`` records the time series (:attr:`RunResult.series`). Raises
        :class:`quiclab.RunError` if the run produced no result and, with ``check`` (the
        default), :class:`quiclab.FlowError` if a flow of it reported an error (a connection
        lost, a handshake refused; the result is the exception's ``result``); ``check=False``
        returns such a result, each failed flow's ``error`` set. The GIL is released while it
        runs.
        """
        line, series_csv = self._native.run(self._index(run), series)
        result = RunResult(json.loads(line), series_csv)
        if check:
            failed = [
                (f.get("name", "?"), f["error"])
                for f in result.data.get("flows", [])
                if f.get("error") is not None
            ]
            if failed:
                what = "; ".join(f"flow {name}: {error}" for name, error in failed)
                err = _native.FlowError(
                    f"run {result.id} failed: {what} (check=False returns the result anyway)"
                )
                err.run = result.id
                err.flows = failed
                err.result = result
                raise err
        return result

    def sweep(
        self,
        out: Optional[PathLike] = None,
        *,
        jobs: Optional[int] = None,
        resume: bool = False,
        series: bool = True,
    ) -> Results:
        """Runs every run of the scenario with the simulator on ``jobs`` threads (default: one
        per core).

        With ``out``, the runs go into that results directory exactly as ``quiclab sim --out``
        puts them (``results.jsonl`` in run order, ``summary.csv``, ``series/``, ``sweep.json``),
        a directory holding other results is refused unless ``resume`` (which skips the runs
        already in it), and the returned :class:`Results` is read back from it. Without ``out``
        the runs stay in memory. Runs that failed are listed in :attr:`Results.failures`; a
        directory that cannot be used raises :class:`quiclab.ExperimentError`. Ctrl-C (a
        notebook's interrupt) stops starting runs, leaves ``out`` resumable and raises
        KeyboardInterrupt.
        """
        if jobs is not None and jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        if out is None:
            if resume:
                raise ValueError("resume needs a results directory (out=...)")
            outcomes = self._native.run_many(None, jobs, series)
            runs, series_csv, failures = [], {}, []
            for run_id, line, csv, error in outcomes:
                if error is not None:
                    failures.append((run_id, error))
                    continue
                runs.append(json.loads(line))
                series_csv[run_id] = csv
            return Results(runs, series_csv=series_csv, failures=failures)
        outcome = self._native.sweep(os.fspath(out), jobs, resume, series)
        failures = [(run_id, message) for run_id, message, _ in outcome.get("failures", [])]
        return Results.read(out, failures=failures)
