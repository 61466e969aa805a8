#!/usr/bin/env bash
# The sim-vs-emu table of the README: scenarios/emu/sim-vs-emu.toml (10 MB download, 10 Mbit/s,
# 15 ms one way, 25-packet queue, 0% and 2% Bernoulli loss, QUIC and TCP with CUBIC, 10 repetitions)
# in the simulator and in the emulator, then medians with 95% intervals and the emu/sim ratio.
# Needs root (namespaces). Usage: bash scripts/sim-vs-emu.sh [OUT_DIR] [extra emu/sim flags]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/sim-vs-emu}
shift || true
cargo build --release --locked -q -p quiclab
q=target/release/quiclab
scenario=scenarios/emu/sim-vs-emu.toml
$q sim "$scenario" --out "$out/sim" --resume "$@" >/dev/null
$q emu "$scenario" --out "$out/emu" --resume "$@" >/dev/null
for loss in 0% 2%; do
    for stack in quic tcp; do
        echo "### loss $loss, stack $stack"
        $q compare "sim=$out/sim" "emu=$out/emu" --where "link.loss=$loss" --where "flow.stack=$stack" \
            --metric flows.0.completion_s --metric flows.0.goodput_bps
    done
done
