"""The earlier name of gpusqueeze.kernels, for scripts that put python/ on sys.path: the same module object."""
import importlib
import sys

sys.modules[__name__] = importlib.import_module("gpusqueeze.kernels")
