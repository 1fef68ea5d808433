#!/usr/bin/env bash
# Device call 9, the build of commit a8d88e7: `probe mem` with every copy variant and cudaMemcpy D2D taking turns at
# 256 MiB, 1 GiB and 4 GiB (the ceilings table's copy / cudaMemcpy row per size); torch_compare at the widths where
# ours and torch.compile were closest, nine rounds.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card9.txt"
LOG=run9.log source bench/device/lib.sh
run $B probe mem -b 'mem\.(copy|memcpy_d2d)' -a width=16 -a bytes=256Mi,1Gi,4Gi --max-seconds 1 --interleave \
  -o $OUT/mem-variants-9.json
run python3 bench/kernels/torch_compare.py --widths 256,512,1024,8192,16384 --rounds 9 --reps 10 --out $OUT/torch9.json
gzip -f $OUT/mem-variants-9.json
grep -E '^\$|exit|^\| mem\.copy / |^\| (mem\.copy|mem\.memcpy_d2d) +\||^\| (layer_norm|rms_norm|softmax) ' "$log" | tail -n 40
