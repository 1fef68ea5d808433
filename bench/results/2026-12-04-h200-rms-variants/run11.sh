#!/usr/bin/env bash
# Device call 11, the committed build: LayerNorm 16384 (and RMSNorm 8192) with the output placed at twelve offsets in
# one pool, beside the allocating call, a copy and torch.compile, eight rounds in rotating order (ln_offsets.py).
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card11.txt"
LOG=run11.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run python3 $R/src/ln_offsets.py --rounds 8 --out $OUT/ln-offsets-11.json
run python3 $R/src/ln_offsets.py --op rms_norm --cols 8192 --rounds 8 --out $OUT/rms-offsets-11.json
grep -vE '^\[|^$|^date|^name' "$log" | tail -n 40
