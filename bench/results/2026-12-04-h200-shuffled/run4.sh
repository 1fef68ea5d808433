#!/usr/bin/env bash
# Device call 4: as call 3 (src/carve.py, the library reading GSQ_CARVEOUT at each launch) with the carveouts between
# the driver's default and 25 %, without eager.
set -uo pipefail
gunzip -rf .carry/x
export GSQ_KERNELS_LIBRARY=$PWD/.carry/x/libgsqkernels-carve.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card4.txt"
LOG=run4.log source bench/device/lib.sh
S=bench/results/2026-12-04-h200-shuffled/src/carve.py
V=-1,1,3,5,8,12,16,20
run timeout 150 python3 $S --no-eager --values=$V --op layer_norm --cols 16384 --out $OUT/carve4-ln16384.json
run timeout 150 python3 $S --no-eager --values=$V --op rms_norm --cols 8192 --out $OUT/carve4-rms8192.json
run timeout 150 python3 $S --no-eager --values=$V --op layer_norm --cols 1024 --out $OUT/carve4-ln1024.json
run timeout 150 python3 $S --no-eager --values=$V --op rms_norm --cols 256 --out $OUT/carve4-rms256.json
grep -v '^date\|^name\|^NVIDIA' "$log"
