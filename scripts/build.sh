#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then configures and builds gpusqueeze with its tests into build/.
# PRESET=ci turns warnings into errors, as CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if ! command -v nvcc >/dev/null 2>&1; then export PATH=/usr/local/cuda/bin:$PATH; fi
preset=${PRESET:-default}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
