#!/usr/bin/env bash
# The main job: build quiclab, run the analytic validation suite (seed 001's cases for QUIC and
# the TCP model, QUIC-vs-TCP cross-check), then reproduce the seed studies (quick repetitions;
# pass --full for every repetition the studies call for).
#
# The build is the profile-guided one (scripts/build-pgo.sh: same results, faster simulations;
# skipped when nothing changed since its last run). Where it cannot be made (no rustup to add
# llvm-tools, say), the job says so and goes on with the plain release build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
host=$(rustc -vV | sed -n 's/^host: //p')
if bash scripts/build-pgo.sh; then
    Q="target/pgo/$host/release/quiclab"
else
    echo "main: the profile-guided build failed (see above); using the plain release build" >&2
    cargo build --release --locked -p quiclab
    Q=target/release/quiclab
fi
"$Q" validate
exec "$Q" reproduce "$@"
