"""What the precision fixes do to the GEMMs, from the before (fp32) and after (TF32 or bf16 autocast) traces of the
real-model pairs: per step, the time of the single-precision GEMM kernels before, of the GEMMs that replace them after,
and their ratio — the source of the analyzer's kTf32GemmRatio and kBf16GemmRatio (src/analyze/trace_facts.hpp); for
bf16 also fp32 attention → its bf16 kernels (kBf16AttentionRatio) and the cast kernels autocast adds (kBf16CastShare:
their time over the fp32 GEMMs'; the casts per GEMM beside it). The kernel classes are the analyzer's
(detail::is_fp32_gemm, is_fp32_attention).

Usage: python3 bench/realmodels/precision_ratio.py TRACES_DIR [PAIR ...]
  TRACES_DIR holds torch/PAIR-before.pt.json.gz and torch/PAIR-after.pt.json.gz (torch.profiler recordings);
  PAIR defaults to every tf32_* and bf16_* pair found there."""
import os
import sys

from traces import events_and_steps, pairs_in

NOT_GEMM = ("implicit_gemm", "fprop", "dgrad", "wgrad", "fmha", "flash", "sdpa", "attention")


def is_fp32_gemm(k):
    if any(w in k for w in ("tf32", "implicit_gemm", "fprop", "dgrad", "wgrad")):
        return False
    return "sgemm" in k or "gemm_f32f32_f32f32" in k


def is_gemm(k):
    return ("gemm" in k or "nvjet" in k) and not any(w in k for w in NOT_GEMM)


def is_attention(k):
    return any(w in k for w in ("fmha", "flash", "sdpa"))


def per_step(path):
    events, steps = events_and_steps(path)
    t = {"fp32_gemm": 0.0, "other_gemm": 0.0, "fp32_attn": 0.0, "attn": 0.0, "cast": 0.0, "gemms": 0, "casts": 0}
    for e in events:
        if e.get("cat") != "kernel":
            continue
        k, d = e["name"], e["dur"]
        if is_fp32_gemm(k):
            t["fp32_gemm"] += d
            t["gemms"] += 1
        elif is_gemm(k):
            t["other_gemm"] += d
            t["gemms"] += 1
        elif is_attention(k):
            t["fp32_attn" if ("fmha_" in k and "_f32" in k) else "attn"] += d
        elif "copy_kernel" in k:
            t["cast"] += d
            t["casts"] += 1
    return {k: (v / steps / 1e3 if isinstance(v, float) else v / steps) for k, v in t.items()}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    pairs = pairs_in(root, sys.argv[2:], ("tf32_*", "bf16_*"))
    print("| pair | fp32 GEMMs before, ms/step | their replacement after, ms/step | GEMM ratio | fp32 attention before → "
          "after, ms/step (ratio) | casts added, ms/step (share of fp32 GEMMs; per GEMM) |")
    print("|---|---|---|---|---|---|")
    for pair in pairs:
        b = per_step(os.path.join(root, "torch", f"{pair}-before.pt.json.gz"))
        a = per_step(os.path.join(root, "torch", f"{pair}-after.pt.json.gz"))
        fixed = a["other_gemm"] + a["fp32_gemm"] - b["other_gemm"]  # GEMMs that were not fp32 before stay as they were
        attn = (f"{b['fp32_attn']:.3f} → {a['attn'] + a['fp32_attn']:.3f} "
                f"({(a['attn'] + a['fp32_attn']) / b['fp32_attn']:.2f})" if b["fp32_attn"] and pair.startswith("bf16")
                else "-")
        cast = a["cast"] - b["cast"]
        casts = (f"{cast:.3f} ({cast / b['fp32_gemm']:.3f}; {(a['casts'] - b['casts']) / max(a['gemms'], 1):.1f})"
                 if pair.startswith("bf16") else "-")
        print(f"| {pair} | {b['fp32_gemm']:.3f} | {fixed:.3f} | {fixed / b['fp32_gemm']:.3f} | {attn} | {casts} |")


if __name__ == "__main__":
    main()
