#!/usr/bin/env bash
# Device call 7: the library built with GSQ_DYN_SMEM read at each launch of the register plans (src/carve.py --env
# GSQ_DYN_SMEM: that many bytes of unused dynamic shared memory a block), LayerNorm 16384 beside copy, eager and
# torch.compile in shuffled rounds: does asking for more shared memory remove the dependence on the kernel before?
set -uo pipefail
gunzip -rf .carry/x
export GSQ_KERNELS_LIBRARY=$PWD/.carry/x/libgsqkernels-dyn.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card7.txt"
LOG=run7.log source bench/device/lib.sh
S=bench/results/2026-12-04-h200-shuffled/src/carve.py
for i in a b; do
  run timeout 150 python3 $S --env GSQ_DYN_SMEM --values=0,1024,3072,8192,16384 --rounds 15 --op layer_norm \
    --cols 16384 --out $OUT/dyn-ln16384-$i.json
done
grep -v '^date\|^name\|^NVIDIA' "$log"
