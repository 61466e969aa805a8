#!/usr/bin/env bash
# The main job: build quiclab and run the full analytic validation suite (seed 001's four cases).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked -p quiclab
exec target/release/quiclab validate "$@"
