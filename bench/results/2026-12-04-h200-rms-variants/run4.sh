#!/usr/bin/env bash
# Device call 4, the working tree after the plan change (RMSNorm 8192 in 512 x 2, four blocks an SM; 256 a warp a row,
# one access a thread; unsigned 32-bit indices in the two-read kernel), carried gzipped in .carry/build; the library
# of 74c365c in .carry/old: the kernels' GPU tests; rowx9's variants (now built on the new header) at 8192 and 256;
# torch_compare over 256-65536 in five rounds with the new library, then with the old at 2048-65536 (the two-read
# plans the index change touches).
set -uo pipefail
gunzip -rf .carry/build .carry/old && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card4.txt"
LOG=run4.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run $BUILD/tests/test_kernels_gpu
run python3 $R/src/rowx9.py --so .carry/x/rowx9.so --widths 8192,256 --rounds 15 --out $OUT/rowx9-4.json
run timeout 300 python3 bench/kernels/torch_compare.py --widths 256,512,1024,2048,4096,8192,16384,32768,65536 \
  --rounds 5 --reps 10 --out $OUT/torch4-new.json
GSQ_KERNELS_LIBRARY=$PWD/.carry/old/libgsqkernels.so run timeout 200 python3 bench/kernels/torch_compare.py \
  --widths 2048,4096,8192,16384,32768,65536 --rounds 5 --reps 10 --out $OUT/torch4-old.json
grep -E '^\$|exit|tests passed|FAILED|PASSED|^\| |library|shipped|compile  |512x2|rows 32 thr x 1 x 1 rows, block 128' "$log" | tail -n 100
