"""Sweeps on Dask: a LocalCluster of two worker processes gives results.jsonl byte-identical to
a local sweep; resume; retries of failed tasks; failures left for a resumed sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from distributed import Client, LocalCluster

import quiclab
import quiclab.dask

FILES = ["results.jsonl", "summary.csv", "series/p0-r0.csv", "series/p1-r1.csv"]


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """Two worker processes, one thread each (the simulator runs one run per thread)."""
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        # Loopback only: nothing listens beyond this machine.
        host="127.0.0.1",
    ) as cluster, Client(cluster) as c:
        yield c


def _same(a: Path, b: Path) -> None:
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_dask_sweep_is_byte_identical_to_a_local_sweep(
    small_sweep: quiclab.Scenario, tmp: Path, client: Client
) -> None:
    local = small_sweep.sweep(tmp / "local", jobs=2)
    res = quiclab.dask.sweep(small_sweep, tmp / "dask", client=client)
    assert res.failures == [] and len(res) == len(local) == 4
    _same(tmp / "local", tmp / "dask")
    # Both workers took part (four tasks on two single-threaded workers).
    assert len(client.scheduler_info()["workers"]) == 2


def test_batches_of_runs_give_the_same_bytes(
    small_sweep: quiclab.Scenario, tmp: Path, client: Client
) -> None:
    small_sweep.sweep(tmp / "local")
    # Four runs in batches of three: one full batch and one of a single run.
    quiclab.dask.sweep(small_sweep, tmp / "dask", client=client, batch=3)
    _same(tmp / "local", tmp / "dask")


def test_dask_through_a_scheduler_address(
    small_sweep: quiclab.Scenario, tmp: Path, client: Client
) -> None:
    small_sweep.sweep(tmp / "local")
    address = client.scheduler.address
    quiclab.dask.sweep(small_sweep, tmp / "dask", client=address)
    _same(tmp / "local", tmp / "dask")


def test_dask_resumes_a_partial_directory(
    small_sweep: quiclab.Scenario, tmp: Path, client: Client
) -> None:
    small_sweep.sweep(tmp / "local")
    # Half the runs, then stop: the directory is left resumable.
    opened = small_sweep._native.open_sweep(str(tmp / "dask"), False, True)
    for task in opened.pending((0, 2)):
        opened.record(task, quiclab.dask.execute_task(task)[1])
    assert opened.finish()["finished"] is False
    with pytest.raises(quiclab.ExperimentError, match="already holds results"):
        quiclab.dask.sweep(small_sweep, tmp / "dask", client=client)
    res = quiclab.dask.sweep(small_sweep, tmp / "dask", client=client, resume=True)
    assert len(res) == 4
    _same(tmp / "local", tmp / "dask")


def test_failed_tasks_are_retried(
    small_sweep: quiclab.Scenario, tmp: Path, client: Client
) -> None:
    small_sweep.sweep(tmp / "local")
    marks = tmp / "marks"
    marks.mkdir()

    def flaky(task: str) -> tuple[str, str]:
        # Fails the first attempt of every task (a marker file per task remembers it across
        # worker processes), then runs it.
        import hashlib

        mark = marks / hashlib.sha256(task.encode()).hexdigest()
        if not mark.exists():
            mark.touch()
            raise OSError("a transient failure")
        return quiclab.dask.execute_task(task)

    res = quiclab.dask.sweep(small_sweep, tmp / "dask", client=client, function=flaky, retries=1)
    assert res.failures == [] and len(list(marks.iterdir())) == 4
    _same(tmp / "local", tmp / "dask")


def test_tasks_failing_for_good_are_reported_and_resumable(
    small_sweep: quiclab.Scenario, tmp: Path, client: Client
) -> None:
    small_sweep.sweep(tmp / "local")

    def broken_p1(task: str) -> tuple[str, str]:
        import json

        if json.loads(task)["spec"]["point"] == 1:
            raise OSError("worker disk full")
        return quiclab.dask.execute_task(task)

    res = quiclab.dask.sweep(small_sweep, tmp / "dask", client=client, function=broken_p1, retries=1)
    assert sorted(f[0] for f in res.failures) == ["p1-r0", "p1-r1"]
    assert all("worker disk full" in f[1] for f in res.failures)
    assert len(res) == 2
    # The failed runs have no line: a resumed sweep runs them, and the result is complete.
    quiclab.dask.sweep(small_sweep, tmp / "dask", client=client, resume=True)
    _same(tmp / "local", tmp / "dask")


def test_bad_arguments_are_refused_before_anything_runs(small: quiclab.Scenario, tmp: Path) -> None:
    with pytest.raises(ValueError, match="retries"):
        quiclab.dask.sweep(small, tmp / "x", retries=-1)
    with pytest.raises(ValueError, match="batch"):
        quiclab.dask.sweep(small, tmp / "x", batch=0)
