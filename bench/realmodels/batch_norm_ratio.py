"""What channels_last does to PyTorch's batch-norm kernels, from the before (NCHW) and after (channels_last) traces of
the real-model corpus's layout pairs: per step, the time of the NCHW batch-norm kernels (at::native::batch_norm_*_kernel)
before, of their channels_last counterparts (batch_norm_*_channels_last_kernel) after, and their ratio — the source
of the analyzer's kNhwcBatchNormRatio (src/analyze/trace_facts.hpp). Also the conversion kernels' time before.

Usage: python3 bench/realmodels/batch_norm_ratio.py TRACES_DIR [PAIR ...]
  TRACES_DIR holds torch/PAIR-before.pt.json.gz and torch/PAIR-after.pt.json.gz (torch.profiler recordings);
  PAIR defaults to every cl_* pair found there."""
import os
import re
import sys

from traces import events_and_steps, pairs_in

# The kernel's own function name, not a functor in its template arguments.
FN = re.compile(r"^(?:void )?at::native::(batch_norm_\w*_kernel)[<(]")


def per_step(path):
    events, steps = events_and_steps(path)
    nchw = nhwc = convert = 0.0
    for e in events:
        if e.get("cat") != "kernel":
            continue
        name = e["name"]
        if "nchwToNhwc" in name or "nhwcToNchw" in name:
            convert += e["dur"]
        m = FN.match(name)
        if m:
            if "channels_last" in m.group(1):
                nhwc += e["dur"]
            else:
                nchw += e["dur"]
    return nchw / steps / 1e3, nhwc / steps / 1e3, convert / steps / 1e3, steps


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    pairs = pairs_in(root, sys.argv[2:], ("cl_*",))
    print("| pair | steps | NCHW batch norms before, ms/step | channels_last batch norms after, ms/step | ratio | "
          "conversions before, ms/step |")
    print("|---|---|---|---|---|---|")
    for pair in pairs:
        b = per_step(os.path.join(root, "torch", f"{pair}-before.pt.json.gz"))
        a = per_step(os.path.join(root, "torch", f"{pair}-after.pt.json.gz"))
        ratio = a[1] / b[0] if b[0] else float("nan")
        print(f"| {pair} | {b[3]} | {b[0]:.3f} (after: {a[0]:.3f}) | {a[1]:.3f} (before: {b[1]:.3f}) | {ratio:.2f} | "
              f"{b[2]:.3f} |")


if __name__ == "__main__":
    main()
