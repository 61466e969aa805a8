#!/usr/bin/env python3
"""quiclab load against the real load tools: ceilings, CPU per request, rate accuracy.

One `quiclab serve` on loopback serves an 11,000-byte body (seed 004's page). Every tool attacks it
in turn over every protocol it supports:

  quiclab load (HTTP/1.1, 2, 3)   oha (1.1, 2, 3)   h2load (1.1, 2)   vegeta (1.1, 2)   wrk (1.1)

and the script reports, per tool and protocol:
  * the ceiling: the highest rate sustained with >= 99.9% success and an achieved rate >= 99% of the
    requested one. The search starts at 10k req/s, doubles up to 80k (or halves down to 625) until
    the outcome changes, then bisects geometrically between the last pass and the first failure
    until they are within 10% of each other; each step is one STEP-second attack (default 4 s), and
    a step that fails is run once more (a failure counts only when it repeats).
    wrk cannot hold a rate (closed model): its row gives the throughput it reached with 64
    connections;
  * generator CPU seconds per 1,000 requests at a fixed 10k req/s (user + system time of the
    generator process only, from wait4's rusage, not the server's), from the search's 10k step;
  * rate accuracy at 1000 req/s (achieved / requested) with the latency percentiles the tool reports.

--cpu-only skips the search and measures CPU per request at 10k req/s a few times per tool, with
voluntary context switches per request (what CPU per request tracks) and each tool's release
granularity: oha sleeps per request on tokio's millisecond timer, h2load releases each client's
requests from a rate timer of at least 10 ms, quiclab releases each request at its own time unless
--release-window batches them (compare quiclab with a window against a peer with the same one).

quiclab runs with `--summary` (histograms only, no per-request results file), as oha and h2load keep
no per-request records either; vegeta writes its binary results stream (its normal pipeline).
Optionally (--memory-run SECONDS, e.g. 600) quiclab then attacks at its ceiling for that long per
protocol with RSS sampled every 5 s, and the script reports whether it stayed flat.

Generator and server share this machine's cores, so the figures compare tools with each other, not
with another machine: run it on an otherwise idle machine. Needs `bash scripts/install-peers.sh
--load-tools` (vegeta, oha, h2load, wrk) and a release build (`cargo build --release -p quiclab`).
Usage: python3 scripts/bench-load.py [--quick] [--tools quiclab,oha,h2load] [--out FILE]
                                    [--memory-run 600] [--baseline OTHER_QUICLAB_BINARY]
                                    [--variant='--release-window 1ms']
       python3 scripts/bench-load.py --cpu-only [--repeat 3] [--variant='--release-window 10ms']
"""

import argparse
import json
import math
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
START = 10000  # first step of the search, and the rate at which CPU per request is measured
TOP = 80000  # highest rate tried (quiclab refuses more than 100k)
BOTTOM = 625  # lowest rate tried
RESOLUTION = 1.10  # stop bisecting when the last failure is within 10% of the last pass
CONFIRM = True  # a failed step is run once more before it counts (--no-confirm: once)
REQUEST_TIMEOUT_S = 2  # per-request limit where the tool has one: overload ends attacks quickly


class Result:
    """What one attack measured, normalised across tools (latencies in ms, CPU in seconds)."""

    def __init__(self, requested, achieved, success, requests=0, p50=None, p90=None, p99=None, mean=None,
                 mx=None):
        self.requested, self.achieved, self.success, self.requests = requested, achieved, success, requests
        self.p50, self.p90, self.p99, self.mean, self.max = p50, p90, p99, mean, mx
        self.cpu_s = None  # generator user + system seconds
        self.max_rss_kb = None
        self.switches = None  # the generator's voluntary context switches (sleeps), from wait4

    def measured(self, usage):
        """Takes the generator's CPU, peak memory and context switches from `reap`."""
        self.cpu_s, self.max_rss_kb, self.switches = usage
        return self

    def sustained(self):
        return self.success >= 0.999 and self.achieved >= 0.99 * self.requested

    def cpu_per_1000(self):
        if self.cpu_s is None or not self.requests:
            return None
        return self.cpu_s / (self.requests / 1000)

    def switches_per_request(self):
        if self.switches is None or not self.requests:
            return None
        return self.switches / self.requests


