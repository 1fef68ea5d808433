#!/usr/bin/env bash
# Kernels at the shapes models run (issue: vocabulary widths, decode batches, W4A16 at M = 1…16), one call:
#   1. the row and quantization kernels' GPU tests (the span kernel's ragged and cluster-split rows among them);
#   2. bench/kernels/quant_compare.py in bf16: W4A16 against tinygemm (torch._weight_int4pack_mm), cuBLAS and the
#      copy floor at M = 1…16;
#   3. bench/kernels/row_shapes.py: the row kernels on the rows × widths grid against eager, torch.compile and
#      Liger-Kernel (carried as a wheel in .whl), ROW_DTYPES (default bfloat16), within ROW_BUDGET seconds each;
#   4. quant_tune at M = 1, 2, 4 (SKIP_TUNE=1 leaves it out): which W4A16 kernel this card wants at each M.
#   SKIP_TESTS=1 and SKIP_QUANT=1 leave out 1 and 2; ROW_ARGS replaces the grid (--rows, --widths, --ops).
# Usage: scripts/device_carry.sh, then
#   run(command="bash bench/device/row_shapes.sh", carry=[".carry/build.txz", ".whl"])
set -uo pipefail
NAME=row_shapes source "$(dirname "$0")/carried.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so PYTHONUNBUFFERED=1
install_wheels
[ "${SKIP_TESTS:-0}" = 1 ] || run timeout 150 ctest --test-dir /work/main/build -R '^(KernelsGpu|QuantGpu)\.' --output-on-failure
[ "${SKIP_QUANT:-0}" = 1 ] || run timeout 100 python3 bench/kernels/quant_compare.py --dtype bfloat16 --shapes "${QUANT_SHAPES:-8192x8192,28672x8192,8192x28672}" \
  --out "$FINAL/quant-bf16.json"
for dt in ${ROW_DTYPES:-bfloat16}; do
  run timeout $(( ${ROW_BUDGET:-150} + 60 )) python3 bench/kernels/row_shapes.py --dtype "$dt" \
    --budget-s "${ROW_BUDGET:-150}" ${ROW_ARGS:---rows 1,8,32,1024,8192 --widths 50257,151936,4096,32000,8192,128256,14336,768} --out "$FINAL/row-shapes-$dt.json"
done
[ "${SKIP_TUNE:-0}" = 1 ] || run timeout 40 $BUILD/bench/tune/quant_tune --shapes 8192x8192,28672x8192 --m 1,2,4 --reps 5
cp "$log" "$FINAL/"
grep -E '^\$|\[exit|^\| |^#|behind the best|best:|shipped|memcpy|tests passed|FAILED|Failure' "$log" | head -200
