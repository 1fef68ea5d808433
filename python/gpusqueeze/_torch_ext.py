"""Builds and loads csrc/torch_ops.cpp, the C++ registration of gpusqueeze's operators, for the PyTorch in use.

The extension is compiled once per (PyTorch build, kernels library, source) with the C++ compiler PyTorch's own
extensions use ($CXX, else c++), against PyTorch's headers and libraries only (no CUDA toolkit), into
$GSQ_CACHE_DIR/torch-ops (default ~/.cache/gpusqueeze/torch-ops), and loaded with torch.ops.load_library. A stamp
beside it records the PyTorch it was built for; a library built for another PyTorch is refused with the two versions
named, never loaded (a C++ extension loaded into the wrong PyTorch crashes or, worse, misbehaves).

    GSQ_OPS_BACKEND=auto    the C++ registration, built on first use; on failure the Python one, with the reason
    GSQ_OPS_BACKEND=cpp     the C++ registration or an ImportError that says why
    GSQ_OPS_BACKEND=python  torch.library.custom_op over the ctypes path (about 2x the host cost per call)
    GSQ_TORCH_OPS_LIBRARY=FILE  a prebuilt extension to load instead (its stamp, FILE.json, must match)
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

import torch

_HERE = pathlib.Path(__file__).resolve().parent
SOURCE = _HERE / "csrc" / "torch_ops.cpp"


class ExtensionError(RuntimeError):
    pass


def torch_build() -> dict:
    """What an extension must match: PyTorch's version and git revision, its C++ ABI flag."""
    return {
        "torch": torch.__version__,
        "git": getattr(torch.version, "git_version", ""),
        "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
    }


def _kernels_header_dir() -> pathlib.Path:
    for d in (_HERE / "include", _HERE.parents[1] / "include"):  # the wheel; a source checkout
        if (d / "gpusqueeze" / "kernels.h").is_file():
            return d
    raise ExtensionError("gpusqueeze/kernels.h not found beside the package (a broken install?)")


def _cache_dir() -> pathlib.Path:
    base = os.environ.get("GSQ_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpusqueeze")
    return pathlib.Path(base) / "torch-ops"


def _check_stamp(lib: pathlib.Path) -> None:
    stamp = pathlib.Path(str(lib) + ".json")
    try:
        built = json.loads(stamp.read_text())
    except (OSError, ValueError) as e:
        raise ExtensionError(f"{lib}: no readable stamp {stamp.name} ({e}); rebuild it for this PyTorch") from None
    now = torch_build()
    if {k: built.get(k) for k in now} != now:
        raise ExtensionError(f"{lib} was built for PyTorch {built.get('torch')} ({built.get('git', '')[:10]}), this is "
                             f"{now['torch']} ({now['git'][:10]}): refusing to load it; delete it or unset "
                             "GSQ_TORCH_OPS_LIBRARY, and it is rebuilt for this PyTorch")


def build(kernels_library: str, verbose: bool = False) -> pathlib.Path:
    """The extension for this PyTorch and kernels library, compiled unless the cache has it. Returns its path."""
    from torch.utils import cpp_extension

    key = hashlib.sha256(json.dumps([torch_build(), os.path.realpath(kernels_library), SOURCE.read_bytes().hex()],
                                    sort_keys=True).encode()).hexdigest()[:16]
    out_dir = _cache_dir() / key
    lib = out_dir / "gpusqueeze_torch_ops.so"
    if lib.is_file():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    kdir = os.path.dirname(os.path.realpath(kernels_library))
    cmd = [os.environ.get("CXX", "c++"), "-O2", "-std=c++20", "-shared", "-fPIC", "-fvisibility=hidden",
           f"-D_GLIBCXX_USE_CXX11_ABI={int(torch_build()['cxx11_abi'])}", "-DTORCH_API_INCLUDE_EXTENSION_H",
           f"-I{_kernels_header_dir()}"]
    cmd += [f"-isystem{p}" for p in cpp_extension.include_paths()]
    cmd += [str(SOURCE), "-o"]
    tmp = tempfile.NamedTemporaryFile(dir=out_dir, suffix=".so", delete=False).name
    cmd += [tmp]
    cmd += [f"-L{p}" for p in cpp_extension.library_paths()] + ["-lc10", "-ltorch", "-ltorch_cpu"]
    cmd += [f"-L{kdir}", "-lgsqkernels", f"-Wl,-rpath,{kdir}"]
    if verbose:
        print("gpusqueeze: " + shlex.join(cmd), file=sys.stderr)
    print(f"gpusqueeze: compiling the C++ operator registration for PyTorch {torch.__version__} (once; "
          f"cached in {out_dir})…", file=sys.stderr)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        os.unlink(tmp)
        raise ExtensionError(f"could not run the C++ compiler {cmd[0]!r}: {e}") from None
    if r.returncode != 0:
        os.unlink(tmp)
        errors = [line for line in r.stderr.splitlines() if "error" in line] or r.stderr.strip().splitlines()[-3:]
        raise ExtensionError(f"compiling {SOURCE.name} failed (exit {r.returncode}): {errors[0].strip() if errors else ''}"
                             f" ({len(errors)} error lines; `python -m gpusqueeze._torch_ext` shows the command)")
    pathlib.Path(str(lib) + ".json").write_text(json.dumps(torch_build(), indent=1))
    os.replace(tmp, lib)  # atomic: a concurrent importer sees the whole file or none
    return lib


def load(kernels_library: str) -> pathlib.Path:
    """Builds (if needed), checks and loads the extension; returns the file loaded."""
    forced = os.environ.get("GSQ_TORCH_OPS_LIBRARY")
    lib = pathlib.Path(forced) if forced else build(kernels_library)
    _check_stamp(lib)
    torch.ops.load_library(str(lib))
    return lib


if __name__ == "__main__":  # python -m gpusqueeze._torch_ext: build now and say where
    from gpusqueeze import kernels

    print(build(kernels.library_path(), verbose=True))
