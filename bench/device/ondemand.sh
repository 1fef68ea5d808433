#!/usr/bin/env bash
# Device run for on-demand capture: the tracer's GPU tests (including `trace --on-demand` + `capture`), and the idle
# on-demand tracer's cost on the launch-bound PyTorch loop, untraced vs idle, interleaved ROUNDS times.
set -uo pipefail
LOG=ondemand.log source "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-5}
run ctest --test-dir /work/main/build -R TraceGpu --output-on-failure
for r in $(seq "$ROUNDS"); do
  echo "round $r untraced: $(python3 bench/trace/workloads.py launch plain)" | tee -a "$log"
  echo "round $r on-demand idle: $($B trace --on-demand -o /tmp/idle.gsqt -- python3 bench/trace/workloads.py launch plain 2>/dev/null)" | tee -a "$log"
done
echo "launch-bound region, untraced vs idle on-demand tracer:" | tee -a "$log"
python3 "$(dirname "$0")/round_medians.py" "$log" region_s untraced "on-demand idle" | tee -a "$log"
