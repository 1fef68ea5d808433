#!/usr/bin/env bash
# Device call 8 (another card): rowx9's RMSNorm 8192 variants in 512 x 2 at four blocks an SM — the library kernel,
# the second read plain (no cache hints), one barrier — beside the shipped kernel and torch.compile, twenty rounds.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card8.txt"
LOG=run8.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run python3 $R/src/rowx9.py --so .carry/x/rowx9.so --widths 8192 --rounds 20 \
  --only '512x2 hinted min4|acc1 min4$|acc1 min4 one barrier$|evict-last / plain|acc8 min4' --out $OUT/rowx9-8.json
grep -vE '^\[|^$' "$log" | tail -n 30
