#!/usr/bin/env bash
# Replaced by `quiclab calibrate`: the calibration matrix (scenarios/calibration/*.toml: the clean
# default path, 1/2/5% Bernoulli, Gilbert-Elliott, periodic 1%, a slow deep-queue link, a high-BDP
# path, GEO with and without loss, bandwidth on demand; QUIC cubic, TCP cubic, TCP reno) in the
# simulator and the emulator, medians with 95% intervals and emu/sim ratios, rendered to
# docs/calibration.md. This wrapper builds the release binary and runs it.
# Needs root (namespaces). Usage: bash scripts/sim-vs-emu.sh [OUT_DIR] [extra calibrate flags]
# (e.g. `--engine sim`, `--path clean --path bernoulli-2`, `--reps 5`).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/calibration}
shift || true
cargo build --release --locked -q -p quiclab
exec target/release/quiclab calibrate --out "$out" --markdown docs/calibration.md "$@"
