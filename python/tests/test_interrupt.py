"""Ctrl-C during a sweep: no new run starts, the directory stays resumable, KeyboardInterrupt."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import quiclab

from conftest import SMALL

#: Enough runs that the sweep is still going when the signal arrives, whatever the load (400
#: took ~0.5 s on an idle machine). Interrupted, the test stops after a few of them; only a
#: failure runs them all.
RUNS = 5000

#: The child installs Python's Ctrl-C handler itself: a process started in the background by a
#: non-interactive shell (as CI may start the suite) inherits SIGINT *ignored*, and Python then
#: keeps ignoring it, so the signal would never arrive and the sweep would run to its end (exit 0;
#: reproduced with `trap "" INT`).
SCRIPT = f"""
import signal, sys, quiclab
signal.signal(signal.SIGINT, signal.default_int_handler)
sc = quiclab.loads({SMALL!r}, name="small.toml", reps={RUNS})
print("started", flush=True)
try:
    sc.sweep(sys.argv[1], jobs=1)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


def test_ctrl_c_stops_a_sweep_and_leaves_it_resumable(tmp: Path) -> None:
    out = tmp / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        # Wait for the first result so the sweep is surely under way.
        deadline = time.monotonic() + 60
        jsonl = out / "results.jsonl"
        while not (jsonl.is_file() and jsonl.stat().st_size > 0):
            assert time.monotonic() < deadline, "no run finished within 60 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3 and rest.strip() == "interrupted"
    done = len(jsonl.read_text().splitlines())
    assert 0 < done < RUNS
    # Unlocked and resumable: the same scenario opens with resume (and only with it).
    sc = quiclab.loads(SMALL, name="small.toml", reps=RUNS)
    opened = sc._native.open_sweep(str(out), True, True)
    assert opened.resumed == done and len(opened.pending()) == RUNS - done
    opened.close()
