#!/usr/bin/env bash
# Device call 6: rowx9's LayerNorm 16384 variants (the library's two-read kernel, now with 32-bit indices where blocks
# an SM are asked for, at 512 x 2/4, 256 x 4/8, 1024 x 2) beside the shipped register plan and torch.compile, fifteen
# rounds in rotating order (same .carry/build as call 5).
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card6.txt"
LOG=run6.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run python3 $R/src/rowx9.py --so .carry/x/rowx9.so --op layer_norm --widths 16384 --rounds 15 --out $OUT/rowx9-6.json
grep -vE '^\[|^$' "$log" | tail -n 30
