#!/usr/bin/env python3
"""The reference for `probe pcie`: a plain synchronous cudaMemcpy loop, what a user would write to time a copy.

Calls the CUDA runtime through ctypes (no other dependency): host buffers from cudaMallocHost (pinned) or a
zero-filled ctypes array (pageable), a device buffer from cudaMalloc, then per size and direction `--reps` rounds
of `--calls` back-to-back cudaMemcpy calls timed with the host's monotonic clock; the median round gives GB/s. With
--probe PCIE_JSON (the gpusqueeze.bench/1 output of `gpusqueeze probe pcie`, same call) it prints the probe's P50
rate of each mode (cold, batch) next to the loop's and their ratio per size, direction and memory kind.

Usage: python3 bench/device/pcie_loop.py [--sizes 16Mi,256Mi] [--probe pcie.json] [--out loop.json]
"""
import argparse
import ctypes
import ctypes.util
import json
import statistics
import sys
import time

H2D, D2H = 1, 2  # cudaMemcpyKind


def parse_size(v):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for suffix, mul in units.items():
        if v.endswith(suffix):
            return int(v[: -len(suffix)]) * mul
    return int(v)


def load_cudart():
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", ctypes.util.find_library("cudart")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    sys.exit("pcie_loop.py: libcudart not found (add /usr/local/cuda/lib64 to LD_LIBRARY_PATH)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16Mi,256Mi")
    ap.add_argument("--calls", type=int, default=20, help="cudaMemcpy calls per timed round")
    ap.add_argument("--reps", type=int, default=15, help="timed rounds per configuration (median kept)")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--probe", help="gpusqueeze.bench/1 JSON of `probe pcie` to compare with")
    ap.add_argument("--out", help="write the loop's rates (and the comparison) as JSON")
    args = ap.parse_args()

    rt = load_cudart()

    def check(rc, what):
        if rc != 0:
            rt.cudaGetErrorString.restype = ctypes.c_char_p
            sys.exit(f"pcie_loop.py: {what}: {rt.cudaGetErrorString(rc).decode()}")

    check(rt.cudaSetDevice(args.device), "cudaSetDevice")
    rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaMallocHost.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaFree.argtypes = rt.cudaFreeHost.argtypes = [ctypes.c_void_p]
    rows = []
    for size_name in args.sizes.split(","):
        n = parse_size(size_name)
        dev = ctypes.c_void_p()
        check(rt.cudaMalloc(ctypes.byref(dev), n), "cudaMalloc")
        for memory in ("pinned", "pageable"):
            if memory == "pinned":
                host = ctypes.c_void_p()
                check(rt.cudaMallocHost(ctypes.byref(host), n), "cudaMallocHost")
                host_ptr, keep = host.value, None
            else:
                keep = (ctypes.c_char * n)()  # zero-filled, so every page is touched before timing
                host_ptr = ctypes.addressof(keep)
            for direction, kind in (("h2d", H2D), ("d2h", D2H)):
                dst, src = (dev.value, host_ptr) if kind == H2D else (host_ptr, dev.value)
                for _ in range(3):  # warmup
                    check(rt.cudaMemcpy(dst, src, n, kind), "cudaMemcpy")
                rounds = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    for _ in range(args.calls):
                        check(rt.cudaMemcpy(dst, src, n, kind), "cudaMemcpy")
                    rounds.append((time.perf_counter() - t0) / args.calls)
                sec = statistics.median(rounds)
                rows.append({"bytes": size_name, "memory": memory, "direction": direction,
                             "loop_s_per_copy": sec, "loop_gbps": n / sec / 1e9})
            if memory == "pinned":
                rt.cudaFreeHost(host_ptr)
        rt.cudaFree(dev)

    if args.probe:
        probe = json.load(open(args.probe))
        for r in rows:
            for res in probe["results"]:
                if res["name"] == f"pcie.{r['direction']}" and res["axes"].get("bytes") == r["bytes"] and \
                        res["axes"].get("memory") == r["memory"]:
                    for m in res["measurements"]:  # cold and batch: the P50 rate of each
                        gbps = m["throughput"]["bytes_per_s"] / 1e9
                        r[f"probe_{m['mode']}_gbps"] = gbps
                        r[f"probe_{m['mode']}_over_loop"] = gbps / r["loop_gbps"]
    print(f"{'copy':>18} {'cudaMemcpy loop GB/s':>21} {'probe cold GB/s':>16} {'/ loop':>7} "
          f"{'probe batch GB/s':>17} {'/ loop':>7}")
    for r in rows:
        label = f"{r['direction']} {r['memory']} {r['bytes']}"
        cells = "".join(f" {r[f'probe_{m}_gbps']:{w}.2f} {r[f'probe_{m}_over_loop']:7.4f}"
                        for m, w in (("cold", 16), ("batch", 17)) if f"probe_{m}_gbps" in r)
        print(f"{label:>18} {r['loop_gbps']:21.2f}{cells}")
    if args.out:
        json.dump({"calls": args.calls, "reps": args.reps, "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
