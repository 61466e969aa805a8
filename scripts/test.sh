#!/usr/bin/env bash
# The whole test suite: unit tests, engine tests, scenario/CLI tests and the validation cases.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --locked "$@"
