#!/usr/bin/env bash
# The device call behind this folder: the shipped build carried gzipped in .carry/build (gpusqueeze, the kernels
# library, test_kernels_gpu, row_tune), every figure from one call. Call 4 ran it with the row_tune line for
# layer_norm,rms_norm only; call 6 as it is.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card.txt"
LOG=run.log source bench/device/lib.sh
run $BUILD/tests/test_kernels_gpu
run $B probe mem -b 'mem\.(copy|memcpy_d2d)' -a variant=flat -a width=16 -a bytes=1Gi,4Gi --max-seconds 1 \
  -o "$OUT/mem.json"
run python3 bench/kernels/torch_compare.py --widths 256,512,1024,2048,4096,8192,16384,32768,65536 \
  --compile-budget-s 200 --out "$OUT/torch.json"
run $BUILD/tests/row_tune --ops ${ROW_OPS:-layer_norm,rms_norm,softmax} --widths ${ROW_WIDTHS:-4096,8192,16384,32768,65536,131072,262144}
grep -E '^\$|exit|tests passed|FAILED|PASSED|x copy' "$log" | grep -v '^  ' | tail -n 60
