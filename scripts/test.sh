#!/usr/bin/env bash
# The whole test suite: unit tests, engine tests, scenario/CLI tests, the validation cases, and the
# emulator / interop / load tests (as root: they create network namespaces and remove them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The interop, emulator and load tests drive real third-party peers (quic-go, aioquic, ngtcp2,
# Chromium, nginx): install them (idempotent; a second run takes a second).
bash scripts/install-peers.sh --interop
# Formatting and lints first: they take seconds once the build is warm and fail fast.
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked "$@"
# The Python package's tests (DataFrames, errors, Dask on a two-process LocalCluster, the
# notebook) against the quiclab binary cargo just built.
.venv/bin/python -m pytest -q -p no:cacheprovider python/tests
