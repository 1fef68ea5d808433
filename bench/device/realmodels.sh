#!/usr/bin/env bash
# The real-model corpus on one GPU (bench/realmodels/pairs.py), in two calls that fit ten minutes each:
#   measure  every pair timed untraced (interleaved rounds) and recorded with torch.profiler → realmodels.json,
#            torch-traces.tgz, measure.log (no build needed)
#   trace    every variant run under `gpusqueeze trace` (NVTX step ranges) with its traced wall time → gsq-traces.tgz,
#            trace.log, traced.jsonl (needs the carried build: scripts/device_carry.sh)
# Usage: run(command="[SET=heldout] bash bench/device/realmodels.sh measure")
#        run(command="bash bench/device/realmodels.sh trace", carry=[".carry/build.txz"])
set -uo pipefail
phase=${1:-measure}
SET=${SET:-corpus}  # corpus | heldout (bench/realmodels/heldout.py); PAIRS="name …" picks pairs by name
FINAL=${OUT:-/tmp/gsq-out}
mkdir -p "$FINAL"
log=$FINAL/$phase.log
{ echo "date: $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv;
  python3 -c 'import torch, torchvision, transformers; print("torch", torch.__version__, "torchvision", torchvision.__version__, "transformers", transformers.__version__)'; } 2>&1 | tee "$log"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
if [ "$phase" = measure ]; then
  REALMODELS_BUDGET_S=${REALMODELS_BUDGET_S:-470} timeout 560 python3 bench/realmodels/pairs.py measure /tmp/rm \
    ${PAIRS:-$(python3 bench/realmodels/pairs.py list "$SET" | awk '{print $1}')} 2>&1 | grep -v Warning | tee -a "$log"
  cp /tmp/rm/realmodels.json "$FINAL/"
  tar czf "$FINAL/torch-traces.tgz" -C /tmp/rm traces
else
  [ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
  B=.carry/build/gpusqueeze
  mkdir -p /tmp/gsq
  names=${PAIRS:-$(python3 bench/realmodels/pairs.py list "$SET" | awk '$1 != "static_gpt2_decode" {print $1}')}
  end=$(( $(date +%s) + ${TRACE_BUDGET_S:-500} ))
  for n in $names; do
    for v in before after; do
      [ "$(date +%s)" -lt "$end" ] || { echo "$n $v: skipped (budget)" | tee -a "$log"; continue; }
      timeout 120 $B trace -o "/tmp/gsq/$n-$v.gsqt" -- python3 bench/realmodels/pairs.py run "$n" "$v" --steps 6 \
        2>>"$log" | tail -n 1 | tee -a "$FINAL/traced.jsonl"
      echo "$n $v exit ${PIPESTATUS[0]}" >>"$log"
    done
  done
  ls -la /tmp/gsq >>"$log"
  tar czf "$FINAL/gsq-traces.tgz" -C /tmp gsq
fi
# The tool returns files of at most 16 MiB: larger archives come back in 15 MiB parts (cat them to rejoin).
for f in "$FINAL"/*.tgz; do
  [ "$(stat -c%s "$f")" -gt 15000000 ] && split -b 15M "$f" "$f.part-" && rm "$f"
done
ls -la "$FINAL"
