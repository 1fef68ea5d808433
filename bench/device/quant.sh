#!/usr/bin/env bash
# Device run for weight-only INT4/INT8 GEMM (step 3), all figures from one call: the quantization tests (CPU and
# GPU), `gpusqueeze kernels --suite quant` (W4A16, W8A16, cuBLAS fp16 and cudaMemcpy D2D, weights rotated), and the
# Python module against torch's fp16 x @ w.T.
# Usage on the device with the build carried: BUILD=.carry/build bench/device/quant.sh (writes $OUT)
set -uo pipefail
LOG=quant.log source "$(dirname "$0")/lib.sh"
export PATH=$PATH:/usr/local/cuda/bin
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so
[ "${SKIP_TESTS:-0}" = 1 ] || run ctest --test-dir /work/main/build -R '^(Quant|QuantGpu)\.' --output-on-failure
run $B kernels --suite quant --max-seconds "${MAX_SECONDS:-0.3}" -o "$OUT/quant.json"
run python3 bench/kernels/quant_compare.py --out "$OUT/quant_torch.json"
grep -E '^\$|exit|tests passed|FAILED|Failure|^\| [0-9]+x[0-9]+ |^\| [0-9]+×' "$log" | tail -n 70
