"""The in-process half of `gpusqueeze coldstart`: runs one phase of a PyTorch program in this (fresh) process and
writes what it measured as JSON. The CLI starts one process per phase with its own cache directories
(TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR) and reads the files; it is not meant to be run by hand.

    python coldstart.py --phase cold --out phase.json [--save-bundle B] [--load-bundle B] (--module | SCRIPT ARGS...)

Phases: eager (TORCHDYNAMO_DISABLE=1, set by the CLI), cold (empty caches), warm-local (the caches cold filled),
warm-portable (empty caches + the Mega-Cache artifact of torch.compiler.save_cache_artifacts, loaded with
load_cache_artifacts before the program runs). `--module` runs a small built-in model (an MLP with LayerNorm, compiled,
one forward pass) instead of a script. `--probe` only reports the environment (for checking a bundle's manifest).

Measured: seconds from this script's start to `import torch` done and to the program's first result (the script's end,
or the built-in model's first output), Dynamo's compile time (compilation_time_metrics['_compile.compile_inner']),
and the cache counters of Inductor's FX-graph cache and AOTAutograd's cache (torch._dynamo.utils.counters).
"""
import argparse
import base64
import gzip
import json
import os
import platform
import runpy
import sys
import time

_T0 = time.perf_counter()
BUNDLE_SCHEMA = "gpusqueeze.coldstart-bundle/1"
PHASE_SCHEMA = "gpusqueeze.coldstart-phase/1"


def environment(torch):
    env = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda or "",
           "triton": "", "device": "cpu", "compute_capability": ""}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:  # noqa: BLE001 - Triton is optional (CPU builds)
        pass
    try:
        if torch.cuda.is_available():
            env["device"] = torch.cuda.get_device_name()
            env["compute_capability"] = "%d.%d" % torch.cuda.get_device_capability()
    except Exception:  # noqa: BLE001
        pass
    return env


def builtin_model(torch):
    """A test-sized model: enough graph for Inductor to generate and compile code on CPU or GPU."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                                torch.nn.Linear(512, 256), torch.nn.SiLU(), torch.nn.Linear(256, 64)).to(device).eval()
    x = torch.randn(16, 256, device=device)
    with torch.no_grad():
        out = torch.compile(model)(x)
        if device == "cuda":
            torch.cuda.synchronize()
    return float(out.float().abs().sum())


def counters(torch):
    from torch._dynamo.utils import counters as c
    wanted = {"inductor": ["fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass"],
              "aot_autograd": ["autograd_cache_hit", "autograd_cache_miss", "autograd_cache_bypass"],
              "frames": ["total", "ok"], "stats": ["unique_graphs"]}
    return {f"{group}.{k}": int(c[group][k]) for group, keys in wanted.items() for k in keys}


def compile_seconds():
    try:
        from torch._dynamo.utils import compilation_time_metrics as m
    except ImportError:
        return None
    return round(sum(m.get("_compile.compile_inner", [])), 4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phase", default="cold")
    ap.add_argument("--out", required=True)
    ap.add_argument("--module", action="store_true")
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--save-bundle")
    ap.add_argument("--load-bundle")
    ap.add_argument("script", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    result = {"schema": PHASE_SCHEMA, "phase": a.phase, "pid": os.getpid()}
    import torch
    result["import_torch_s"] = round(time.perf_counter() - _T0, 4)
    result["environment"] = environment(torch)
    if a.probe:
        json.dump(result, open(a.out, "w"))
        return 0
    if a.load_bundle:
        with gzip.open(a.load_bundle, "rt") as f:
            bundle = json.load(f)
        blob = base64.b64decode(bundle["artifact"])
        t = time.perf_counter()
        info = torch.compiler.load_cache_artifacts(blob)
        result["artifact_loaded_bytes"] = len(blob)
        result["artifact_load_s"] = round(time.perf_counter() - t, 4)
        result["artifact_entries"] = sum(len(v) for v in info.artifacts.values()) if info else 0
    status = 0
    if a.module:
        result["first_output"] = builtin_model(torch)
    else:
        if not a.script:
            print("coldstart: no script given (use --module for the built-in model)", file=sys.stderr)
            return 2
        sys.argv = a.script
        try:
            runpy.run_path(a.script[0], run_name="__main__")
        except SystemExit as e:  # the program's own exit code is kept
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    result["first_result_s"] = round(time.perf_counter() - _T0, 4)
    result["compile_s"] = compile_seconds()
    result["counters"] = counters(torch)
    result["exit_code"] = status
    if a.save_bundle:
        saved = torch.compiler.save_cache_artifacts()
        if saved is None:
            result["artifact_saved_bytes"] = 0
        else:
            blob, info = saved
            with gzip.open(a.save_bundle, "wt") as f:
                json.dump({"schema": BUNDLE_SCHEMA, "manifest": result["environment"],
                           "entries": {k: len(v) for k, v in info.artifacts.items()},
                           "artifact": base64.b64encode(blob).decode()}, f)
            result["artifact_saved_bytes"] = len(blob)
    json.dump(result, open(a.out, "w"))
    return status


if __name__ == "__main__":
    sys.exit(main())
