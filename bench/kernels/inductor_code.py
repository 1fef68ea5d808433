"""Compiles and runs LayerNorm and RMSNorm with torch.compile at the given widths, one case after another, so that
TORCH_LOGS=output_code prints the Triton kernels Inductor generates for each (this script prints only a header line
per case): block shape, persistent or looped reduction, eviction hints, to compare with ours.

    TORCH_LOGS=output_code python3 bench/kernels/inductor_code.py --cases rms_norm:8192,layer_norm:16384
"""
import argparse

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="rms_norm:8192,rms_norm:32768,layer_norm:16384,layer_norm:256")
    ap.add_argument("--elements", type=int, default=128 * 2**20)
    a = ap.parse_args()
    for case in a.cases.split(","):
        op, cols = case.split(":")
        cols = int(cols)
        x = torch.randn(a.elements // cols, cols, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
        if op == "layer_norm":
            fn = torch.compile(lambda t: F.layer_norm(t, (cols,), w, b, 1e-5))
        else:
            fn = torch.compile(lambda t: F.rms_norm(t, (cols,), w, 1e-5))
        print(f"==== {op} {tuple(x.shape)}", flush=True)
        fn(x)
        torch.cuda.synchronize()
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
