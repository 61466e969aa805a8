#!/usr/bin/env bash
# The main job: build quiclab, run the analytic validation suite (seed 001's cases for QUIC and
# the TCP model, QUIC-vs-TCP cross-check), then reproduce the seed studies (quick repetitions;
# pass --full for every repetition the studies call for).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked -p quiclab
target/release/quiclab validate
exec target/release/quiclab reproduce "$@"
