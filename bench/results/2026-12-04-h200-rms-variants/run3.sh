#!/usr/bin/env bash
# Device call 3: rowx9.so's RMSNorm variants (two-read shapes of 512 x 2 / 512 x 1 / 1024 x 1 / 256 x 2 with the
# blocks an SM asked for, the library's kernel at those shapes, partial sums 1/2/8) beside the shipped kernel, a copy
# and torch.compile at 8192, 4096, 16384 and 256, fifteen rounds in rotating order.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card3.txt"
LOG=run3.log source bench/device/lib.sh
R=bench/results/2026-12-04-h200-rms-variants
run python3 $R/src/rowx9.py --so .carry/x/rowx9.so --widths 8192,4096,16384,256 --rounds 15 --out $OUT/rowx9-3.json
grep -vE '^\[|^$|regs |pipe |rows .*(x 4 rows|x 2 rows|block 64|block 256)' "$log" | tail -n 60
