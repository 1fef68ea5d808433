#!/usr/bin/env bash
# Device call 7: rowx9's RMSNorm 8192 variants in 512 x 2 (cache policies of the two reads; partial sums; one
# barrier), beside the shipped kernel and torch.compile, fifteen rounds in rotating order (same .carry/build as
# call 5).
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card7.txt"
LOG=run7.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run python3 $R/src/rowx9.py --so .carry/x/rowx9.so --widths 8192 --only 512x2 --rounds 15 --out $OUT/rowx9-7.json
grep -vE '^\[|^$' "$log" | tail -n 30
