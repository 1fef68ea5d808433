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
python3 - "$log" <<'PY' | tee -a "$log"
import json, re, statistics, sys
rows = {"untraced": [], "on-demand idle": []}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (untraced|on-demand idle): (\{.*\})", line)
    if m: rows[m.group(1)].append(json.loads(m.group(2))["region_s"])
u, i = statistics.median(rows["untraced"]), statistics.median(rows["on-demand idle"])
print(f"launch-bound region median: untraced {u:.4f} s, on-demand idle {i:.4f} s, ratio {i/u:.4f} (n={len(rows['untraced'])})")
PY
