#!/usr/bin/env bash
# What `gpusqueeze trace` costs the traced program, by part: real-model pairs (bench/realmodels/pairs.py, "before"
# variants) run untraced and under the tracer with each CPU-side mode (--cpu-api callbacks, the default; activity;
# none: GPU records only), interleaved rounds, ms per step from the program's own clock. Writes tracer_cost.jsonl and
# tracer_cost.log to $OUT. Needs the carried build (scripts/device_carry.sh).
# Usage: run(command="bash bench/device/tracer_cost.sh", carry=[".carry/build.txz"])
#        SPECS="graphs_mobilenet_infer 200" ROUNDS=6 bash bench/device/tracer_cost.sh   (pairs and steps, rounds)
set -uo pipefail
[ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
BUILD=.carry/build LOG=tracer_cost.log source "$(dirname "$0")/lib.sh"  # $OUT, $B, $log and its header
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$LD_LIBRARY_PATH PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)' \
  >>"$log" 2>&1
FINAL=$OUT
mkdir -p /tmp/tc
end=$(( $(date +%s) + ${BUDGET_S:-480} ))
IFS=, read -ra specs <<<"${SPECS:-graphs_mobilenet_infer 60,item_resnet18_train 20,cl_resnet50_infer 30}"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for spec in "${specs[@]}"; do
    set -- $spec
    for mode in untraced callbacks activity none; do
      [ "$(date +%s)" -lt "$end" ] || { echo "skipped $1 $mode round $round (budget)" | tee -a "$log"; continue; }
      if [ "$mode" = untraced ]; then
        out=$(timeout 120 python3 bench/realmodels/pairs.py run "$1" before --steps "$2" 2>>"$log" | tail -n 1)
      else
        out=$(timeout 120 $B trace --cpu-api "$mode" -o "/tmp/tc/$1-$mode.gsqt" -- \
              python3 bench/realmodels/pairs.py run "$1" before --steps "$2" 2>>"$log" | tail -n 1)
      fi
      echo "{\"round\": $round, \"mode\": \"$mode\", \"result\": ${out:-null}}" | tee -a "$FINAL/tracer_cost.jsonl"
    done
  done
done
ls -la /tmp/tc >>"$log"
