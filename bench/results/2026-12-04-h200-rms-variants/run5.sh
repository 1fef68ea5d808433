#!/usr/bin/env bash
# Device call 5, the working tree with 32-bit in-row indices only in the register-capped two-read shapes (carried
# gzipped in .carry/build; 74c365c's library in .carry/old): the kernels' GPU tests; rowx9's two-read variants at 8192
# (the reduction without its trailing barrier, streaming / evict-first stores); torch_compare at 256-1024, 8192-65536
# in nine rounds with the new library; the old at 32768 and 65536 in five.
set -uo pipefail
gunzip -rf .carry/build .carry/old && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card5.txt"
LOG=run5.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run $BUILD/tests/test_kernels_gpu
run python3 $R/src/rowx9.py --so .carry/x/rowx9.so --widths 8192 --only 512x2 --rounds 15 --out $OUT/rowx9-5.json
run timeout 300 python3 bench/kernels/torch_compare.py --widths 256,512,1024,8192,16384,32768,65536 \
  --rounds 9 --reps 10 --out $OUT/torch5-new.json
GSQ_KERNELS_LIBRARY=$PWD/.carry/old/libgsqkernels.so run timeout 200 python3 bench/kernels/torch_compare.py \
  --widths 32768,65536 --rounds 5 --reps 10 --out $OUT/torch5-old.json
grep -E '^\$|exit|tests passed|FAILED|PASSED|^\| |shipped|compile  |512x2' "$log" | grep -v nchw | tail -n 80
