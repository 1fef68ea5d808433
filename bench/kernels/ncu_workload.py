#!/usr/bin/env python3
"""One call of each gpusqueeze kernel at the issue's shapes (32768×4096 bf16; 32×256×56×56), for Nsight Compute:
ncu --clock-control none --kernel-name regex:'row_kernel|transpose_kernel' --metrics ... python3 ncu_workload.py"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import gpusqueeze_kernels as gk  # noqa: E402

x = torch.randn(32768, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
gk.layer_norm(x, w, w)
gk.rms_norm(x, w)
gk.softmax(x)
gk.softmax_dropout(x, 0.1, seed=1)
gk.nchw_to_nhwc(torch.randn(32, 256, 56, 56, device="cuda", dtype=torch.bfloat16))
torch.cuda.synchronize()
