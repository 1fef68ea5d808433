#!/usr/bin/env bash
# Device run for step 0: records the H200 snapshot fixture and runs env, doctor and report there.
# Usage (device): bench/device/foundation.sh BIN_DIR   — writes everything under $OUT.
set -uo pipefail
BIN=${1:-build}/gpusqueeze
OUT=${OUT:-/tmp/gsq-out}
mkdir -p "$OUT"
log=$OUT/foundation.log
run() { echo "\$ $*" | tee -a "$log"; "$@" >>"$log" 2>&1; rc=$?; echo "[exit $rc]" | tee -a "$log"; return 0; }
{ echo "date: $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader; } >>"$log"
run "$BIN" --version
run "$BIN" env
run "$BIN" env --save "$OUT/h200-env.json"
CUDA_MODULE_LOADING=EAGER PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True run "$BIN" env --check "$OUT/h200-env.json"
run "$BIN" doctor --all --save-snapshot "$OUT/h200-snapshot.json"
run "$BIN" doctor --json
run "$BIN" doctor --snapshot "$OUT/h200-snapshot.json"
run "$BIN" report -o "$OUT/report"
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
tail -n 60 "$log"
