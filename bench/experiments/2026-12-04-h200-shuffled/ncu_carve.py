"""Experiment workload for Nsight Compute: each of our kernels once at each shared-memory carveout preference
(GSQ_CARVEOUT, the library of src/carve.py), and LayerNorm 16384 at the default after torch.compile's kernel and
after a copy, so `launch__shared_mem_config_size` shows the split the driver chose for each launch.

  ncu --clock-control none --cache-control none --metrics launch__shared_mem_config_size,... python3 ncu_carve.py
"""
import os
import pathlib
import sys

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "python"))
import gpusqueeze_kernels as gk  # noqa: E402

dev = torch.device("cuda")
lib = gk._load()
stream = torch.cuda.current_stream().cuda_stream
eps = gk.ctypes.c_float(1e-5)
for op, cols in [("layer_norm", 16384), ("rms_norm", 256), ("layer_norm", 1024), ("rms_norm", 8192)]:
    rows = 128 * 2**20 // cols
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    w = torch.ones(cols, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(x)

    def ours(v):
        os.environ["GSQ_CARVEOUT"] = str(v)
        if op == "layer_norm":
            assert lib.gsq_layer_norm(y.data_ptr(), x.data_ptr(), w.data_ptr(), w.data_ptr(), rows, cols, eps, 2,
                                      stream) == 0
        else:
            assert lib.gsq_rms_norm(y.data_ptr(), x.data_ptr(), w.data_ptr(), rows, cols, eps, 2, stream) == 0

    if (op, cols) == ("layer_norm", 16384):
        compiled = torch.compile(lambda t: F.layer_norm(t, (cols,), w, w, 1e-5), dynamic=False)
        compiled(x)
        ours(-1)
        y.copy_(x)
        ours(-1)
    for v in [-1, 0, 1, 3, 5, 8, 12, 16, 20, 25]:
        ours(v)
    torch.cuda.synchronize()
    print(op, cols, "done", flush=True)
