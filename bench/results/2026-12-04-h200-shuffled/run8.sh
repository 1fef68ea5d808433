#!/usr/bin/env bash
# Device call 8: the library built with GSQ_LN_FOUR read by plan_row (1: LayerNorm's widest register rows in four
# packs a thread, 512 threads a row, instead of eight in 256; src/ln-four.patch), LayerNorm 16384 beside copy, eager
# and torch.compile in shuffled rounds (src/carve.py --env GSQ_LN_FOUR), twice with different orders.
set -uo pipefail
gunzip -rf .carry/x
export GSQ_KERNELS_LIBRARY=$PWD/.carry/x/libgsqkernels-four.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card8.txt"
LOG=run8.log source bench/device/lib.sh
S=bench/results/2026-12-04-h200-shuffled/src/carve.py
for seed in 0 100; do
  run timeout 150 python3 $S --env GSQ_LN_FOUR --values=0,1 --rounds 20 --seed $seed --op layer_norm --cols 16384 \
    --out $OUT/four-ln16384-$seed.json
done
grep -v '^date\|^name\|^NVIDIA' "$log"
