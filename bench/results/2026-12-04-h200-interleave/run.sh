#!/usr/bin/env bash
# The device call behind this folder: the build of this commit carried gzipped in .carry/build, every figure from
# one call. Harness and probe GPU tests; `probe mem` copy vs cudaMemcpy D2D interleaved, three times; the read-only
# sweep, `probe l2`, `probe pcie` next to a plain cudaMemcpy loop (bench/device/pcie_loop.py), `probe overlap`;
# row_tune of the norms with the forced-occupancy two-read shapes, and LayerNorm 16384 at 8184 rows (31 full waves
# of 264 blocks) against 8192.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card.txt"
LOG=run.log source bench/device/lib.sh
J=/tmp/json; mkdir -p $J
run $BUILD/tests/test_gpu_live --gtest_filter='HarnessGpu.*:ProbesGpu.*'
for r in 1 2 3; do
  run $B probe mem -b 'mem\.(copy|memcpy_d2d)' -a variant=flat -a width=16 -a bytes=1Gi,4Gi --max-seconds 1 \
    --interleave -o $J/mem-interleaved-$r.json
done
run $B probe mem -b 'mem\.read' -a width=16 --max-seconds 1 -o $J/mem-read.json
run $B probe l2 --max-seconds 1 -o $J/l2.json
run $B probe pcie -a bytes=16Mi,256Mi --max-seconds 1 -o $J/pcie.json
run python3 bench/device/pcie_loop.py --sizes 16Mi,256Mi --probe $J/pcie.json --out $J/pcie-loop.json
run $B probe overlap --max-seconds 2 -o $J/overlap.json
run $BUILD/tests/row_tune --ops layer_norm,rms_norm --widths 8192,16384,32768
run $BUILD/tests/row_tune --ops layer_norm --widths 16384 --elements 134086656
tar czf "$OUT/json.tar.gz" -C $J .
grep -E '^\$|exit|tests passed|FAILED|PASSED|cudaMemcpy +\||mem.copy / cudaMemcpy|L2 →|overlap,|/ loop|pinned|best:|x copy\)' "$log" | tail -n 90
