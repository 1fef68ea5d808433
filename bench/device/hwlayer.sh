#!/usr/bin/env bash
# Device run for the hardware layer (step 2): `trace --gpu-metrics 100` over three workloads of known character
# (tests/trace/hw_target.cu: cuBLAS bf16 GEMM, LayerNorm+softmax, a too-small launch), their analysis with
# --roofline, the Perfetto export's counter events, and the cost of GPM sampling on the GPU-bound workload
# (traced without vs with --gpu-metrics, interleaved ROUNDS times, the program's own CUDA-event time).
# Usage on the device with the build carried: BUILD=.carry/build bench/device/hwlayer.sh (writes $OUT)
set -uo pipefail
LOG=hwlayer.log source "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-6}
T=$BUILD/tests/hw_target
mkdir -p "$OUT/traces"
for w in "matmul 2000" "memory 5000" "fewblocks 1200"; do
  set -- $w
  run $B trace --gpu-metrics 100 -o "$OUT/traces/h200-hw-$1.gsqt" -- "$T" "$1" "$2"
  f=$(ls "$OUT"/traces/h200-hw-"$1".pid*.gsqt | head -1)
  mv "$f" "$OUT/traces/h200-hw-$1.gsqt"
  run $B trace info "$OUT/traces/h200-hw-$1.gsqt"
  run $B analyze --roofline "$OUT/traces/h200-hw-$1.gsqt"
  $B analyze --json --roofline "$OUT/traces/h200-hw-$1.gsqt" > "$OUT/traces/h200-hw-$1.analysis.json" 2>>"$log"
done
run $B trace export --chrome "$OUT/traces/h200-hw-matmul.gsqt" -o /tmp/hw-matmul.json
python3 - /tmp/hw-matmul.json <<'PY' | tee -a "$log"
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
c = [e for e in ev if e.get("ph") == "C"]
bad = [e for e in c if not (isinstance(e.get("name"), str) and isinstance(e.get("ts"), (int, float))
                            and "pid" in e and isinstance(e.get("args"), dict)
                            and all(isinstance(v, (int, float)) for v in e["args"].values()))]
names = sorted({e["name"] for e in c})
print(f"perfetto counter events: {len(c)} ({len(names)} tracks: {', '.join(names)}); malformed: {len(bad)}")
PY
for r in $(seq "$ROUNDS"); do
  echo "round $r traced: $($B trace -o /tmp/cost.gsqt -- "$T" matmul 1000 2>/dev/null)" | tee -a "$log"
  echo "round $r traced+gpm: $($B trace --gpu-metrics 100 -o /tmp/cost.gsqt -- "$T" matmul 1000 2>/dev/null)" | tee -a "$log"
done
echo "GPM sampling cost, bf16 GEMM 8192^3 ($ROUNDS interleaved rounds):" | tee -a "$log"
python3 "$(dirname "$0")/round_medians.py" "$log" ms_per_iteration traced traced+gpm | tee -a "$log"
grep -E '^\$|exit|^verdict|GPU-bound|dram-bound|low-occupancy|tensor-underused|perfetto|GPM sampling|median|^\| ' "$log" | tail -n 60
