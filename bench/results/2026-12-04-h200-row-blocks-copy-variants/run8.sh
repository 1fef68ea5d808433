#!/usr/bin/env bash
# Device call 8: row_tune of RMSNorm 4096-16384 and LayerNorm 16384 with the two-read kernel also in eight-byte packs
# (four bf16 a thread and access, as Triton's looped reductions load them).
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/tests/*
export BUILD=.carry/build PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card8.txt"
LOG=run8.log source bench/device/lib.sh
run $BUILD/tests/row_tune --ops rms_norm --widths 4096,8192,16384 --reps 15
run $BUILD/tests/row_tune --ops layer_norm --widths 16384 --reps 15
grep -E '^\$|exit|best:|shipped plan|8-byte' "$log" | tail -n 60