def spawn(cmd, tmp, stdin_text=None):
    """Starts cmd with stdout/stderr to files in tmp; returns (process, stdout path, stderr path)."""
    out_path = tempfile.mktemp(dir=tmp, suffix=".out")
    err_path = tempfile.mktemp(dir=tmp, suffix=".err")
    stdin = subprocess.DEVNULL
    if stdin_text is not None:
        in_path = tempfile.mktemp(dir=tmp, suffix=".in")
        with open(in_path, "w") as f:
            f.write(stdin_text)
        stdin = open(in_path)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err)
    return p, out_path, err_path


def usage_of(usage):
    """(CPU s, max RSS kB, voluntary context switches) from wait4's rusage."""
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss, usage.ru_nvcsw


def reap(p, timeout):
    """Waits for p (killing it after timeout s); returns (exit status, usage_of(rusage)) from wait4."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return p.returncode, usage_of(usage)
        if time.monotonic() > deadline:
            p.kill()
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = -9
            raise RuntimeError(f"{p.args[0]} did not finish within {timeout} s")
        time.sleep(0.02)


def run_measured(cmd, tmp, timeout, stdin_text=None):
    """Runs cmd; returns (stdout text, usage_of(rusage)); raises with stderr on failure."""
    p, out_path, err_path = spawn(cmd, tmp, stdin_text)
    code, usage = reap(p, timeout)
    out = open(out_path, errors="replace").read()
    err = open(err_path, errors="replace").read()
    for path in (out_path, err_path):
        os.unlink(path)
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}… exited {code}: {err.strip()[-400:]}")
    return out, usage


def run(cmd, timeout=120, stdin=None):
    """Runs cmd, returns stdout (text); raises with stderr on failure."""
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}… exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


def quiclab_cmd(binary, url, proto, rate, dur, summary, extra=()):
    return [binary, "load", "attack", "--rate", f"{rate}/s", "--duration", f"{dur}s", "--http", proto,
            "--ca", CA, "--timeout", f"{REQUEST_TIMEOUT_S}s", "--summary", summary, *extra, url]


def quiclab_result(summary_path, rate):
    s = json.load(open(summary_path))
    os.unlink(summary_path)
    lat = s["latency_ms"]
    return Result(rate, s["rate"]["achieved"], s["success_ratio"], s["requests"], lat.get("p50"),
                  lat.get("p90"), lat.get("p99"), lat.get("mean"), lat.get("max"))


def make_quiclab(binary, extra=()):
    # A binary older than `--summary` (a baseline build) writes its results file and is reported
    # by `load report` afterwards; the report's CPU is not counted.
    has_summary = "--summary" in run([binary, "load", "attack", "--help"])

    def quiclab(url, proto, rate, dur, tmp):
        summary = os.path.join(tmp, f"summary-{proto}-{rate}.json")
        cmd = quiclab_cmd(binary, url, proto, rate, dur, summary, extra)
        if not has_summary:
            records = os.path.join(tmp, "records.jsonl")
            cmd[cmd.index("--summary"):cmd.index("--summary") + 2] = ["--output", records]
        _, usage = run_measured(cmd, tmp, dur + 60)
        if not has_summary:
            with open(summary, "w") as f:
                f.write(run([binary, "load", "report", "--type", "json", records]))
            os.unlink(records)
        return quiclab_result(summary, rate).measured(usage)
    return quiclab


def vegeta(url, proto, rate, dur, tmp):
    results = os.path.join(tmp, "vegeta.bin")
    attack = [os.path.join(PEERS_BIN, "vegeta"), "attack", f"-rate={rate}/s", f"-duration={dur}s",
              f"-timeout={REQUEST_TIMEOUT_S}s", f"-root-certs={CA}", f"-output={results}",
              f"-http2={'true' if proto == '2' else 'false'}"]
    _, usage = run_measured(attack, tmp, dur + 60, stdin_text=f"GET {url}\n")
    s = json.loads(run([os.path.join(PEERS_BIN, "vegeta"), "report", "-type=json", results], timeout=120))
    os.unlink(results)
    lat = {k: v / 1e6 for k, v in s["latencies"].items()}
    r = Result(rate, s["rate"], s["success"], s["requests"], lat["50th"], lat["90th"], lat["99th"], lat["mean"],
               lat["max"])
    return r.measured(usage)


def oha(url, proto, rate, dur, tmp):
    cmd = [os.path.join(PEERS_BIN, "oha"), "--no-tui", "--output-format", "json", "-q", str(rate),
           "-z", f"{dur}s", "-c", "100", "-t", f"{REQUEST_TIMEOUT_S}s", "--latency-correction", "--cacert", CA,
           "--http-version", {"1.1": "1.1", "2": "2", "3": "3"}[proto], url]
    text, usage = run_measured(cmd, tmp, dur + 90)
    s = json.loads(text)
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
    r = Result(rate, total / dur, ok / total if total else 0.0, total, ms(pct.get("p50")), ms(pct.get("p90")),
               ms(pct.get("p99")), ms(summ.get("average")), ms(summ.get("slowest")))
    return r.measured(usage)


def h2load_clients(proto):
    return 50 if proto == "1.1" else 10


def h2load(url, proto, rate, dur, tmp):
    clients = h2load_clients(proto)
    cmd = ["h2load", "-D", str(dur), "-c", str(clients), "-m", "1" if proto == "1.1" else "10",
           f"--rps={rate / clients:g}", url]
    if proto == "1.1":
        cmd.insert(1, "--h1")
    text, usage = run_measured(cmd, tmp, dur + 60)
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded", text)
    total, succeeded = int(m.group(1)), int(m.group(4))
    mean = re.search(r"time for request:\s+\S+\s+\S+\s+(\S+)", text)
    r = Result(rate, total / dur, succeeded / total if total else 0.0, total, mean=parse_time(mean.group(1)))
    return r.measured(usage)


def wrk(url, proto, rate, dur, tmp):
    text, usage = run_measured(["wrk", "-t2", "-c64", f"-d{dur}s", "--latency", url], tmp, dur + 60)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    total = int(re.search(r"(\d+) requests in", text).group(1))
    bad = sum(int(x) for x in re.findall(r"Non-2xx or 3xx responses: (\d+)", text))
    pct = {k: parse_time(v) for k, v in re.findall(r"^\s+(50|90|99)%\s+(\S+)", text, re.M)}
    r = Result(rps, rps, (total - bad) / total if total else 0.0, total, pct.get("50"), pct.get("90"),
               pct.get("99"))
    return r.measured(usage)


def parse_time(s):
    """'1.23ms' / '850.00us' / '2.1s' -> milliseconds."""
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v


def version(name):
    """The tool's name with its version, as the table shows it."""
    try:
        if name == "oha":
            return run([os.path.join(PEERS_BIN, "oha"), "--version"]).strip()
        if name == "vegeta":
            # Built from source, it reports an empty version: take the pinned one.
            pins = open(os.path.join(REPO, "scripts", "install-peers.sh")).read()
            m = re.search(r"^VEGETA_VERSION=(\S+)", pins, re.M)
            return f"vegeta {m.group(1)}" if m else "vegeta"
        if name == "h2load":
            return run(["h2load", "--version"]).strip().replace("h2load nghttp2/", "h2load ")
    except Exception:  # a version string is decoration; never fail the benchmark on it
        pass
    return name


