"""What bf16 autocast does to each kernel class of a CNN step that runs at PyTorch's defaults (TF32 convolutions, fp32
activations), from the before and after torch.profiler recordings of the CNN precision pairs (cnn_bf16.py, and any
other bf16_* pair given): per step, each class's time before (its fp32 kernels) and after (the whole class), their
ratio, and the median ratio per class across the pairs. Then each pair's kernel time after the fix predicted from its
before recording with the ratios of the *other* pairs (leave one out), against the kernel time its after recording
shows. The kernels are only half of it: bench/results/2026-12-07-h100-cnn-bf16 says why the analyzer does not use
these ratios (the untraced steps of most of these CNNs got slower, on the host).

Classes: math (cuDNN/cutlass convolution kernels: implicit GEMMs, fprop,
dgrad, wgrad, winograd; GEMMs other than the CUDA-core sgemms), layout (cuDNN's NCHW↔NHWC conversions), batchnorm
(cuDNN's bn_* and PyTorch's batch_norm_*), other (elementwise, pooling, reductions, the optimizer, autocast's casts).

Usage: python3 bench/realmodels/cnn_precision.py TRACES_DIR [PAIR ...]   (PAIR defaults to every cnnbf16_* pair)"""
import os
import statistics
import sys

from traces import events_and_steps, pairs_in

CLASSES = ("math", "layout", "batchnorm", "other")
# the CUDA-core sgemms (the analyzer's is_fp32_gemm) at its bf16 ratio, kBf16GemmRatio + kBf16CastShare
SGEMM_RATIO = 0.059 + 0.039


def has_any(k, words):
    return any(w in k for w in words)


def is_convolution(k):
    return has_any(k, ("implicit_gemm", "fprop", "dgrad", "wgrad", "winograd", "implicit_convolve", "conv2d_",
                       "convolve_"))


def is_fp32_gemm(k):
    if has_any(k, ("tf32", "implicit_gemm", "fprop", "dgrad", "wgrad")):
        return False
    return "sgemm" in k or "gemm_f32f32_f32f32" in k


def kernel_class(k):
    """None for a kernel in bf16/fp16, "sgemm" for is_fp32_gemm's, else the class."""
    if has_any(k, ("bf16", "BFloat16", "bfloat16", "Half", "__half", "f16f16", "fp16")):
        return None
    if has_any(k, ("nchwToNhwc", "nhwcToNchw", "NchwToNhwc", "NhwcToNchw", "nchw_to_nhwc", "nhwc_to_nchw")):
        return "layout"
    if has_any(k, ("bn_fw", "bn_bw", "batch_norm")):
        return "batchnorm"
    if is_convolution(k):
        return "math"
    if is_fp32_gemm(k):
        return "sgemm"
    if "gemm" in k or "nvjet" in k:
        return "math"
    return "other"


def reduced_class(k):
    """The class a bf16/fp16 kernel of the after recording replaces (the same words, without the precision test)."""
    if has_any(k, ("nchwToNhwc", "nhwcToNchw", "NchwToNhwc", "NhwcToNchw", "nchw_to_nhwc", "nhwc_to_nchw")):
        return "layout"
    if has_any(k, ("bn_fw", "bn_bw", "batch_norm")):
        return "batchnorm"
    if is_convolution(k) or "gemm" in k or "nvjet" in k:
        return "math"
    return "other"


def per_step(path):
    """ms per step of each class: the fp32 kernels' (what the fix changes) and all kernels'."""
    events, steps = events_and_steps(path)
    fp32 = dict.fromkeys(CLASSES + ("sgemm",), 0.0)
    total = dict.fromkeys(CLASSES + ("sgemm",), 0.0)
    for e in events:
        if e.get("cat") != "kernel":
            continue
        c = kernel_class(e["name"])
        if c is not None:
            fp32[c] += e["dur"]
        total[c or reduced_class(e["name"])] += e["dur"]
    return ({c: v / steps / 1e3 for c, v in fp32.items()}, {c: v / steps / 1e3 for c, v in total.items()})


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    pairs = pairs_in(root, sys.argv[2:], ("cnnbf16_*",))
    data = {}
    for pair in pairs:
        b32, btot = per_step(os.path.join(root, "torch", f"{pair}-before.pt.json.gz"))
        _, atot = per_step(os.path.join(root, "torch", f"{pair}-after.pt.json.gz"))
        # after: the class's whole time less what was not fp32 before (kept as it was)
        # after: the class's whole time less what was not fp32 before (kept as it was); the sgemms' replacements are
        # counted in math after, so their predicted time is taken out of it first
        atot = dict(atot, math=atot["math"] - SGEMM_RATIO * b32["sgemm"])
        ratio = {c: (atot[c] - (btot[c] - b32[c])) / b32[c] if b32[c] > 0.02 else None for c in CLASSES}
        data[pair] = (b32, btot, atot, ratio)
    print("| pair | " + " | ".join(f"{c} before → after ms (ratio)" for c in CLASSES) + " | kernels before → after ms |")
    print("|---|" + "---|" * (len(CLASSES) + 1))
    for pair, (b32, btot, atot, ratio) in data.items():
        cells = [f"{b32[c]:.2f} → {atot[c] - (btot[c] - b32[c]):.2f} ({ratio[c]:.2f})" if ratio[c] is not None else "–"
                 for c in CLASSES]
        print(f"| {pair} | " + " | ".join(cells) + f" | {sum(btot.values()):.2f} → {sum(atot.values()):.2f} |")

    def medians(names):
        return {c: statistics.median([data[n][3][c] for n in names if data[n][3][c] is not None] or [1.0])
                for c in CLASSES}

    med = medians(list(data))
    print("\nmedian ratio per class (all pairs): " + ", ".join(f"{c} {med[c]:.3f}" for c in CLASSES))
    print("\n| pair | kernels after, measured ms | predicted with the others' ratios | error |")
    print("|---|---|---|---|")
    errors = []
    for pair, (b32, btot, atot, _) in data.items():
        r = medians([n for n in data if n != pair])
        pred = sum(btot[c] - b32[c] + r[c] * b32[c] for c in CLASSES) + SGEMM_RATIO * b32["sgemm"]
        meas = sum(atot.values())
        errors.append(abs(pred / meas - 1))
        print(f"| {pair} | {meas:.2f} | {pred:.2f} | {pred / meas - 1:+.1%} |")
    if errors:
        print(f"\nleave-one-out: within 10% on {sum(e <= 0.10 for e in errors)} of {len(errors)}, median error "
              f"{statistics.median(errors):.1%}")


if __name__ == "__main__":
    main()
