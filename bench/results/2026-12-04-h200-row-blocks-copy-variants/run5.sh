#!/usr/bin/env bash
# Device call 5: row_tune with blocks of 32 and 64 threads added to the register plans (torch.compile's persistent
# reductions run one warp a block), at the widths where call 3 left ours behind torch.compile; torch_compare at those
# widths, five rounds in rotating order.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card5.txt"
LOG=run5.log source bench/device/lib.sh
run $BUILD/tests/row_tune --ops layer_norm,rms_norm,softmax --widths 256,512,1024,2048 --reps 15
run python3 bench/kernels/torch_compare.py --widths 256,512,1024,8192 --rounds 5 --reps 10 --out $OUT/torch5.json
grep -E '^\$|exit|best:|shipped plan|^\| ' "$log" | tail -n 60
