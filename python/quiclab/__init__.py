"""quiclab from Python: the deterministic transport simulator's scenarios, runs and sweeps,
with results as pandas DataFrames and sweeps on Dask.

>>> import quiclab
>>> sc = quiclab.load("scenarios/examples/bulk.toml", set={"link.rate": "20Mbit"},
...                   vary={"link.loss": ["0%", "1%"]}, reps=3)
>>> res = sc.sweep()                 # in memory, all cores; sweep("out/") writes a directory
>>> res.df.groupby("link.loss")["goodput_bps"].mean()

Everything runs through the same experiment library as the ``quiclab`` command line (a sweep
into a directory writes what ``quiclab sim --out`` writes). Errors are exceptions derived from
:class:`QuiclabError`; a scenario error carries the CLI's ``file:line:col`` message.

- :func:`load` / :func:`loads`: a scenario from a file / from text, with overrides and axes.
- :meth:`Scenario.run` / :meth:`Scenario.sweep`: one run / every run.
- :func:`read_results`: an existing results directory.
- :mod:`quiclab.stats`: means and 95% confidence intervals as `summary.csv` computes them.
- :mod:`quiclab.dask`: a sweep on a Dask cluster, into the same results store.
- :func:`compare` / :func:`validate`: ``quiclab compare`` and ``quiclab validate`` as calls
  (:mod:`quiclab.studies`).
"""

from quiclab._native import (
    ExperimentError,
    FlowError,
    QuiclabError,
    RunError,
    ScenarioError,
    __version__,
)
from quiclab import stats
from quiclab.results import Results, RunResult, read_results
from quiclab.scenario import RunSpec, Scenario, load, loads
from quiclab.studies import Comparison, Validation, compare, validate, validation_cases

__all__ = [
    "Comparison",
    "ExperimentError",
    "FlowError",
    "QuiclabError",
    "Results",
    "RunError",
    "RunResult",
    "RunSpec",
    "Scenario",
    "ScenarioError",
    "Validation",
    "__version__",
    "compare",
    "load",
    "loads",
    "read_results",
    "stats",
    "validate",
    "validation_cases",
]
