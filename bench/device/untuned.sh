#!/usr/bin/env bash
# Kernels on row widths nobody tuned for (3000, 5120, 11008, 50257: odd and model-sized), side by side in one call
# with PyTorch eager, torch.compile and a device copy of the same bytes (bench/kernels/torch_compare.py): once with
# 128 Mi elements (HBM-bound, 2,669-44,739 rows) and once with 1 Mi (20-349 rows, L2-resident). Goal: never slower
# than torch.compile by more than 2%. Every output is checked against eager torch before it is timed.
# Usage: run(command="bash bench/device/untuned.sh", carry=[".carry/build.txz"])
set -uo pipefail
NAME=untuned source "$(dirname "$0")/carried.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so
run timeout 330 python3 bench/kernels/torch_compare.py --widths 3000,5120,11008,50257 --elements 134217728 \
  --rounds 3 --reps 10 --compile-budget-s 200 --out "$FINAL/untuned-128mi.json"
run timeout 200 python3 bench/kernels/torch_compare.py --widths 3000,5120,11008,50257 --elements 1048576 \
  --rounds 3 --reps 10 --compile-budget-s 120 --out "$FINAL/untuned-1mi.json"
cp "$log" "$FINAL/"
grep -E '^\$|\[exit|^\| |^#|max abs' "$log" | head -120
