#!/usr/bin/env bash
# `gpusqueeze report -- CMD` on real-model programs (bench/realmodels/pairs.py, "before" variants): each program timed
# alone (its own clock: ms per step, no tracer), then under `report --runs 2 -- CMD` (untraced baseline with NVTX
# ranges only, a traced run analysed, the allocator's history), then alone again. Checks: the baseline's step P50
# against the program's own figure alone, the verdict and first finding against the pair's measured fix
# (bench/results/2026-12-06-h100-realmodels), the whole run within --budget. Writes report_program.log,
# alone.jsonl and report_program.tgz (each program's report.json, report.md, index.html, stdout, stderr) to $OUT.
# Needs the carried build (scripts/device_carry.sh).
# Usage: run(command="bash bench/device/report_program.sh", carry=[".carry/build.txz"])
#        SPECS="graphs_mobilenet_infer 200" BUDGET=120 REPORT_ARGS="--step-range X" bash bench/device/report_program.sh
set -uo pipefail
[ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
BUILD=.carry/build LOG=report_program.log source "$(dirname "$0")/lib.sh"  # $OUT, $B, $log and its header
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)' \
  >>"$log" 2>&1
FINAL=$OUT
W=/tmp/rp
mkdir -p $W
end=$(( $(date +%s) + ${BUDGET_S:-540} ))
IFS=, read -ra specs <<<"${SPECS:-graphs_mobilenet_infer 300,cl_resnet50_infer 120,h2d_resnet50_infer 120,sdpa_gpt2_infer 60}"
alone() {  # $1 pair, $2 steps, $3 label
  out=$(timeout 120 python3 bench/realmodels/pairs.py run "$1" before --steps "$2" 2>>"$log" | tail -n 1)
  echo "{\"when\": \"$3\", \"result\": ${out:-null}}" | tee -a "$FINAL/alone.jsonl"
}
for spec in "${specs[@]}"; do
  set -- $spec
  [ "$(date +%s)" -lt "$end" ] || { echo "skipped $1 (budget)" | tee -a "$log"; continue; }
  alone "$1" "$2" before
  s0=$(date +%s)
  timeout 300 $B report --budget "${BUDGET:-120}" --runs 2 ${REPORT_ARGS:-} -o "$W/$1" -- \
    python3 bench/realmodels/pairs.py run "$1" before --steps "$2" >"$W/$1.stdout" 2>"$W/$1.stderr"
  rc=$?
  echo "$1: report exit $rc in $(( $(date +%s) - s0 )) s" | tee -a "$log"
  alone "$1" "$2" after
  tail -n 5 "$W/$1.stderr" >>"$log"
  ls -la "$W/$1/program" >>"$log" 2>&1
  python3 - "$W/$1/report.json" <<'PY' 2>&1 | tee -a "$log"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["sections"]
b = s.get("program-baseline", {})
st = b.get("steps", {})
print("  baseline:", b.get("how"), "| P50 %.3f ms, P99 %.3f ms, steady %s, warm-up %s" % (
    st.get("p50_ns", 0) / 1e6, st.get("p99_ns", 0) / 1e6, st.get("steady_steps"), st.get("warmup_steps")))
print("  traced P50 %.3f ms, untraced/traced %.3f, told %.3f ms" % (
    b.get("traced_step_p50_ns", 0) / 1e6, b.get("untraced_over_traced", 0), b.get("untraced_step_ns_told", 0) / 1e6))
a = s.get("program-analysis", {})
print("  analysis verdict:", a.get("verdict", {}).get("summary"))
for f in [f for f in a.get("findings", []) if f.get("severity") in ("warn", "fail")][:4]:
    print("   ", f.get("severity"), f.get("id"), "-", f.get("title"))
print("  page verdict:", [(v["finding"].get("id"), v["finding"].get("severity"), v.get("section")) for v in j.get("verdict", [])][:5])
print("  notes:", b.get("notes"))
PY
done
# The pages and the programs' output, without the traces and snapshots (tens of MB).
(cd $W && find . -name '*.gsqt' -delete -o -name '*.pickle' -delete; tar czf "$FINAL/report_program.tgz" .)
ls -la "$FINAL"
