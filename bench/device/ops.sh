#!/usr/bin/env bash
# Packaging's device pass: host cost per call of gpusqueeze.ops vs the ctypes path vs the torch functions, and a model
# of the ops under torch.compile(fullgraph=True) against eager; then the CPU op tests on the real PyTorch.
# Usage on the device with the build carried (see session.sh): bench/device/ops.sh
set -uo pipefail
LOG=ops.log source "$(dirname "$0")/lib.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so
run timeout 240 python3 bench/device/ops_cost.py
run timeout 120 python3 tests/python/test_ops.py
grep -E 'us/call|max abs|\[exit' "$log"
