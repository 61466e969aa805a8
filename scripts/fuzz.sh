#!/usr/bin/env bash
# The long fuzzing budget: every property test of the fuzz targets with many more cases than the
# normal `cargo test` run (which keeps them to a few seconds). Usage:
#
#   scripts/fuzz.sh                    # 100000 cases per property, each target under 10 minutes
#   PROPTEST_CASES=20000 scripts/fuzz.sh
#   FUZZ_TIMEOUT=30m scripts/fuzz.sh   # time limit per target (GNU timeout syntax)
#   scripts/fuzz.sh scenario           # only the targets whose name contains "scenario"
#
# A failing case is shrunk and saved beside the test file, as
# crates/<crate>/tests/<test>.proptest-regressions: commit that file, every later run (CI's too)
# replays it first. Exit status: 0 when every target
# passed or ran out of time without a failure, 1 when a target failed.
set -euo pipefail
cd "$(dirname "$0")/.."

export PROPTEST_CASES="${PROPTEST_CASES:-100000}"
# Shrinking a failure can take long on big inputs; bound it too (milliseconds).
export PROPTEST_MAX_SHRINK_TIME="${PROPTEST_MAX_SHRINK_TIME:-60000}"
timeout_per_target="${FUZZ_TIMEOUT:-10m}"
filter="${1:-}"

# crate:test-file pairs (crates/<crate>/tests/<file>.rs).
targets=(
  units:fuzz
  scenario:fuzz_scenario
  netem:fuzz_wire
  emu:fuzz_frame
  load:fuzz_parse
  report:fuzz_store
  experiment:fuzz_manifest
)

failed=()
for t in "${targets[@]}"; do
  crate="${t%%:*}"
  test="${t##*:}"
  if [[ -n "$filter" && "$t" != *"$filter"* ]]; then
    continue
  fi
  # Build first, outside the time limit.
  cargo test --locked -q -p "$crate" --test "$test" --no-run
  echo "== $crate/$test: $PROPTEST_CASES cases per property, at most $timeout_per_target"
  start=$(date +%s)
  status=0
  timeout --foreground "$timeout_per_target" cargo test --locked -q -p "$crate" --test "$test" || status=$?
  took=$(( $(date +%s) - start ))
  if (( status == 0 )); then
    echo "== $crate/$test passed in $took s"
  elif (( status == 124 )); then
    # Every single case runs under its own deadline inside the tests, so running out of the
    # budget means "not all cases ran", not a hang: reported, not failed.
    echo "== $crate/$test: time limit reached after $took s before all cases ran (no failure in those that did)"
  else
    echo "== $crate/$test FAILED (exit $status) after $took s"
    failed+=("$crate/$test")
  fi
done

if (( ${#failed[@]} )); then
  echo "failed: ${failed[*]}"
  exit 1
fi
echo "every fuzz target passed"
