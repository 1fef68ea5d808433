#!/usr/bin/env bash
# Installs what gpusqueeze needs to build and test, by package name, skipping what is already there.
#   Debian packages: CLI11, fmt, nlohmann-json, simdjson, zlib, cpp-httplib, GoogleTest, prometheus (promtool),
#   Open MPI (probe nccl --mpi's plugin), shellcheck (the Slurm scripts' test)
#   PyPI: nvidia-nvml-dev (nvml.h only; the driver's libnvidia-ml.so.1 is opened at run time); PyYAML, jsonschema and
#   kubernetes-validate (the deploy tests, tests/deploy: manifests against the Kubernetes and CRD schemas)
# The CUDA toolkit (nvcc 13) must already be installed; the script says so if it is not.
set -euo pipefail

need_apt=()
for pkg in cmake ninja-build g++ libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libsimdjson-dev zlib1g-dev libcpp-httplib-dev libtomlplusplus-dev libonnx-dev libprotobuf-dev libopenmpi-dev openmpi-bin help2man dpkg-dev pkg-config prometheus python3-pip shellcheck; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if ((${#need_apt[@]})); then
  echo "setup: installing Debian packages: ${need_apt[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The deploy tests' Python modules, into the python3 that CTest runs them with.
need_pip=()
python3 -c 'import yaml' 2>/dev/null || need_pip+=(PyYAML)
python3 -c 'import jsonschema' 2>/dev/null || need_pip+=(jsonschema)
python3 -c 'import kubernetes_validate' 2>/dev/null || need_pip+=('kubernetes-validate>=1.28')
if ((${#need_pip[@]})); then
  echo "setup: installing from PyPI for the deploy tests: ${need_pip[*]}" >&2
  # Not fatal: without them the deploy tests skip, saying which module is missing.
  python3 -m pip install -q --disable-pip-version-check "${need_pip[@]}" ||
    echo "setup: could not install ${need_pip[*]}; the deploy tests will skip" >&2
fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "setup: nvcc not found: install the CUDA toolkit 13 (https://developer.nvidia.com/cuda-downloads) and retry" >&2
  exit 3
fi

if [ ! -f "$(dirname "$(command -v nvcc)")/../include/nvml.h" ] &&
   ! python3 -c "import importlib.util,os,sys; s=importlib.util.find_spec('nvidia'); sys.exit(0 if s and any(os.path.exists(os.path.join(d,'cu13','include','nvml.h')) for d in s.submodule_search_locations) else 1)" 2>/dev/null; then
  echo "setup: installing nvml.h from PyPI (nvidia-nvml-dev)" >&2
  python3 -m pip install -q --disable-pip-version-check 'nvidia-nvml-dev>=13.0,<14'
fi
# cuobjdump (resource usage for `occupancy` and the no-spill test): the toolkit's, else the PyPI wheel's.
if ! command -v cuobjdump >/dev/null 2>&1 && [ ! -x "$(dirname "$(command -v nvcc)")/cuobjdump" ] &&
   ! python3 -c "import importlib.util,os,sys; s=importlib.util.find_spec('nvidia'); sys.exit(0 if s and any(os.path.exists(os.path.join(d,'cu13','bin','cuobjdump')) for d in s.submodule_search_locations) else 1)" 2>/dev/null; then
  echo "setup: installing cuobjdump from PyPI (nvidia-cuda-cuobjdump)" >&2
  python3 -m pip install -q --disable-pip-version-check 'nvidia-cuda-cuobjdump>=13.0,<14'
fi
