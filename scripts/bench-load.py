#!/usr/bin/env python3
"""quiclab load against the real load tools, same server, same run (issue 5's benchmark).

One `quiclab serve` on loopback serves an 11,000-byte body (seed 004's page). Every tool attacks it
in turn over every protocol it supports:

  quiclab load (HTTP/1.1, 2, 3)  vegeta v12.12.0 (1.1, 2)  oha (1.1, 2, 3)  h2load (1.1, 2)  wrk (1.1)

and the script reports, per tool and protocol,
  * rate accuracy at 1000 req/s (achieved / requested) with the latency percentiles the tool reports;
  * the highest rate sustained with >= 99.9% success and an achieved rate >= 99% of the requested one,
    stepping through RATES (5 s each) and stopping at the first failure. wrk cannot hold a rate (closed
    model): its row gives the throughput it reached with 64 connections.

Generator and server share this machine's cores, so the figures compare tools with each other, not
with another machine. Needs `bash scripts/install-peers.sh --all` (vegeta, oha, wrk, h2load).
Usage: python3 scripts/bench-load.py [--quick] [--out DIR]
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_BIN = os.path.join(os.environ.get("QUICLAB_PEERS", "/opt/quiclab-peers"), "bin")
CA = os.path.join(REPO, "certs", "ca.pem")
QUICLAB = os.environ.get("QUICLAB_BIN", os.path.join(REPO, "target", "release", "quiclab"))
SIZE = 11000
RATES = [2000, 4000, 6000, 8000, 10000, 12000, 16000, 20000, 24000, 32000]


def run(cmd, timeout=120, stdin=None):
    """Runs cmd, returns stdout (text); raises with stderr on failure."""
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}… exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


class Result:
    """What one attack measured, normalised across tools (latencies in ms)."""

    def __init__(self, requested, achieved, success, p50=None, p90=None, p99=None, mean=None, mx=None):
        self.requested, self.achieved, self.success = requested, achieved, success
        self.p50, self.p90, self.p99, self.mean, self.max = p50, p90, p99, mean, mx

    def sustained(self):
        return self.success >= 0.999 and self.achieved >= 0.99 * self.requested


def quiclab(url, proto, rate, dur, tmp):
    out = os.path.join(tmp, f"ql-{proto}-{rate}.jsonl")
    run([QUICLAB, "load", "attack", "--rate", f"{rate}/s", "--duration", f"{dur}s", "--http", proto,
         "--ca", CA, "--output", out, url], timeout=dur + 60)
    s = json.loads(run([QUICLAB, "load", "report", "--type", "json", out]))
    lat = s["latency_ms"]
    return Result(rate, s["rate"]["achieved"], s["success_ratio"], lat.get("p50"), lat.get("p90"),
                  lat.get("p99"), lat.get("mean"), lat.get("max"))


def vegeta(url, proto, rate, dur, tmp):
    attack = [os.path.join(PEERS_BIN, "vegeta"), "attack", f"-rate={rate}/s", f"-duration={dur}s",
              f"-root-certs={CA}", f"-http2={'true' if proto == '2' else 'false'}"]
    raw = subprocess.run(attack, input=f"GET {url}\n".encode(), capture_output=True, timeout=dur + 60)
    rep = subprocess.run([os.path.join(PEERS_BIN, "vegeta"), "report", "-type=json"], input=raw.stdout,
                         capture_output=True, timeout=60)
    s = json.loads(rep.stdout)
    lat = {k: v / 1e6 for k, v in s["latencies"].items()}
    return Result(rate, s["rate"], s["success"], lat["50th"], lat["90th"], lat["99th"], lat["mean"], lat["max"])


def oha(url, proto, rate, dur, tmp):
    cmd = [os.path.join(PEERS_BIN, "oha"), "--no-tui", "--output-format", "json", "-q", str(rate),
           "-z", f"{dur}s", "-c", "100", "--latency-correction", "--cacert", CA, "--http-version",
           {"1.1": "1.1", "2": "2", "3": "3"}[proto], url]
    s = json.loads(run(cmd, timeout=dur + 90))
    summ = s["summary"]
    # Requests still in flight when -z ends are reported as "aborted due to deadline": they were
    # cut by the tool's own stop, not failed by the server, so they do not count either way.
    errors = {k: v for k, v in s.get("errorDistribution", {}).items() if "deadline" not in k}
    total = sum(s.get("statusCodeDistribution", {}).values()) + sum(errors.values())
    ok = sum(v for k, v in s.get("statusCodeDistribution", {}).items() if k.startswith("2"))
    pct = s.get("latencyPercentiles", {})
    ms = lambda v: None if v is None else v * 1000  # noqa: E731
    # oha's requestsPerSec divides by its whole run time, which in HTTP/3 mode includes waiting for
    # the server's idle timeout; requests over the attack duration is the rate it actually sent.
    return Result(rate, total / dur, ok / total if total else 0.0, ms(pct.get("p50")), ms(pct.get("p90")),
                  ms(pct.get("p99")), ms(summ.get("average")), ms(summ.get("slowest")))


def h2load(url, proto, rate, dur, tmp):
    clients = 50 if proto == "1.1" else 10
    cmd = ["h2load", "-D", str(dur), "-c", str(clients), "-m", "1" if proto == "1.1" else "10",
           f"--rps={rate / clients:g}", url]
    if proto == "1.1":
        cmd.insert(1, "--h1")
    text = run(cmd, timeout=dur + 60)
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded", text)
    total, succeeded = int(m.group(1)), int(m.group(4))
    mean = re.search(r"time for request:\s+\S+\s+\S+\s+(\S+)", text)
    return Result(rate, total / dur, succeeded / total if total else 0.0, mean=parse_time(mean.group(1)))


def wrk(url, proto, rate, dur, tmp):
    text = run(["wrk", "-t2", "-c64", f"-d{dur}s", "--latency", url], timeout=dur + 60)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    total = int(re.search(r"(\d+) requests in", text).group(1))
    bad = sum(int(x) for x in re.findall(r"Non-2xx or 3xx responses: (\d+)", text))
    pct = {k: parse_time(v) for k, v in re.findall(r"^\s+(50|90|99)%\s+(\S+)", text, re.M)}
    return Result(rps, rps, (total - bad) / total if total else 0.0, pct.get("50"), pct.get("90"), pct.get("99"))


def parse_time(s):
    """'1.23ms' / '850.00us' / '2.1s' -> milliseconds."""
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v


TOOLS = [("quiclab", quiclab, ["1.1", "2", "3"]), ("vegeta", vegeta, ["1.1", "2"]),
         ("oha", oha, ["1.1", "2", "3"]), ("h2load", h2load, ["1.1", "2"]), ("wrk", wrk, ["1.1"])]


def fmt(x, d=2):
    return "–" if x is None else f"{x:.{d}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 s attacks and fewer rates")
    ap.add_argument("--out", default=None, help="write the Markdown table here too")
    ap.add_argument("--tools", default=",".join(t[0] for t in TOOLS), help="comma-separated subset of tools")
    ap.add_argument("--min-rate", type=int, default=0, help="start the rate steps here")
    args = ap.parse_args()
    dur = 2 if args.quick else 5
    rates = [r for r in (RATES[:3] if args.quick else RATES) if r >= args.min_rate]
    wanted = set(args.tools.split(","))
    for tool in ["vegeta", "oha"]:
        if not os.access(os.path.join(PEERS_BIN, tool), os.X_OK):
            sys.exit(f"{tool} missing: run `bash scripts/install-peers.sh --load-tools`")
    for tool in ["h2load", "wrk"]:
        if not shutil.which(tool):
            sys.exit(f"{tool} missing: run `bash scripts/install-peers.sh --load-tools`")
    if not os.access(QUICLAB, os.X_OK):
        run(["cargo", "build", "--release", "--locked", "-q", "-p", "quiclab"], timeout=1800)
    tmp = tempfile.mkdtemp(prefix="bench-load-")
    ready = os.path.join(tmp, "ready")
    server = subprocess.Popen([QUICLAB, "serve", "--listen", "127.0.0.1:0", "--ready-file", ready, "--quiet"])
    try:
        for _ in range(100):
            if os.path.exists(ready) and open(ready).read().strip():
                break
            time.sleep(0.1)
        addr = open(ready).read().strip()
        url = f"https://localhost:{addr.rsplit(':', 1)[1]}/{SIZE}"
        rows = []
        for name, fn, protos in TOOLS:
            if name not in wanted:
                continue
            for proto in protos:
                at1000 = fn(url, proto, 1000, 2 * dur, tmp)
                best = None
                if name == "wrk":
                    best = f"{at1000.achieved:.0f} (closed loop, 64 conns)"
                else:
                    for rate in rates:
                        try:
                            r = fn(url, proto, rate, dur, tmp)
                        except Exception as e:  # a tool that crashes at a rate has not sustained it
                            print(f"  {name} h{proto} {rate}/s: {e}", file=sys.stderr)
                            break
                        print(f"  {name} h{proto} {rate}/s: achieved {r.achieved:.0f}, success {r.success:.4f}",
                              file=sys.stderr)
                        if not r.sustained():
                            break
                        best = rate
                accuracy = "–" if name == "wrk" else f"{at1000.achieved / 1000:.4f}"
                rows.append(f"| {name} | {proto} | {best if best is not None else '< ' + str(rates[0])} | "
                            f"{accuracy} | {at1000.success * 100:.2f} | {fmt(at1000.p50)} | {fmt(at1000.p90)} | "
                            f"{fmt(at1000.p99)} | {fmt(at1000.mean)} |")
                print(rows[-1], flush=True)
        table = ("| tool | HTTP | highest sustained req/s | achieved/requested at 1000/s | success % at 1000/s | "
                 "p50 ms | p90 ms | p99 ms | mean ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
                 + "\n".join(rows) + "\n")
        print("\n" + table)
        if args.out:
            with open(args.out, "w") as f:
                f.write(table)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