def step_rate(x):
    """A search rate rounded to 2 significant digits (readable steps)."""
    digits = max(0, int(math.floor(math.log10(x))) - 1)
    return int(round(x / 10 ** digits) * 10 ** digits)


def release_granularity(name, proto, rate):
    """How finely a tool spaces its requests at `rate` (from each tool's source): releasing
    requests in batches saves wake-ups, so CPU per request only compares at equal granularity."""
    if name.startswith("quiclab"):
        m = re.search(r"--release-window (\S+)", name)
        return f"batches within {m.group(1)}" if m else "each request at its own time"
    if name == "oha":
        return "1 ms (a tokio sleep per request; tokio's timer wheel ticks in ms)"
    if name == "h2load":
        clients = h2load_clients(proto)
        period = max(10.0, 1000 * clients / rate)  # h2load's per-client rate timer is never below 10 ms
        return f"{period:g} ms batches per client ({clients} clients)"
    if name == "vegeta":
        return "each request at its own time (a Go timer per hit)"
    return "closed loop"


def cpu_table(tools, wanted, protos_wanted, url, dur, tmp, repeat):
    """--cpu-only: each tool at START req/s, `repeat` times, medians of CPU and context switches."""
    rows = []
    for name in wanted:
        fn, protos = tools[name]
        if name == "wrk":
            continue
        for proto in protos:
            if proto not in protos_wanted:
                continue
            runs = [fn(url, proto, START, dur, tmp) for _ in range(repeat)]
            med = lambda xs: None if None in xs else sorted(xs)[len(xs) // 2]  # noqa: E731
            cpu = med([r.cpu_per_1000() for r in runs])
            sw = med([r.switches_per_request() for r in runs])
            p50 = med([r.p50 for r in runs])
            worst = min(runs, key=lambda r: (r.sustained(), r.success))
            rows.append(f"| {version(name)} | {proto} | {release_granularity(name, proto, START)} | {fmt(cpu, 3)} | "
                        f"{fmt(sw, 2)} | {fmt(p50)} | {worst.success * 100:.2f} | {worst.achieved / START:.4f} |")
            print(rows[-1], flush=True)
    return (f"| tool | HTTP | release granularity at {START // 1000}k/s | generator CPU s per 1000 requests | "
            "voluntary context switches per request | p50 ms | lowest success % | lowest achieved / requested |\n"
            "|---|---|---|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
            f"\n(medians of {repeat} attacks of {dur} s each)\n")


def ceiling(attack, log):
    """Finds the highest sustained rate; returns (rate or None, '≥'/'<'/'' qualifier, results by rate)."""
    seen = {}

    def once(rate):
        try:
            r = attack(rate)
        except Exception as e:  # a tool that crashes at a rate has not sustained it
            log(f"{rate}/s: {e}")
            return None
        log(f"{rate}/s: achieved {r.achieved:.0f}, success {r.success:.4f}"
            + (f", CPU {r.cpu_s:.2f} s" if r.cpu_s is not None else "")
            + ("" if r.sustained() else "  <- not sustained"))
        return r

    def passes(rate):
        r = once(rate)
        if CONFIRM and (r is None or not r.sustained()):
            # One noisy step (another process took the CPU for a moment) must not end the
            # search: a failure counts when it repeats.
            r = once(rate) or r
        seen.setdefault(rate, r)
        if r is not None and r.sustained():
            seen[rate] = r
        return r is not None and r.sustained()

    lo = hi = None
    rate = START
    if passes(rate):
        lo = rate
        while lo < TOP:
            rate = min(lo * 2, TOP)
            if passes(rate):
                lo = rate
            else:
                hi = rate
                break
        if hi is None:
            return lo, "≥ ", seen
    else:
        hi = rate
        while hi > BOTTOM:
            rate = hi // 2
            if passes(rate):
                lo = rate
                break
            hi = rate
        if lo is None:
            return hi, "< ", seen
    while hi / lo > RESOLUTION:
        mid = step_rate(math.sqrt(lo * hi))
        if mid in (lo, hi):
            break
        if passes(mid):
            lo = mid
        else:
            hi = mid
    return lo, "", seen


def memory_run(binary, url, proto, rate, seconds, tmp):
    """Attacks at `rate` for `seconds` sampling RSS every 5 s; returns a Markdown table row."""
    summary = os.path.join(tmp, f"memory-{proto}.json")
    p, out_path, err_path = spawn(quiclab_cmd(binary, url, proto, rate, seconds, summary), tmp)
    samples = []  # (seconds since start, RSS kB)
    t0 = time.monotonic()
    while time.monotonic() < t0 + seconds + 60:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                status = f.read()
        except OSError:
            break
        m = re.search(r"VmRSS:\s+(\d+) kB", status)
        if m is None:  # a zombie has no memory left: the run is over
            break
        samples.append((time.monotonic() - t0, int(m.group(1))))
        # Sleep in short steps so the end of the run is noticed promptly (the child is reaped
        # by wait4 below, which keeps its rusage: Popen.poll would reap it and lose that).
        until = time.monotonic() + 5
        while time.monotonic() < until and "State:\tZ" not in open(f"/proc/{p.pid}/status").read():
            time.sleep(0.2)
    code, (_, max_rss, _) = reap(p, 60)
    if code != 0:
        raise RuntimeError(f"memory run h{proto} exited {code}: {open(err_path).read()[-400:]}")
    r = quiclab_result(summary, rate)
    # Flat: after the first minute (connections, histograms and allocator pools have grown to
    # their working size) RSS grows by less than 10% (or 4 MB) to the end of the run.
    warm = [kb for t, kb in samples if t >= min(60, seconds / 4)]
    first, last = (warm[0], warm[-1]) if warm else (0, 0)
    flat = last <= max(first * 1.10, first + 4096)
    print(f"  memory h{proto} {rate}/s: RSS {first / 1024:.1f} MB after warm-up, {last / 1024:.1f} MB at the end, "
          f"max {max_rss / 1024:.1f} MB, success {r.success:.4f}, achieved {r.achieved:.0f}", file=sys.stderr)
    return (f"| {proto} | {rate} | {seconds} | {r.achieved:.0f} | {r.success * 100:.3f} | {first / 1024:.1f} | "
            f"{last / 1024:.1f} | {max_rss / 1024:.1f} | {'flat' if flat else 'GROWS'} |")


def load_average():
    """The 1-minute load average: the figures depend on what else the machine runs."""
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def fmt(x, d=2):
    return "–" if x is None else f"{x:.{d}f}"


def main():
    global START, TOP, CONFIRM
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 s steps, coarse search (a smoke test)")
    ap.add_argument("--step", type=float, default=4, help="seconds per search step (default 4)")
    ap.add_argument("--out", default=None, help="write the Markdown table here too")
    ap.add_argument("--tools", default="quiclab,oha,h2load,vegeta,wrk", help="comma-separated subset of tools")
    ap.add_argument("--http", default="1.1,2,3", help="comma-separated subset of HTTP versions")
    ap.add_argument("--no-confirm", action="store_true",
                    help="a failed step counts at once (default: it is run once more and counts if it fails again)")
    ap.add_argument("--baseline", default=None, metavar="BIN",
                    help="also run another quiclab binary as tool 'quiclab-base' (e.g. a build of main)")
    ap.add_argument("--variant", action="append", default=[], metavar="ARGS",
                    help="also run quiclab with these extra attack options as its own row, e.g. "
                         "--variant='--release-window 1ms' (repeatable)")
    ap.add_argument("--cpu-only", action="store_true",
                    help=f"skip the ceiling search: attack at {START // 1000}k req/s --repeat times per tool and "
                         "report CPU and context switches per request beside each tool's release granularity")
    ap.add_argument("--repeat", type=int, default=3, help="attacks per tool and protocol with --cpu-only (default 3)")
    ap.add_argument("--memory-run", type=int, default=0, metavar="SECONDS",
                    help="then run quiclab at its ceiling for SECONDS per protocol, sampling RSS (e.g. 600)")
    ap.add_argument("--memory-rate", type=int, default=None,
                    help="rate of the memory run (default: the ceiling just found)")
    args = ap.parse_args()
    dur = 2 if args.quick else args.step
    dur = int(dur) if float(dur).is_integer() else dur
    wanted = args.tools.split(",")
    protos_wanted = set(args.http.split(","))
    tools = {"quiclab": (make_quiclab(QUICLAB), ["1.1", "2", "3"]), "oha": (oha, ["1.1", "2", "3"]),
             "h2load": (h2load, ["1.1", "2"]), "vegeta": (vegeta, ["1.1", "2"]), "wrk": (wrk, ["1.1"])}
    if args.baseline:
        tools["quiclab-base"] = (make_quiclab(args.baseline), ["1.1", "2", "3"])
        wanted.insert(wanted.index("quiclab") + 1 if "quiclab" in wanted else 0, "quiclab-base")
    for extra in args.variant:
        name = f"quiclab {extra}"
        tools[name] = (make_quiclab(QUICLAB, extra.split()), ["1.1", "2", "3"])
        wanted.insert(wanted.index("quiclab") + 1 if "quiclab" in wanted else 0, name)
    for tool in wanted:
        if tool not in tools:
            sys.exit(f"unknown tool {tool!r} (quiclab, oha, h2load, vegeta, wrk)")
    for tool in ["vegeta", "oha"]:
        if tool in wanted and not os.access(os.path.join(PEERS_BIN, tool), os.X_OK):
            sys.exit(f"{tool} missing: run `bash scripts/install-peers.sh --load-tools`")
    for tool in ["h2load", "wrk"]:
        if tool in wanted and not shutil.which(tool):
            sys.exit(f"{tool} missing: run `bash scripts/install-peers.sh --load-tools`")
    if not os.access(QUICLAB, os.X_OK):
        run(["cargo", "build", "--release", "--locked", "-q", "-p", "quiclab"], timeout=3600)
    if args.quick:
        START, TOP = 4000, 16000
    CONFIRM = not args.no_confirm
    began = time.monotonic()
    load_before = load_average()
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
        if args.cpu_only:
            table = cpu_table(tools, wanted, protos_wanted, url, dur, tmp, args.repeat)
            loads = f"load average {load_before:.1f} at the start, {load_average():.1f} at the end"
            print(f"\n{table}\n({(time.monotonic() - began) / 60:.1f} min; {loads})")
            if args.out:
                with open(args.out, "w") as f:
                    f.write(table + f"\n{loads}\n")
            return
        rows, ceilings = [], {}
        for name in wanted:
            fn, protos = tools[name]
            label = version(name)
            for proto in protos:
                if proto not in protos_wanted:
                    continue
                log = lambda msg: print(f"  {name} h{proto} {msg}", file=sys.stderr, flush=True)  # noqa: E731
                at1000 = fn(url, proto, 1000, dur, tmp)
                if name == "wrk":
                    best = f"{at1000.achieved:.0f} (closed loop, 64 connections)"
                    cpu = at1000
                else:
                    rate, qualifier, seen = ceiling(lambda r: fn(url, proto, r, dur, tmp), log)
                    best = f"{qualifier}{rate}"
                    cpu = seen.get(START)
                    if qualifier != "< ":
                        ceilings[(name, proto)] = rate
                accuracy = "–" if name == "wrk" else f"{at1000.achieved / 1000:.4f}"
                cpu_cell = fmt(cpu.cpu_per_1000(), 3) if cpu is not None else "–"
                rows.append(f"| {label} | {proto} | {best} | {cpu_cell} | {accuracy} | {at1000.success * 100:.2f} | "
                            f"{fmt(at1000.p50)} | {fmt(at1000.p90)} | {fmt(at1000.p99)} | {fmt(at1000.mean)} |")
                print(rows[-1], flush=True)
        table = (f"| tool | HTTP | highest sustained req/s | generator CPU s per 1000 requests at {START // 1000}k/s | "
                 "achieved / requested at 1000/s | success % at 1000/s | p50 ms | p90 ms | p99 ms | mean ms |\n"
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n")
        took = time.monotonic() - began
        loads = f"load average {load_before:.1f} at the start, {load_average():.1f} at the end"
        print(f"\n{table}\n(search steps of {dur} s; {took / 60:.1f} min; {loads})")
        table += f"\n{loads}\n"
        if args.memory_run:
            mem_rows = []
            for proto in ["1.1", "2", "3"]:
                rate = args.memory_rate or ceilings.get(("quiclab", proto))
                if proto not in protos_wanted or rate is None:
                    continue
                mem_rows.append(memory_run(QUICLAB, url, proto, rate, args.memory_run, tmp))
                print(mem_rows[-1], flush=True)
            mem_table = ("| HTTP | req/s | seconds | achieved req/s | success % | RSS after warm-up MB | "
                         "RSS at end MB | max RSS MB | memory |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n"
                         + "\n".join(mem_rows) + "\n")
            print("\n" + mem_table)
            table += "\nquiclab at its ceiling, RSS sampled every 5 s:\n\n" + mem_table
        if args.out:
            with open(args.out, "w") as f:
                f.write(table)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
