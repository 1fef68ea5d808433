#!/usr/bin/env bash
# Device call 9, the working tree to be committed (RMSNorm 8192 in 512 x 2 at four blocks an SM with 32-bit indices
# and a plain second read; RMSNorm 256 a warp a row, one access a thread), carried gzipped in .carry/build: the
# kernels' GPU tests; row_tune of RMSNorm 8192; gpusqueeze's kernels against PyTorch eager and torch.compile over
# 256-65536, five rounds in rotating order; `gpusqueeze kernels`.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card9.txt"
LOG=run9.log source bench/device/lib.sh
run $BUILD/tests/test_kernels_gpu
run $BUILD/tests/row_tune --ops rms_norm --widths 256,8192
run timeout 300 python3 bench/kernels/torch_compare.py --widths 256,512,1024,2048,4096,8192,16384,32768,65536 \
  --rounds 5 --reps 10 --out $OUT/torch9.json
run timeout 150 $B kernels --max-seconds 0.5 -o $OUT/kernels9.json
gzip -f $OUT/kernels9.json
grep -E '^\$|exit|tests passed|FAILED|PASSED|best:|shipped plan|^\| ' "$log" | tail -n 80
