#!/usr/bin/env bash
# Device call 6: the working tree with LayerNorm's eight-pack plans asking for a 1% shared-memory carveout, carried in
# .carry/build, and the previous build's library (.carry/x, fbe45d2): the kernels' GPU tests; src/ab.py (both builds in
# one process against torch.compile, LayerNorm 8192-32768) twice; torch_compare at the close widths, 15 rounds.
set -uo pipefail
gunzip -rf .carry/build .carry/x && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card6.txt"
LOG=run6.log source bench/device/lib.sh
run $BUILD/tests/test_kernels_gpu
for i in a b; do
  run timeout 150 python3 bench/results/2026-12-04-h200-shuffled/src/ab.py --old $PWD/.carry/x/libgsqkernels-old.so \
    --out $OUT/ab-6$i.json
done
run timeout 200 python3 bench/kernels/torch_compare.py --widths 256,512,1024,16384,32768 --rounds 15 --reps 10 \
  --out $OUT/torch6.json
grep -E '^\$|exit|tests passed|FAILED|^layer_norm|^\| (layer_norm|rms_norm|softmax) ' "$log" | tail -n 40
