#!/usr/bin/env bash
# The profile-guided build of quiclab that the main job (scripts/main.sh) runs: the
# release profile (fat LTO, one codegen unit) plus LLVM PGO trained on the simulator's benchmark
# rows. `cargo build --release` stays the build for development and the test suite; this one is
# for simulations: the same results (every golden value identical), ~12% more simulated seconds
# per wall second by default and ~20% with `crypto = "none"` (docs/performance.md).
#
# Measured (`scripts/bench-sim-compare.py` against the plain release build 13f8cf1, load average 3-5), 10
# Mbit/s / 1 Gbit/s quinn rows: 1.24x / 1.27x -> 1.32x / 1.36x by default, 1.72x / 1.74x ->
# 2.04x / 2.03x with `crypto = "none"`; CPU time of the 1 Gbit/s quinn run -6.8% (null cipher
# -14.6%), of calibration scenarios outside the training set -6.3 to -6.5%; every golden value
# identical.
# Build time on 2 cores: about 15-22 minutes the first time (instrumented build, training about
# a minute, optimised build), each in its own target directory (target/pgo-gen, target/pgo) so
# that a later run recompiles only what changed; nothing at all when the sources, Cargo.lock and
# the toolchain are those of the last successful run (a stamp in target/pgo).
#
# Usage: scripts/build-pgo.sh            → target/pgo/<host triple>/release/quiclab
#
# Steps: (1) an instrumented release build, (2) training: `quiclab bench` with both packet
# protection modes (quinn, TCP model, research model rows) and one repetition of every example
# scenario, (3) llvm-profdata merges the raw profiles, (4) the release build again with them.
# Needs rustup's llvm-tools component (added here, idempotently: its llvm-profdata must match
# rustc's LLVM). The raw profiles live in target/pgo-gen/raw-profiles, removed once merged. The
# build uses an explicit --target so that build scripts and proc macros are neither
# instrumented nor optimised with the profile (cargo applies RUSTFLAGS only to target code then).
set -euo pipefail

cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
dir=target/pgo
bin="$dir/$host/release/quiclab"
stamp="$dir/source-stamp"

# What the binary is built from: toolchain, manifests and lock file, every tracked source with
# its uncommitted changes and untracked files, and the training inputs. No git: always rebuild.
source_stamp() {
    git rev-parse --git-dir >/dev/null 2>&1 || return 1
    {
        rustc -vV
        git ls-files -s -- Cargo.toml Cargo.lock crates scenarios scripts/build-pgo.sh
        git diff HEAD -- Cargo.toml Cargo.lock crates scenarios scripts/build-pgo.sh
        git status --porcelain --untracked-files=all -- crates scenarios
    } | sha256sum | cut -d' ' -f1
}
current=$(source_stamp || echo none)
if [ "$current" != none ] && [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$current" ]; then
    echo "build-pgo: $bin is up to date"
    exit 0
fi
rm -f "$stamp"

sysroot=$(rustc --print sysroot)
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    echo "build-pgo: adding rustup's llvm-tools component (llvm-profdata)"
    rustup component add llvm-tools
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gen_dir=target/pgo-gen
gen_bin="$gen_dir/$host/release/quiclab"
# The raw profiles go to a fixed directory of this checkout's own target tree (not a shared
# one), emptied first: the instrumented build's flags name it, so a fixed path keeps cargo's
# fingerprints, and with them every unchanged crate, from one run to the next.
raw="$PWD/$gen_dir/raw-profiles"
rm -rf "$raw"

echo "build-pgo: instrumented build"
RUSTFLAGS="-Cprofile-generate=$raw" cargo build --release --locked -p quiclab --target "$host" --target-dir "$gen_dir"

echo "build-pgo: training"
"$gen_bin" bench --quick >/dev/null
"$gen_bin" bench --quick --crypto none >/dev/null
for f in scenarios/examples/*.toml; do
    # One repetition per sweep point: the examples add lossy, multi-flow and 0-RTT paths.
    "$gen_bin" sim "$f" --reps 1 -j 1 --no-series --out "$work/out" >/dev/null
    rm -rf "$work/out"
done

# The merged profile has a fixed path, so the optimised build's flags (and with them cargo's
# fingerprints of the dependencies) stay the same from one run to the next.
mkdir -p "$dir"
"$profdata" merge -o "$dir/merged.profdata" "$raw"
rm -rf "$raw"

echo "build-pgo: optimised build"
RUSTFLAGS="-Cprofile-use=$PWD/$dir/merged.profdata" cargo build --release --locked -p quiclab --target "$host" --target-dir "$dir"
if [ "$current" != none ]; then echo "$current" > "$stamp"; fi
echo "build-pgo: $bin"
