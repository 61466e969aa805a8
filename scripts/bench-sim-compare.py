#!/usr/bin/env python3
"""Simulator speed of two quiclab builds, side by side.

Usage: scripts/bench-sim-compare.py OLD_QUICLAB NEW_QUICLAB [RUNS]

Runs `quiclab bench --json` (best of 3 repetitions per scenario) alternately with the old
binary, the new one, and the new one with `--crypto none`, RUNS times (default 9), so that
machine load affects all three alike, and prints the median simulated-seconds-per-wall-second
of each scenario and the ratios of the medians, then the median packets per wall second (the
research model's speed is stated in packets per wall second on one core).
"""
import json
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    variants = [
        ("old", [old, "bench", "--json"]),
        ("new", [new, "bench", "--json"]),
        ("null", [new, "bench", "--json", "--crypto", "none"]),
    ]
    res = {}
    pps = {}
    for _ in range(runs):
        for name, cmd in variants:
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            for row in json.loads(out):
                res.setdefault((row["scenario"], name), []).append(row["sim_per_wall"])
                # Older builds print datagrams per second only.
                rate = row.get("packets_per_s", row.get("datagrams_per_s"))
                if rate is not None:
                    pps.setdefault((row["scenario"], name), []).append(rate)
    print(f"medians of {runs} alternating runs, simulated seconds per wall second")
    print(f"{'scenario':<22}{'old':>9}{'new':>9}{'null':>9}{'new/old':>9}{'null/old':>9}")
    for s in sorted({s for s, _ in res}):
        m = {v: statistics.median(res[(s, v)]) for v in ("old", "new", "null") if (s, v) in res}
        if "old" not in m:
            print(f"{s:<22}{'-':>9}{m['new']:>9.1f}{m['null']:>9.1f}")
            continue
        print(f"{s:<22}{m['old']:>9.1f}{m['new']:>9.1f}{m['null']:>9.1f}"
              f"{m['new'] / m['old']:>9.2f}{m['null'] / m['old']:>9.2f}")
    print(f"medians of {runs} alternating runs, packets per wall second (millions)")
    print(f"{'scenario':<22}{'old':>9}{'new':>9}{'null':>9}")
    for s in sorted({s for s, _ in pps}):
        m = {v: statistics.median(pps[(s, v)]) / 1e6 for v in ("old", "new", "null") if (s, v) in pps}
        cols = "".join(f"{m[v]:>9.2f}" if v in m else f"{'-':>9}" for v in ("old", "new", "null"))
        print(f"{s:<22}{cols}")


if __name__ == "__main__":
    main()
