#!/usr/bin/env bash
# Device call 5 (and the re-run of copyx6, 1-copyx6.log): cluster plans in row_tune; copyx6 built here with
# nvcc -O3 -std=c++17 -arch=sm_90a from ../2026-12-04-h200-copy-tma/src/copyx6.cu and carried.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/5-card.txt"
LOG=5-cluster-row_tune.log source bench/device/lib.sh
run $BUILD/tests/row_tune --ops layer_norm,rms_norm,softmax --widths 16384,32768,65536,131072,262144
grep -E "^(layer|rms|soft)|cluster|best" $log | cut -c1-120
LOG=1-copyx6.log source bench/device/lib.sh
run $BUILD/tests/copyx6
tail -25 $log
