#!/usr/bin/env bash
# Packs what the device scripts need from build/ into .carry/build.txz (the repository and the carry share 64 MiB, and
# the repository alone is ~50 MiB): the CLI, lib/, share/, the gpu-labelled test binaries with their CTest files,
# stripped and xz-compressed (~7 MiB). bench/device/session.sh unpacks it on the device.
# Usage: [CLI_ONLY=1 | KERNELS_ONLY=1] scripts/device_carry.sh   then: run(command="bash bench/device/session.sh", carry=[".carry/build.txz"])
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/gpusqueeze ] || { echo "device_carry: build/ has no gpusqueeze; run scripts/build.sh first" >&2; exit 2; }
rm -rf .carry/build .carry/build.txz
mkdir -p .carry/build/tests
cp -a build/gpusqueeze build/lib build/share .carry/build/
cp -a build/tests/CTestTestfile.cmake build/tests/*_tests.cmake build/tests/*_include.cmake .carry/build/tests/
printf 'subdirs("tests")\n' >.carry/build/CTestTestfile.cmake
# CLI_ONLY=1: the CLI and its libraries alone (no gpu test binaries, no libgsqkernels.so: the CLI links the kernels
# statically; only `kernels --torch` and Python load the shared one), when the repository leaves little room.
[ "${CLI_ONLY:-0}" = 1 ] && rm -f .carry/build/lib/libgsqkernels.so
[ "${CLI_ONLY:-0}" = 1 ] || for t in test_gpu_live test_bench test_probes test_trace_gpu trace_target hw_target test_kernels_gpu; do
  cp -a "build/tests/$t" .carry/build/tests/
done
# The tuners beside them (bench/device/row_shapes.sh and quant_tune.sh run quant_tune).
if [ "${CLI_ONLY:-0}" != 1 ] && [ -d build/bench/tune ]; then
  mkdir -p .carry/build/bench/tune
  cp -a build/bench/tune/quant_tune build/bench/tune/row_tune .carry/build/bench/tune/
  strip --strip-unneeded .carry/build/bench/tune/* 2>/dev/null || true
fi
# KERNELS_ONLY=1: libgsqkernels.so, the kernels' GPU tests and the tuners, no CLI (bench/device/quant_m1.sh).
if [ "${KERNELS_ONLY:-0}" = 1 ]; then
  rm -rf .carry/build/gpusqueeze .carry/build/share
  find .carry/build/lib -type f ! -name 'libgsqkernels.so' -delete
  find .carry/build/tests -maxdepth 1 -type f -perm -u+x ! -name test_kernels_gpu -delete
fi
strip --strip-unneeded .carry/build/gpusqueeze .carry/build/tests/test_* .carry/build/tests/*_target 2>/dev/null || true
tar cJf .carry/build.txz -C .carry build
rm -rf .carry/build
ls -la .carry/build.txz
