#!/usr/bin/env bash
# Device call 11, the tree committed with this call's results (LayerNorm's eight-pack plans read x marked L2
# evict-last), carried in .carry/build, and fbe45d2's library (.carry/x, "shipped"): the kernels' GPU tests;
# torch_compare over 256-65536 in five shuffled rounds; src/ab2.py, both builds at LayerNorm 16384 and 32768.
set -uo pipefail
gunzip -rf .carry/build .carry/x && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card11.txt"
LOG=run11.log source bench/device/lib.sh
run $BUILD/tests/test_kernels_gpu
run timeout 170 python3 bench/kernels/torch_compare.py --compile-budget-s 120 --rounds 5 --reps 10 \
  --widths 256,512,1024,2048,4096,8192,16384,32768,65536 --out $OUT/torch11.json
run timeout 60 python3 bench/results/2026-12-04-h200-shuffled/src/ab2.py --widths 16384,32768 --rounds 12 \
  --libs shipped=$PWD/.carry/x/libgsqkernels-shipped.so,new=$GSQ_KERNELS_LIBRARY --out $OUT/ab2-11.json
grep -E '^\$|exit|tests passed|FAILED|PASSED|^layer_norm|^  (shipped|new|compile) |^\| (layer_norm|rms_norm|softmax) ' "$log" | tail -n 60
