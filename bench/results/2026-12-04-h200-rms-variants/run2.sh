#!/usr/bin/env bash
# Device call 2: rowx9.so's RMSNorm variants beside the shipped kernel (build of 74c365c's kernels), a copy and
# torch.compile at 8192, 256 and 512 (weight packs loaded whole in the two-read, register and pipelined variants; more shapes at 256 and 512), fifteen rounds in rotating order.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card2.txt"
LOG=run2.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run python3 $R/src/rowx9.py --so .carry/x/rowx9.so --widths 8192,256,512 --rounds 15 --out $OUT/rowx9-2.json
grep -vE '^\[|^$' "$log" | tail -n 60
