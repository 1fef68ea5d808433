#!/usr/bin/env bash
# Builds the wheel (scikit-build-core, from pyproject.toml), installs it into a fresh virtualenv and runs what a pip
# user would: `gpusqueeze --version`, `gpusqueeze analyze` on a bundled fixture, `python -m gpusqueeze report` (no GPU:
# the bundled page), `tune keys`, and `import gpusqueeze.ops` with its CPU tests where PyTorch is importable (the venv
# sees the system's site-packages; skipped with the reason otherwise). CTest `wheel_install`.
# Usage: scripts/test_wheel.sh [WORK_DIR]   (the wheel is left in WORK_DIR/dist)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
venv=$work/venv
rm -rf "$venv" "$work/dist"
python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip >/dev/null
start=$(date +%s)
# build-dir under WORK_DIR: a second run reuses the compiled objects.
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$work/dist" \
  -C build-dir="$work/wheel-build" "$src" >"$work/wheel.log" 2>&1 || { tail -40 "$work/wheel.log"; exit 1; }
whl=$(ls "$work"/dist/gpusqueeze-*.whl)
echo "wheel: $(basename "$whl") ($(du -h "$whl" | cut -f1)) built in $(( $(date +%s) - start )) s"
listing=$(python3 -m zipfile -l "$whl" | awk '{print $1}')  # once: `grep -q` on the pipe would break it early
grep -E 'bin/gpusqueeze$|\.so|share/gpusqueeze/h200-snapshot|ops\.py|torch_ops\.cpp|__main__' <<<"$listing" | sort
# Every shared library the binary needs beyond the C/C++ runtime and zlib travels in the wheel, and the C++ operator
# registration's source with the header it compiles against.
for f in libsimdjson libcpp-httplib libgsqkernels libgsqtrace libonnx_proto libprotobuf csrc/torch_ops.cpp \
  include/gpusqueeze/kernels.h; do
  grep -q "$f" <<<"$listing" || { echo "the wheel lacks $f"; exit 1; }
done
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$whl"
cd "$work"
"$venv/bin/gpusqueeze" --version
"$venv/bin/gpusqueeze" analyze "$src/tests/fixtures/torch-host-fixed.json.gz" | head -3
"$venv/bin/python" -m gpusqueeze report -o "$work/report" >/dev/null
test -s "$work/report/index.html" && echo "ok: python -m gpusqueeze report wrote the bundled page"
"$venv/bin/gpusqueeze" tune keys | grep -q CUDA_MALLOC_PER_BLOCK && echo "ok: tune keys"
"$venv/bin/python" -c "import gpusqueeze, os; print('package', gpusqueeze.__version__, 'binary', os.path.relpath(gpusqueeze.binary(), os.path.dirname(gpusqueeze.__file__)))"
if "$venv/bin/python" -c "import torch" 2>/dev/null; then
  # The C++ registration compiled from the wheel's own csrc/ and header (a fallback to Python fails the test).
  export GSQ_CACHE_DIR="$work/cache" GSQ_EXPECT_OPS_BACKEND=cpp
  GSQ_TEST_INSTALLED=1 "$venv/bin/python" "$src/tests/python/test_ops.py" 2>&1 | grep -E "^torch|^Ran|^OK|FAIL|Error" \
    || true
  GSQ_TEST_INSTALLED=1 "$venv/bin/python" "$src/tests/python/test_ops.py" >/dev/null 2>&1
else
  echo "skipped: import gpusqueeze.ops (PyTorch is not installed here; pip install torch to run tests/python/test_ops.py)"
fi
echo "wheel_install: ok"
