#!/usr/bin/env bash
# Device call 1, the committed build (fbe45d2): the kernels' GPU tests; bench/device/kernels.sh as shipped (gpusqueeze
# kernels, torch_compare over 256-65536 in five shuffled rounds with the SM clock read, occupancy, ncu); then
# torch_compare at the widths where ours and torch.compile are closest, fifteen shuffled rounds.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card1.txt"
LOG=run1.log source bench/device/lib.sh
run $BUILD/tests/test_kernels_gpu
SKIP_TESTS=1 COMPILE_BUDGET=200 timeout 420 bench/device/kernels.sh > "$OUT/kernels-summary.txt" 2>&1
echo "[kernels.sh exit $?]" | tee -a "$log"
gzip -f "$OUT/kernels.json"
run timeout 150 python3 bench/kernels/torch_compare.py --widths 256,512,1024,8192,16384 --rounds 15 --reps 10 \
  --out $OUT/torch-close.json
grep -E '^\$|exit|tests passed|FAILED|^\| (layer_norm|rms_norm|softmax) ' "$log" | tail -n 40
tail -n 60 "$OUT/kernels-summary.txt"
