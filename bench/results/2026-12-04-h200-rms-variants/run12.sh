#!/usr/bin/env bash
# Device call 12, the committed build: LayerNorm 16384 with the output at offsets 0-1280 MiB past a pool's start and
# in six tensors from torch.empty_like, beside the allocating call and torch.compile, six rounds (ln_offsets.py).
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card12.txt"
LOG=run12.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run python3 $R/src/ln_offsets.py --rounds 6 --allocated 6 \
  --offsets-kib 0,65536,131072,196608,262144,393216,524288,655360,786432,1048576,1310720 --out $OUT/ln-offsets-12.json
grep -vE '^\[|^$|^date|^name' "$log" | tail -n 40
