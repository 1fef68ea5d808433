// gpusqueeze's Python shim (see python_shim.hpp).
#include "trace/python_shim.hpp"

#include "core/error.hpp"

#include <fstream>

namespace gsq::trace {

namespace {

constexpr const char* kShim =
    R"PY("""gpusqueeze's Python shim, loaded through PYTHONPATH by `gpusqueeze trace` and `report -- CMD`; the
program itself is not changed. Once PyTorch is imported:
  GSQ_NVTX_MARKERS=1        each DataLoader next() and each optimizer step is an NVTX range named as torch.profiler
                            names it ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                            "Optimizer.step#AdamW.step"), so a trace without the profiler still shows the loop waiting
                            for its input, and a program without step markers still shows its iterations;
  GSQ_MEMORY_SNAPSHOT_DIR   the allocator's history is recorded from CUDA's first use (torch.cuda._lazy_init, which
                            every first CUDA call goes through) and written there at exit, one file per process
                            (memory.PID.pickle), for `gpusqueeze memory`.
A sitecustomize the environment already had is imported after this one."""
import atexit
import importlib.abc
import importlib.util
import os
import sys

_OUT = os.environ.get("GSQ_MEMORY_SNAPSHOT_DIR", "")
_NVTX_MARKERS = os.environ.get("GSQ_NVTX_MARKERS", "") == "1"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _say(msg):
    print(f"gpusqueeze (python shim): {msg}", file=sys.stderr)


def _start(torch):
    try:
        torch.cuda.memory._record_memory_history(max_entries=int(os.environ.get("GSQ_MEMORY_ENTRIES", "200000")))
    except Exception as e:  # an old PyTorch: say so, never break the program
        _say(f"allocator history not recorded: {e!r}")
        return

    def dump():
        try:
            torch.cuda.memory._dump_snapshot(os.path.join(_OUT, f"memory.{os.getpid()}.pickle"))
        except Exception as e:
            _say(f"snapshot not written: {e!r}")

    atexit.register(dump)


def _nvtx(torch):
    """NVTX push and pop that never raise, or None where this PyTorch has no NVTX built in (a CPU-only build's
    torch.cuda.nvtx functions are stubs that raise)."""
    if not hasattr(getattr(torch, "_C", None), "_nvtx"):
        return None
    nvtx = torch.cuda.nvtx

    def push(name):
        try:
            nvtx.range_push(name)
        except Exception:
            pass

    def pop():
        try:
            nvtx.range_pop()
        except Exception:
            pass

    return push, pop


def _nvtx_dataloader(torch, push, pop):
    try:
        from torch.utils.data import dataloader
        base = dataloader._BaseDataLoaderIter
        original = base.__next__
    except Exception as e:  # another PyTorch layout: say so, never break the program
        _say(f"DataLoader ranges not added: {e!r}")
        return

    def __next__(self):
        push(f"enumerate(DataLoader)#{type(self).__name__}.__next__")
        try:
            return original(self)
        finally:
            pop()

    base.__next__ = __next__


def _nvtx_optimizer(torch, push, pop):
    # PyTorch's global step hooks (2.0+): one call before and after every optimizer's step, whatever its class.
    try:
        from torch.optim import optimizer
        pre, post = optimizer.register_optimizer_step_pre_hook, optimizer.register_optimizer_step_post_hook
    except Exception:  # an older PyTorch: no optimizer ranges, nothing else changes
        return
    pre(lambda opt, args, kwargs: push(f"Optimizer.step#{type(opt).__name__}.step"))
    post(lambda opt, args, kwargs: pop())


def _hook(torch):
    marks = _nvtx(torch) if _NVTX_MARKERS else None
    if marks:
        _nvtx_dataloader(torch, *marks)
        _nvtx_optimizer(torch, *marks)
    if not _OUT:
        return
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not hasattr(cuda, "_lazy_init"):
        return
    if cuda.is_initialized():
        _start(torch)
        return
    original = cuda._lazy_init
    state = {"on": False}

    def lazy_init():
        original()
        if not state["on"]:
            state["on"] = True
            _start(torch)

    cuda._lazy_init = lazy_init


class _AfterTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _hook(module)

        spec.loader.exec_module = exec_module
        return spec


if _OUT or _NVTX_MARKERS:
    sys.meta_path.insert(0, _AfterTorch())

# The environment's own sitecustomize, if it has one, after ours. This module stays in sys.modules when there is none:
# the import machinery pops its name once this file has run.
_SELF = sys.modules.pop("sitecustomize", None)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
try:
    if importlib.util.find_spec("sitecustomize") is not None:
        import sitecustomize  # noqa: F401
finally:
    sys.modules.setdefault("sitecustomize", _SELF)
)PY";

}  // namespace

void write_python_shim(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream os(dir / "sitecustomize.py");
  os << kShim;
  if (!os.flush()) throw_bad_input("cannot write " + (dir / "sitecustomize.py").string());
}

}  // namespace gsq::trace
