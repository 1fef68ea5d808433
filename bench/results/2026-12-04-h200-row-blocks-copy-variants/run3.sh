#!/usr/bin/env bash
# Device call 3, the build of this commit (carried gzipped in .carry/build): the kernels' and probes' GPU tests; the
# RMSNorm plans against every two-read shape (row_tune); the probe's flat copy and cudaMemcpy D2D taking turns, twice;
# gpusqueeze's kernels against PyTorch eager and torch.compile over 256-65536, five rounds in rotating order.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card3.txt"
LOG=run3.log source bench/device/lib.sh
run $BUILD/tests/test_kernels_gpu
run $BUILD/tests/test_gpu_live --gtest_filter='HarnessGpu.*:ProbesGpu.*'
run $BUILD/tests/row_tune --ops rms_norm --widths 4096,8192,16384,32768
for r in 1 2; do
  run $B probe mem -b 'mem\.(copy|memcpy_d2d)' -a variant=flat -a width=16 -a bytes=1Gi,4Gi --max-seconds 1 \
    --interleave -o $OUT/mem-interleaved-$r.json
done
run timeout 420 python3 bench/kernels/torch_compare.py --widths 256,512,1024,2048,4096,8192,16384,32768,65536 \
  --rounds 5 --reps 10 --compile-budget-s 300 --out $OUT/torch.json
gzip -f $OUT/mem-*.json
grep -E '^\$|exit|tests passed|FAILED|PASSED|best:|shipped plan|mem.copy / cudaMemcpy|^\| ' "$log" | grep -v '^| mem\.' | tail -n 90
