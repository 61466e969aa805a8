"""Shared fixtures: a small two-flow scenario that simulates in well under a second per run."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

import quiclab

REPO = Path(__file__).resolve().parents[2]

#: QUIC and TCP sharing 10 Mbit/s for one simulated second: two flows, so a table has two rows
#: per run, and both transports' fields appear.
SMALL = """\
[run]
name = "small"
duration = "1s"
seed = 7

[link]
rate = "10Mbit"
delay = "10ms"
queue = "1bdp"

[[flow]]
name = "quic"
stack = "quic"
app = "bulk"
cc = "cubic"

[[flow]]
name = "tcp"
stack = "tcp"
app = "bulk"
cc = "cubic"
"""


@pytest.fixture()
def small() -> quiclab.Scenario:
    """The small scenario, one point, one repetition."""
    return quiclab.loads(SMALL, name="small.toml")


@pytest.fixture()
def small_sweep() -> quiclab.Scenario:
    """The small scenario swept over two loss rates with two repetitions: 4 runs, 8 flows."""
    return quiclab.loads(SMALL, name="small.toml", vary={"link.loss": ["0%", "1%"]}, reps=2)


@pytest.fixture()
def tmp(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A private temporary directory (mode 0700, random name), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="quiclab-py-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def quiclab_bin() -> Path:
    """The `quiclab` binary `cargo test --workspace` built (scripts/test.sh runs it first), or
    $QUICLAB_BIN."""
    path = Path(os.environ.get("QUICLAB_BIN", REPO / "target" / "debug" / "quiclab"))
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"{path} is missing: build it (`cargo test -p quiclab --no-run` or `cargo build -p "
            "quiclab`) or point QUICLAB_BIN at a quiclab binary"
        )
    return path
