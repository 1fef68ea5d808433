#!/usr/bin/env bash
# Device call 10, the committed build (as call 9) on another card: torch_compare at the widths where ours and
# torch.compile are closest, fifteen rounds in rotating order.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card10.txt"
LOG=run10.log source bench/device/lib.sh
run timeout 400 python3 bench/kernels/torch_compare.py --widths 256,512,1024,8192,16384 --rounds 15 --reps 10 \
  --out $OUT/torch10.json
grep -E '^\$|exit|^\| (layer_norm|rms_norm|softmax) ' "$log" | tail -n 30
