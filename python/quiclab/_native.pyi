"""Type hints of the native module built from crates/py (see its Rust docs for details).

Results cross this boundary as JSON text (the lines of results.jsonl), series as the text of
``series/<id>.csv``, and tables as typed columns of the Rust ``report`` crate's flattening (the
one ``results.parquet`` is written from); :mod:`quiclab` turns them into dicts and DataFrames.
"""

from typing import Any, Optional

__version__: str
RESULTS_FILE: str
RESULTS_PARQUET: str
SERIES_PARQUET: str
CONNECTIONS_PARQUET: str
SERIES_DIR: str
SUMMARY_FILE: str
COMPARISONS_FILE: str
ERROR_FIELD: str

class QuiclabError(Exception):
    """Base class of every error quiclab raises."""

class ScenarioError(QuiclabError):
    """A scenario file, text or override is invalid (``file:line:col: what; allowed: ...``)."""

    file: str
    line: Optional[int]
    column: Optional[int]
    message: str
    allowed: list[str]

class RunError(QuiclabError):
    """One run produced no result."""

class FlowError(RunError):
    """A run finished, but a flow of it reported an error."""

    run: str
    flows: list[tuple[str, str]]
    result: Any

class ExperimentError(QuiclabError):
    """A sweep could not start, record or finish, or results could not be read."""

class NativeScenario:
    """A loaded scenario with its sweep expanded."""

    @property
    def name(self) -> str: ...
    @property
    def base_seed(self) -> int: ...
    @property
    def reps(self) -> int: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def points(self) -> list[list[tuple[str, str]]]: ...
    @property
    def runs(self) -> list[tuple[str, int, int, int]]: ...
    def describe(self, point: Optional[int] = None) -> list[str]: ...
    def point_json(self, point: int) -> str: ...
    def run(self, index: int, series: bool = False) -> tuple[str, str]: ...
    def run_many(
        self,
        indices: Optional[list[int]] = None,
        jobs: Optional[int] = None,
        series: bool = False,
    ) -> list[tuple[str, Optional[str], Optional[str], Optional[str]]]: ...
    def sweep(
        self,
        out: str,
        jobs: Optional[int] = None,
        resume: bool = False,
        series: bool = True,
    ) -> dict[str, object]: ...
    def open_sweep(self, out: str, resume: bool = False, series: bool = True) -> NativeOpenSweep: ...

class NativeOpenSweep:
    """A sweep opened for execution elsewhere (Dask): pending tasks out, outcomes in."""

    @property
    def total(self) -> int: ...
    @property
    def resumed(self) -> int: ...
    def pending(self, shard: Optional[tuple[int, int]] = None) -> list[str]: ...
    def record(self, task: str, outcome: str) -> None: ...
    def finish(self) -> dict[str, object]: ...
    def close(self) -> None: ...

def load_file(path: str, overrides: list[str] = ..., axes: list[str] = ...) -> NativeScenario: ...
def load_text(
    text: str,
    file_name: str,
    base_dir: str,
    overrides: list[str] = ...,
    axes: list[str] = ...,
) -> NativeScenario: ...
def execute_task(task: str) -> tuple[str, str]: ...
def failed_outcome(message: str) -> str: ...
def series_table(lines: list[str], series: dict[str, str]) -> list[tuple[str, str, list[object]]]: ...
def flatten(lines: list[str]) -> list[tuple[str, str, list[object]]]: ...
def connections_table(lines: list[str]) -> list[tuple[str, str, list[object]]]: ...
def summarize(values: list[float]) -> dict[str, float]: ...
def compare(
    sources: list[str],
    metrics: list[str],
    filters: list[str] = ...,
    baseline: Optional[str] = None,
) -> tuple[str, list[str], str, str]: ...
def paired(
    variant: list[float], baseline: list[float], seed: int = 0
) -> dict[str, Optional[float]]: ...
def unpaired(a: list[float], b: list[float], seed: int = 0) -> dict[str, Optional[float]]: ...
def holm(p: list[Optional[float]]) -> list[Optional[float]]: ...
def bootstrap_mean_ci(values: list[float], seed: int = 0) -> Optional[tuple[float, float]]: ...
def validate(
    cases: list[str] = ..., quick: bool = True, jobs: Optional[int] = None
) -> tuple[str, str]: ...
def validation_cases() -> list[str]: ...
