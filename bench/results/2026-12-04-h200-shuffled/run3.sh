#!/usr/bin/env bash
# Device call 3: the library built with GSQ_CARVEOUT read at each launch (experiment, src/carve.py): our kernels at
# each shared-memory carveout beside copy, eager and torch.compile, at the widths where ours and compile are close.
set -uo pipefail
gunzip -rf .carry/x
export GSQ_KERNELS_LIBRARY=$PWD/.carry/x/libgsqkernels-carve.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card3.txt"
LOG=run3.log source bench/device/lib.sh
S=bench/results/2026-12-04-h200-shuffled/src/carve.py
run timeout 120 python3 $S --op layer_norm --cols 16384 --out $OUT/carve-ln16384.json
run timeout 120 python3 $S --op rms_norm --cols 256 --out $OUT/carve-rms256.json
run timeout 120 python3 $S --op rms_norm --cols 8192 --out $OUT/carve-rms8192.json
run timeout 120 python3 $S --op layer_norm --cols 1024 --out $OUT/carve-ln1024.json
run timeout 120 python3 $S --op softmax --cols 1024 --out $OUT/carve-sm1024.json
grep -v '^date\|^name\|^NVIDIA' "$log"
