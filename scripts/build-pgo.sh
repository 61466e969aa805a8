#!/usr/bin/env bash
# Opt-in profile-guided build of quiclab (issue 16): the release profile (fat LTO, one codegen
# unit) plus LLVM PGO trained on the simulator's benchmark rows. The README's main build command
# stays `cargo build --release`; this script is for long simulation sweeps and the benchmark
# figures that say they come from it.
#
# Measured (session 8, `scripts/bench-sim-compare.py` against 13f8cf1, load average 3-5), 10
# Mbit/s / 1 Gbit/s quinn rows: 1.24x / 1.27x -> 1.32x / 1.36x by default, 1.72x / 1.74x ->
# 2.04x / 2.03x with `crypto = "none"`; CPU time of the 1 Gbit/s quinn run -6.8% (null cipher
# -14.6%), of calibration scenarios outside the training set -6.3 to -6.5%; every golden value
# identical.
# Build time here: about 22 minutes under load (instrumented 14 min, training 1 min, optimised
# 6 min); both release trees live in target/pgo (about 1.8 GB).
#
# Usage: scripts/build-pgo.sh            → target/pgo/x86_64-unknown-linux-gnu/release/quiclab
#
# Steps: (1) an instrumented release build, (2) training: `quiclab bench` with both packet
# protection modes (quinn, TCP model, research model rows) and one repetition of every example
# scenario, (3) llvm-profdata merges the raw profiles, (4) the release build again with them.
# Needs rustup's llvm-tools component (added here, idempotently: its llvm-profdata must match
# rustc's LLVM). Two release builds: about twice `cargo build --release`'s time. The raw
# profiles live in a private temporary directory removed on exit. The build uses an explicit
# --target so that build scripts and proc macros are neither instrumented nor optimised with
# the profile (cargo applies RUSTFLAGS only to target code then).
set -euo pipefail

cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
sysroot=$(rustc --print sysroot)
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    echo "build-pgo: adding rustup's llvm-tools component (llvm-profdata)"
    rustup component add llvm-tools
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Its own target directory, so it neither waits for nor replaces `cargo build --release`.
dir=target/pgo
bin="$dir/$host/release/quiclab"

echo "build-pgo: instrumented build"
RUSTFLAGS="-Cprofile-generate=$work/raw" cargo build --release -p quiclab --target "$host" --target-dir "$dir"

echo "build-pgo: training"
"$bin" bench --quick >/dev/null
"$bin" bench --quick --crypto none >/dev/null
for f in scenarios/examples/*.toml; do
    # One repetition per sweep point: the examples add lossy, multi-flow and 0-RTT paths.
    "$bin" sim "$f" --reps 1 -j 1 --no-series --out "$work/out" >/dev/null
    rm -rf "$work/out"
done

"$profdata" merge -o "$work/merged.profdata" "$work/raw"

echo "build-pgo: optimised build"
RUSTFLAGS="-Cprofile-use=$work/merged.profdata" cargo build --release -p quiclab --target "$host" --target-dir "$dir"
echo "build-pgo: $bin"
