#!/usr/bin/env python3
"""Scale figure of the Python package: runs per second for a sweep of short runs, local threads
against Dask (a LocalCluster of 1 and 2 single-threaded worker processes, and 2 with batches of
10 runs per Dask task), and the per-run overhead of the Dask path.

    .venv/bin/python scripts/bench-python.py [--runs 200] [--duration 200ms] [--repeat 3]

Every configuration runs the same sweep into a fresh results directory (so the Dask rows include
recording into the store, as a real sweep does) and must give a results.jsonl byte-identical to
the first configuration's. Cluster start-up is timed separately and not in the rates. Prints a
Markdown table with the machine's load average, because wall-clock rates on a shared machine
move with it; the CPU columns (user + system seconds of this process and the workers) move less.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: One QUIC download over 10 Mbit/s: short, so the per-run overhead shows.
SCENARIO = """\
[run]
name = "bench-python"
duration = "{duration}"

[link]
rate = "10Mbit"
delay = "10ms"
queue = "1bdp"

[[flow]]
name = "bulk"
stack = "quic"
app = "bulk"
"""


def cpu_self() -> float:
    """User + system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_workers(client) -> float:
    """User + system CPU seconds of the cluster's worker processes so far."""
    import psutil

    def own() -> float:
        t = psutil.Process().cpu_times()
        return t.user + t.system

    return sum(client.run(own).values())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=200, help="runs in the sweep (repetitions)")
    p.add_argument("--duration", default="200ms", help="simulated time per run")
    p.add_argument("--repeat", type=int, default=3, help="timings per configuration (best kept)")
    args = p.parse_args()

    import quiclab
    import quiclab.dask
    from distributed import Client, LocalCluster

    sc = quiclab.loads(SCENARIO.format(duration=args.duration), reps=args.runs)
    work = Path(tempfile.mkdtemp(prefix="quiclab-bench-python-"))
    reference: bytes | None = None
    rows = []

    def measure(label: str, sweep, workers=None) -> None:
        nonlocal reference
        best = None
        for i in range(args.repeat):
            out = work / f"{label.replace(' ', '-')}-{i}"
            cpu0 = cpu_self() + (cpu_workers(workers) if workers else 0.0)
            t0 = time.perf_counter()
            sweep(out)
            wall = time.perf_counter() - t0
            cpu = cpu_self() + (cpu_workers(workers) if workers else 0.0) - cpu0
            data = (out / "results.jsonl").read_bytes()
            if reference is None:
                reference = data
            elif data != reference:
                raise SystemExit(f"{label}: results.jsonl differs from the first configuration's")
            shutil.rmtree(out)
            if best is None or wall < best[0]:
                best = (wall, cpu)
        wall, cpu = best
        rows.append((label, wall, cpu))
        print(f"  {label}: {args.runs / wall:.1f} runs/s", file=sys.stderr)

    try:
        for jobs in (1, 2):
            measure(f"local, {jobs} thread{'s' * (jobs > 1)}", lambda out, j=jobs: sc.sweep(out, jobs=j))
        for n, batch in ((1, 1), (2, 1), (2, 10)):
            t0 = time.perf_counter()
            with LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                host="127.0.0.1",
            ) as cluster, Client(cluster) as client:
                startup = time.perf_counter() - t0
                # Warm the workers (import quiclab once) outside the timing.
                client.run(lambda: __import__("quiclab.dask"))
                label = f"Dask, {n} worker{'s' * (n > 1)}" + (f", batch {batch}" if batch > 1 else "")
                measure(
                    label,
                    lambda out, c=client, b=batch: quiclab.dask.sweep(sc, out, client=c, batch=b),
                    workers=client,
                )
                rows[-1] = rows[-1] + (startup,)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    load = os.getloadavg()
    print(
        f"{args.runs} runs of {args.duration} simulated (one QUIC bulk flow, 10 Mbit/s), best of "
        f"{args.repeat}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, "
        f"{os.cpu_count()} cores\n"
    )
    print("| executor | runs/s | wall s | CPU s per run | cluster start s |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        label, wall, cpu = row[:3]
        startup = f"{row[3]:.1f}" if len(row) > 3 else "–"
        print(
            f"| {label} | {args.runs / wall:.1f} | {wall:.2f} | {cpu / args.runs * 1e3:.2f} ms | {startup} |"
        )
    local1 = next(r for r in rows if r[0] == "local, 1 thread")
    dask1 = next(r for r in rows if r[0] == "Dask, 1 worker")
    print(
        f"\nDask per-run overhead (1 worker against 1 local thread): "
        f"{(dask1[1] - local1[1]) / args.runs * 1e3:.2f} ms wall, "
        f"{(dask1[2] - local1[2]) / args.runs * 1e3:.2f} ms CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
