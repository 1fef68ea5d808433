#!/usr/bin/env bash
# Device call 9: LayerNorm 16384 beside copy, eager and torch.compile in shuffled rounds (src/carve.py): the library
# built with GSQ_LN_BLOCK read by plan_row (src/ln-block.patch: blocks of 256 threads, one row, as shipped, or 512,
# two rows), at 8192 rows; then at 8184 rows (62 x 132 SMs) and 8200 rows, GSQ_LN_BLOCK=256 only.
set -uo pipefail
gunzip -rf .carry/x
export GSQ_KERNELS_LIBRARY=$PWD/.carry/x/libgsqkernels-block.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card9.txt"
LOG=run9.log source bench/device/lib.sh
S=bench/results/2026-12-04-h200-shuffled/src/carve.py
run timeout 120 python3 $S --env GSQ_LN_BLOCK --values=256,512 --rounds 20 --op layer_norm --cols 16384 \
  --out $OUT/block-ln16384.json
for rows in 8184 8200; do
  run timeout 100 python3 $S --env GSQ_LN_BLOCK --values=256 --rounds 20 --op layer_norm --cols 16384 --rows $rows \
    --out $OUT/rows$rows-ln16384.json
done
grep -v '^date\|^name\|^NVIDIA' "$log"
