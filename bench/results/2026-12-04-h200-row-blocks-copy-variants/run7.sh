#!/usr/bin/env bash
# Device call 7: the two-read kernels of the norms load weight and bias evict-last (as torch.compile's looped
# reductions do): the kernels' GPU tests; row_tune of RMSNorm 4096-65536 and LayerNorm 65536 with the shipped shapes
# also run with the weights unhinted; torch_compare at 4096-65536, five rounds in rotating order.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card7.txt"
LOG=run7.log source bench/device/lib.sh
run $BUILD/tests/test_kernels_gpu
run $BUILD/tests/row_tune --ops rms_norm,layer_norm --widths 4096,8192,16384,32768,65536
run timeout 300 python3 bench/kernels/torch_compare.py --widths 4096,8192,16384,32768,65536 --rounds 5 --reps 10 \
  --out $OUT/torch7.json
grep -E '^\$|exit|PASSED|FAILED|best:|shipped plan|weights unhinted|^\| (layer_norm|rms_norm) ' "$log" | tail -n 80
