#!/usr/bin/env bash
# The tune pass of the one-GPU device-run issue: capture and verify only. NEVER apply or roll back here: the lent GPU's
# settings are not ours to change. The captured profile becomes a fixture (tests/fixtures/h200-tune-capture.toml).
# Usage on the device with the build carried (see session.sh): bench/device/tune.sh
set -uo pipefail
LOG=tune.log source "$(dirname "$0")/lib.sh"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
unset GSQ_TUNE_FAKE_GPU
run $B tune capture -o "$OUT/tune-capture.toml"
cat "$OUT/tune-capture.toml" >>"$log"
run $B tune verify "$OUT/tune-capture.toml"                 # expect every readable setting passed
run $B tune verify deploy/tune/gpu-server-base.toml         # the shipped base profile against the lent machine
run $B tune verify deploy/tune/steady-clocks-benchmark.toml # no lock applied by us: the lock must read failed
run $B tune apply deploy/tune/steady-clocks-benchmark.toml  # the plan only (no --yes): checks the clock is supported
run $B tune verify --json "$OUT/tune-capture.toml"
grep -E '^verify|^\[exit' "$log"
