#!/usr/bin/env bash
# Device call 2 (exploration): copyx8 (every flat-copy variant its own kernel) vs cudaMemcpy D2D at 1-8 GiB; the
# probe's flat copy variants (plain, ld.cg, store evict-first, both) interleaved with cudaMemcpy D2D, twice; row_tune
# of the norms at 4096-32768 with the lean two-read kernel. Build carried gzipped in .carry/build.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/* .carry/build/copyx8
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card2.txt"
LOG=run2.log source bench/device/lib.sh
run .carry/build/copyx8
for r in 1 2; do
  run $B probe mem -b 'mem\.(copy|memcpy_d2d)' -a variant=flat,flat_cg,flat_ef,flat_cg_ef -a width=16 \
    -a bytes=1Gi,4Gi --max-seconds 1 --interleave -o $OUT/mem-variants-$r.json
done
run $BUILD/tests/row_tune --ops layer_norm,rms_norm --widths 4096,8192,16384,32768
gzip -f $OUT/*.json
grep -E '^\$|exit|x memcpy|best:|shipped plan|lean two|mem.copy|memcpy_d2d' "$log" | tail -n 150
