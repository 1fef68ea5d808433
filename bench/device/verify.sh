#!/usr/bin/env bash
# Short device check after a change to GPU code: the gpu-labelled tests, one `bench core` compared with the committed
# step-1 run, and the step-0 commands. Usage on the device with build/ carried: bench/device/verify.sh (writes $OUT)
set -uo pipefail
LOG=verify.log source "$(dirname "$0")/lib.sh"
run ctest --test-dir /work/main/build -L gpu --output-on-failure
run $B bench core -o "$OUT/run3.json"
run $B compare bench/results/2026-12-02-h200-step1/run1.json.gz "$OUT/run3.json"
run $B doctor --all
run $B env --check tests/fixtures/h200-env.json
run $B report -o "$OUT/report" --bench "$OUT/run3.json" --trace tests/fixtures/torch-host-slow.json.gz
grep -E '^\$|exit|tests passed|SAME|SLOWER|FASTER|UNCERTAIN|regression|drifted|no drift|checks on' "$log" | tail -n 60
