"""gpusqueeze from Python.

    python -m gpusqueeze report          # the CLI, the same binary as the `gpusqueeze` command
    import gpusqueeze.ops                # the kernels as PyTorch operators: torch.ops.gpusqueeze.*
    import gpusqueeze.kernels            # the same kernels through ctypes (C ABI), and the INT4/INT8 quantizers
    import gpusqueeze.bench              # the timing protocol for PyTorch code, writing gpusqueeze.bench/1 JSON
    import gpusqueeze.metrics            # Prometheus metrics for a serving process

Importing the package itself loads nothing heavy: torch is imported by ops, kernels and bench only.
"""
from __future__ import annotations

import os
import pathlib

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    try:
        __version__ = _version("gpusqueeze")
    except PackageNotFoundError:  # a source checkout with python/ on sys.path
        __version__ = "0.1.0+source"
except ImportError:  # pragma: no cover - Python < 3.8
    __version__ = "0.1.0"

__all__ = ["__version__", "binary"]


def binary() -> str:
    """The gpusqueeze CLI: the wheel's gpusqueeze/bin/gpusqueeze, else a source checkout's build/gpusqueeze, else
    $GSQ_BINARY. Raises FileNotFoundError naming the places looked in."""
    here = pathlib.Path(__file__).resolve().parent
    places = [os.environ.get("GSQ_BINARY", ""), str(here / "bin" / "gpusqueeze"),
              str(here.parents[1] / "build" / "gpusqueeze")]
    for p in places:
        if p and os.access(p, os.X_OK):
            return p
    raise FileNotFoundError("the gpusqueeze binary was not found; looked in: " + ", ".join(p for p in places if p))
