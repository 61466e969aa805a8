"""Sweeps on a Dask cluster (dask.distributed), into the same results store as a local sweep.

>>> from distributed import Client, LocalCluster
>>> import quiclab, quiclab.dask
>>> sc = quiclab.load("scenarios/examples/bulk.toml", vary={"link.loss": ["0%", "1%"]}, reps=10)
>>> with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
...     res = quiclab.dask.sweep(sc, "results/bulk", client=client)

Each run of the sweep becomes one Dask task: the run's self-contained spec (JSON of
``experiment::Task``) goes to a worker, which runs it with the simulator in its own process
(:func:`execute_task`) and sends back the outcome. The calling process records outcomes into the
results directory as they arrive (a crash loses nothing finished) and finalises it in run order,
so ``results.jsonl`` is byte-identical to ``quiclab sim --out`` or
:meth:`quiclab.Scenario.sweep` of the same scenario. ``resume=True`` skips runs already in the
directory; a task that fails is retried ``retries`` times by Dask (a run the engine refuses, a
worker that died), and one that still fails is reported and left for a resumed sweep.

Workers need the quiclab package installed (the same version: a task's JSON is the library's).
The simulator is single-threaded per run: give workers one thread each
(``threads_per_worker=1``) and as many workers as cores.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Callable, Optional, Union

from quiclab import _native
from quiclab.results import Results
from quiclab.scenario import Scenario

PathLike = Union[str, "os.PathLike[str]"]

#: Default Dask retries of a failed task: a worker lost mid-run, or a transient I/O error.
DEFAULT_RETRIES = 2


class TaskFailed(_native.QuiclabError):
    """A run produced no result on a worker (raised there, so Dask retries the task)."""


def execute_task(task: str) -> tuple[str, str]:
    """Runs one task (JSON from the sweep) with the simulator; what each worker calls.

    Returns ``(kind, outcome JSON)`` for a run with a result (``"done"``) or one that crashed
    the engine (``"panicked"``: a bug the same task repeats, so retrying is pointless and the
    run gets an error record). Raises :class:`TaskFailed` for a run without a result, so that
    Dask retries it.
    """
    kind, outcome = _native.execute_task(task)
    if kind == "failed":
        # The outcome is {"Failed": message}; the message is what the caller will record.
        import json

        raise TaskFailed(json.loads(outcome)["Failed"])
    return kind, outcome


def execute_batch(
    tasks: list[str], function: Callable[[str], tuple[str, str]] = execute_task
) -> list[tuple[str, str]]:
    """Runs several tasks one after another with ``function``: one Dask task for ``batch``
    runs, which spreads Dask's per-task cost over them. An exception fails (and retries) the
    whole batch."""
    return [function(task) for task in tasks]


def _client(client: Any) -> tuple[Any, bool]:
    """The Client to use and whether this call made it (and must close it)."""
    from distributed import Client, get_client

    if client is None:
        try:
            return get_client(), False
        except ValueError as e:
            raise ValueError(
                "no Dask client: pass client=Client(...) or a scheduler address "
                "(client='tcp://host:8786'), or create a Client first"
            ) from e
    if isinstance(client, str):
        return Client(client), True
    return client, False


def sweep(
    scenario: Scenario,
    out: PathLike,
    *,
    client: Any = None,
    resume: bool = False,
    series: bool = True,
    retries: int = DEFAULT_RETRIES,
    batch: int = 1,
    function: Callable[[str], tuple[str, str]] = execute_task,
) -> Results:
    """Runs every run of ``scenario`` on a Dask cluster into the results directory ``out``.

    ``client`` is a ``distributed.Client``, a scheduler address (``"tcp://host:8786"``: a client
    is made and closed here) or None for the current default client. ``resume`` skips runs
    already in ``out`` (else a directory holding results is refused, as for a local sweep);
    ``series`` records time series; ``retries`` is Dask's retry count per task. ``batch`` runs
    go into one Dask task (default 1): Dask costs a few milliseconds of CPU per task, which
    matters for runs that take milliseconds themselves; a batch is retried whole and its runs
    are recorded when the whole batch is back. ``function`` is what workers call on each run's
    task JSON (default :func:`execute_task`; a wrapper must return its result). Returns the results read back from ``out``, with runs that failed for good in
    :attr:`Results.failures`. Raises :class:`quiclab.ExperimentError` if the directory cannot be
    used. On an exception or KeyboardInterrupt the pending tasks are cancelled and ``out`` is
    left resumable.
    """
    if retries < 0:
        raise ValueError(f"retries must be at least 0, not {retries}")
    if batch < 1:
        raise ValueError(f"batch must be at least 1, not {batch}")
    from distributed import as_completed

    client, own = _client(client)
    opened = scenario._native.open_sweep(os.fspath(out), resume, series)
    futures: list[Any] = []
    try:
        tasks = opened.pending()
        groups = [tasks[i : i + batch] for i in range(0, len(tasks), batch)]
        # Readable, unique keys (the dashboard shows them): one submission's keys never collide
        # with another's, and a key names its position in the sweep.
        token = uuid.uuid4().hex[:8]
        keys = [f"quiclab-{scenario.name}-{token}-{i}" for i in range(len(groups))]
        futures = client.map(
            execute_batch, groups, key=keys, retries=retries, pure=False, function=function
        )
        group_of = {f.key: g for f, g in zip(futures, groups)}
        for future in as_completed(futures):
            group = group_of[future.key]
            if future.status == "finished":
                outcomes = [outcome for _kind, outcome in future.result()]
            else:
                # Failed after its retries (or cancelled): failures, retried on resume.
                error = future.exception()
                failed = _native.failed_outcome(
                    f"{type(error).__name__}: {error}" if error else "the task was cancelled"
                )
                outcomes = [failed] * len(group)
            for task, outcome in zip(group, outcomes):
                opened.record(task, outcome)
            future.release()
        result = opened.finish()
    except BaseException:
        if futures:
            client.cancel(futures)
        opened.close()
        raise
    finally:
        if own:
            client.close()
    failures = [(run_id, message) for run_id, message, _ in result.get("failures", [])]
    return Results.read(out, failures=failures)
