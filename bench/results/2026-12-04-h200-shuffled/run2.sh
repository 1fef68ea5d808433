#!/usr/bin/env bash
# Device call 2, the committed build: where LayerNorm 16384's slow rounds come from (src/ln_prev.py), twice.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card2.txt"
LOG=run2.log source bench/device/lib.sh
run timeout 200 python3 bench/results/2026-12-04-h200-shuffled/src/ln_prev.py --rounds 16 --out $OUT/ln-prev-2a.json
run timeout 200 python3 bench/results/2026-12-04-h200-shuffled/src/ln_prev.py --rounds 16 --out $OUT/ln-prev-2b.json
cat "$log" | grep -v '^date\|^name\|^NVIDIA'
