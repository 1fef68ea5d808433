#!/usr/bin/env bash
# Device call 10: LayerNorm 16384 and 32768 through three builds in one process (src/ab2.py): as shipped, and with
# the register plans' loads of x carrying an L2 evict-last (xhint1) or evict-first (xhint2) policy
# (src/x-hint.patch), beside copy, eager and torch.compile in shuffled rounds.
set -uo pipefail
gunzip -rf .carry/x
X=$PWD/.carry/x
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card10.txt"
LOG=run10.log source bench/device/lib.sh
run timeout 200 python3 bench/results/2026-12-04-h200-shuffled/src/ab2.py --widths 16384,32768 --rounds 20 \
  --libs shipped=$X/libgsqkernels-shipped.so,xhint1=$X/libgsqkernels-xhint1.so,xhint2=$X/libgsqkernels-xhint2.so \
  --out $OUT/xhint.json
grep -v '^date\|^name\|^NVIDIA' "$log"
