"""Per-call host cost of gpusqueeze's kernels through torch.ops (gpusqueeze.ops), through ctypes (gpusqueeze.kernels)
and of the torch function they replace, on a tiny tensor so the GPU work is negligible: each call is timed on the host
(perf_counter_ns over a batch of calls, then one synchronize outside the batch is excluded by timing enqueue only, with
the queue kept short by syncing between batches). Interleaved rounds, medians. Then a model of the ops under
torch.compile(fullgraph=True) against eager, results compared, and every op through torch.ops against the ctypes path
(the same kernels: the bits must be equal). Goal (packaging issue): ops within 1.5x of the torch function's own
dispatch cost. GSQ_OPS_BACKEND=cpp|python picks the registration measured (ops.sh runs both).
Usage: python bench/device/ops_cost.py [--rounds 15] [--calls 2000]"""
import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gpusqueeze.kernels as gk  # noqa: E402
import gpusqueeze.ops as gops  # noqa: E402


def per_call_us(fn, calls):
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter_ns()
    torch.cuda.synchronize()
    return (t1 - t0) / calls / 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    contenders = {
        "torch F.rms_norm": lambda: F.rms_norm(x, (4096,), w, 1e-6),
        "gpusqueeze.ops rms_norm": lambda: torch.ops.gpusqueeze.rms_norm(x, w, 1e-6),
        "gpusqueeze.kernels (ctypes)": lambda: gk.rms_norm(x, w, 1e-6),
        "torch softmax": lambda: torch.softmax(x, -1),
        "gpusqueeze.ops softmax": lambda: torch.ops.gpusqueeze.softmax(x),
    }
    for fn in contenders.values():  # warm up: library load, caches
        for _ in range(200):
            fn()
    samples = {k: [] for k in contenders}
    for _ in range(a.rounds):
        for k, fn in contenders.items():
            samples[k].append(per_call_us(fn, a.calls))
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, rounds {a.rounds} x {a.calls} calls, 8x4096 bf16, "
          f"gpusqueeze.ops backend {gops.BACKEND} {gops.BACKEND_WHY}")
    base = {"rms": statistics.median(samples["torch F.rms_norm"]), "softmax": statistics.median(samples["torch softmax"])}
    for k, v in samples.items():
        m = statistics.median(v)
        ref = base["softmax" if "softmax" in k else "rms"]
        print(f"{k:32s} {m:8.2f} us/call  (min {min(v):.2f}, max {max(v):.2f})  {m / ref:5.2f}x the torch function")
    # Correctness under torch.compile(fullgraph=True): the same model eager and compiled.
    ref = F.rms_norm(x.float(), (4096,), w.float(), 1e-6)
    y = torch.ops.gpusqueeze.rms_norm(x, w, 1e-6)
    print(f"ops rms_norm vs fp32 torch: max abs err {(y.float() - ref).abs().max().item():.3e}")

    # The registration against the ctypes path: the same kernels, so the outputs must be bit-equal.
    x4 = torch.randn(2, 64, 8, 8, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    lin = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16)
    qw8, qw4 = gk.quantize_w8(lin), gk.quantize_w4(lin, group=128)
    pairs = {
        "layer_norm": (torch.ops.gpusqueeze.layer_norm(x, w, b, 1e-5), gk.layer_norm(x, w, b, 1e-5)),
        "rms_norm": (torch.ops.gpusqueeze.rms_norm(x, None, 1e-6), gk.rms_norm(x, None, 1e-6)),
        "softmax": (torch.ops.gpusqueeze.softmax(x), gk.softmax(x)),
        "softmax_dropout": (torch.ops.gpusqueeze.softmax_dropout(x, 0.1, 7, 3), gk.softmax_dropout(x, 0.1, 7, 3)),
        "nchw_to_nhwc": (torch.ops.gpusqueeze.nchw_to_nhwc(x4), gk.nchw_to_nhwc(x4)),
        "nhwc_to_nchw": (torch.ops.gpusqueeze.nhwc_to_nchw(gk.nchw_to_nhwc(x4)), x4),
        "w8a16_linear": (gops.w8a16_linear(x, qw8, None), gk.w8a16_linear(x, qw8, None)),
        "w4a16_linear": (gops.w4a16_linear(x, qw4, None), gk.w4a16_linear(x, qw4, None)),
    }
    for name, (got, want) in pairs.items():
        same = got.shape == want.shape and got.stride() == want.stride() and torch.equal(got, want)
        print(f"ops {name:16s} vs the ctypes path: {'bit-equal' if same else 'DIFFERENT'}")

    def model(t):
        h = gops.rms_norm(t, w, 1e-6)
        return torch.ops.gpusqueeze.softmax(h * 0.5)

    eager = model(x)
    compiled = torch.compile(model, fullgraph=True)(x)
    print(f"compiled(fullgraph) vs eager: max abs diff {(compiled.float() - eager.float()).abs().max().item():.3e}")


if __name__ == "__main__":
    main()
