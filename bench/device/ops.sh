#!/usr/bin/env bash
# Packaging's device pass: host cost per call of gpusqueeze.ops vs the ctypes path vs the torch functions, and a model
# of the ops under torch.compile(fullgraph=True) against eager; then the CPU op tests on the real PyTorch.
# Usage on the device with the build carried (see session.sh): bench/device/ops.sh
set -uo pipefail
LOG=ops.log source "$(dirname "$0")/lib.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so
export GSQ_CACHE_DIR=$PWD/.gsq-cache
run env GSQ_OPS_BACKEND=cpp timeout 300 python3 bench/device/ops_cost.py
run env GSQ_OPS_BACKEND=python timeout 240 python3 bench/device/ops_cost.py
run timeout 120 python3 tests/python/test_ops.py
grep -E 'backend|us/call|max abs|bit-equal|DIFFERENT|\[exit' "$log"
