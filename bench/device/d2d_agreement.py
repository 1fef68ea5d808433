"""Times the same 1 GiB device-to-device copy three ways in one process run: torch.cuda.Event with gpusqueeze's protocol,
triton.testing.do_bench, and reads gpusqueeze's own figure from the JSON written just before. Prints the ratios."""
import json
import sys

import torch
import triton.testing

sys.path.insert(0, "python")
import gpusqueeze_bench as gb  # noqa: E402

gsq_file, out_file = sys.argv[1], sys.argv[2]
nbytes = 1 << 30
src = torch.rand(nbytes // 4, device="cuda")
dst = torch.empty_like(src)
copy = lambda: dst.copy_(src)  # noqa: E731  cudaMemcpyAsync D2D underneath

res = gb.measure("copy.memcpy_d2d", copy, axes={"bytes": "1Gi"}, bytes_per_launch=2 * nbytes)
gb.write_run([res], out_file, suite="torch")
torch_cold = sorted(res["measurements"][0]["samples_ns"])
torch_p50 = torch_cold[len(torch_cold) // 2]
# do_bench: L2 cleared before each rep, events per rep; return_mode median, in ms.
triton_ms = triton.testing.do_bench(copy, warmup=100, rep=2000, return_mode="median")

with open(gsq_file) as f:
    run = json.load(f)
gsq_p50 = next(m["ns"]["p50"] for r in run["results"] if r["name"] == "copy.memcpy_d2d" and r["axes"]["bytes"] == "1Gi"
               for m in r["measurements"] if m["mode"] == "cold")
rows = [("gpusqueeze bench (cold)", gsq_p50), ("torch.cuda.Event, same protocol", torch_p50), ("triton do_bench", triton_ms * 1e6)]
print("| 1 GiB D2D copy timer | P50 µs | GB/s (r+w) | ratio to gpusqueeze |")
print("|---|---|---|---|")
for name, ns in rows:
    print(f"| {name} | {ns / 1e3:.1f} | {2 * nbytes / ns:.0f} | {ns / gsq_p50:.4f} |")
