#!/usr/bin/env bash
# coldstart's device pass: the built-in model on the GPU, where Inductor generates Triton kernels, in four fresh
# processes (eager, cold, warm-local, warm-portable), then a bundle prepared and loaded. Compare with the CPU run in
# bench/results/2026-12-05-cpu-coldstart (there the artifact did not spare the C++ compile).
# Usage on the device with the build carried (see session.sh): bench/device/coldstart.sh
set -uo pipefail
LOG=coldstart.log source "$(dirname "$0")/lib.sh"
run timeout 400 $B coldstart --module --python python3 --keep "$OUT/coldstart"
run timeout 200 $B coldstart --module --python python3 --json
run timeout 200 $B coldstart prepare --module --python python3 -o "$OUT/h200.bundle"
run timeout 200 $B coldstart --module --python python3 --phases warm-portable --bundle "$OUT/h200.bundle"
rm -rf "$OUT/coldstart/cache-"*
grep -E '^\| (eager|cold|warm)|^\[exit' "$log"
