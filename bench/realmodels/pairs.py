"""The real-model corpus: before/after pairs of real model code (torchvision, transformers; random weights), each an
everyday problem and the fix an engineer makes, measured untraced, then recorded with torch.profiler and with
`gpusqueeze trace`. The analyzer's verdicts and what-if predictions are checked against these measurements
(bench/realmodels/accuracy.py).

  python3 pairs.py measure OUT [NAME ...]   untraced steps of both variants in interleaved rounds (medians, min/max),
                                            then a torch.profiler trace of each variant: OUT/realmodels.json,
                                            OUT/traces/NAME-{before,after}.pt.json.gz
  python3 pairs.py run NAME VARIANT [--steps N] [--warmup W]
                                            the variant's steps with NVTX ranges ProfilerStep#i (what `gpusqueeze trace
                                            -- python3 pairs.py run …` records); prints the wall time per step as JSON
  python3 pairs.py list [SET]               the pairs, their class, the fix and their set: corpus, heldout (heldout.py:
                                            models the analyzer was never tuned on), cnn-bf16 (cnn_bf16.py), heldout4
                                            (heldout4.py, the fourth held-out set), heldout5 (heldout5.py, the fifth)

Every pair says which class of problem it plants (`cls`), which `--what-if` fix models it (`fix`, empty when none
does) and whether it trains or infers. Step = one training or inference iteration as the user's loop runs it,
including fetching the batch."""
import gc
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

dev = "cuda"
PAIRS = {}


def pair(name, cls, fix, mode, what, held_out=False, set_name=None):
    def register(fn):
        PAIRS[name] = {"make": fn, "cls": cls, "fix": fix, "mode": mode, "what": what,
                       "set": set_name or ("heldout" if held_out else "corpus")}
        return fn

    return register


# --- shared parts -------------------------------------------------------------------------------------------------


def tv_model(name, **kw):
    import torchvision

    torch.manual_seed(0)
    return getattr(torchvision.models, name)(weights=None, **kw).to(dev)


def hf_model(kind, attn="sdpa", **cfg):
    """A transformers model with random weights: kind "bert" (BertForSequenceClassification), "gpt2" (GPT2LMHeadModel),
    or a (config class, model class) pair of names, e.g. ("LlamaConfig", "LlamaForCausalLM"); attn "sdpa" or "eager"."""
    import transformers

    torch.manual_seed(0)
    names = {"bert": ("BertConfig", "BertForSequenceClassification"), "gpt2": ("GPT2Config", "GPT2LMHeadModel")}
    config_name, model_name = names[kind] if isinstance(kind, str) else kind
    config = getattr(transformers, config_name)(**cfg)
    cls = getattr(transformers, model_name)
    try:
        m = cls._from_config(config, attn_implementation=attn)
    except (TypeError, ValueError):
        config._attn_implementation = attn
        m = cls(config)
    return m.to(dev)


def images(batch, pinned=False, channels_last=False, size=224):
    x = torch.randn(batch, 3, size, size)
    if pinned:
        x = x.pin_memory()
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


def labels(batch, n=1000):
    return torch.randint(0, n, (batch,), device=dev)


def sgd_momentum(model, **kw):
    """The training pairs' optimizer: SGD, lr 0.01, momentum 0.9 (kw: foreach=False, fused=True)."""
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, **kw)


def host_copy_infer_pair(m1, m2, predict):
    """Inference whose per-step result (predict(model): a tensor on the GPU) is copied to the host every step by the
    first program (.cpu(), a sync), and kept on the GPU and gathered to the host every 64 steps by the second."""
    kept = []

    def make(m, to_host):
        def step():
            with torch.no_grad():
                out = predict(m)
            if to_host:
                return out.cpu()
            kept.append(out)
            if len(kept) == 64:
                torch.cat(kept).cpu()
                kept.clear()
            return out

        return step

    return make(m1, True), make(m2, False)


def item_logging_train_pair(model_name, batch, every_before, every_after):
    """AMP training of a torchvision model on device-resident data whose loss and accuracy are read to the host
    (.item()) every N steps: every_before in the first program, every_after in the second (0: never)."""
    m1, m2 = tv_model(model_name), tv_model(model_name)
    o1, o2 = sgd_momentum(m1), sgd_momentum(m2)
    x, y = images(batch).to(dev), labels(batch)

    def make(m, opt, every):
        count = [0]

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = m(x)
                loss = torch.nn.functional.cross_entropy(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            count[0] += 1
            if every and count[0] % every == 0:
                return loss.item(), (out.argmax(1) == y).float().mean().item()
            return loss

        return step

    return make(m1, o1, every_before), make(m2, o2, every_after)


def vision_train_step(model, opt, x, y, sync_loss=False, bf16=True):
    """One training step of a torchvision model: under bf16 autocast (AMP) unless bf16=False (PyTorch's defaults)."""
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item() if sync_loss else loss


def autocast_train_pair(model_name, batch):
    """SGD training of a torchvision model at PyTorch's defaults (fp32 activations, TF32 convolutions), and under bf16
    autocast: the precision pairs' CNN training step (heldout.py's bf16_resnet50_train, cnn_bf16.py's)."""
    m1, m2 = tv_model(model_name), tv_model(model_name)
    o1, o2 = (sgd_momentum(m) for m in (m1, m2))
    x, y = images(batch).to(dev), labels(batch)
    return (lambda: vision_train_step(m1, o1, x, y, bf16=False)), (lambda: vision_train_step(m2, o2, x, y))


def hf_train_step(model, opt, **inputs):
    """One AMP training step of a transformers model on fixed inputs (the loss from the model's own head)."""
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(**inputs).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


class SynthImages(torch.utils.data.Dataset):
    """uint8 'decoded JPEGs' (3×256×256, seeded per index) through the usual CPU augmentation pipeline."""

    def __init__(self):
        from torchvision.transforms import v2

        self.tf = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(),
                              v2.ToDtype(torch.float32, scale=True),
                              v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return self.tf(torch.randint(0, 256, (3, 256, 256), dtype=torch.uint8, generator=g)), i % 1000


def batches(workers, batch):
    loader = torch.utils.data.DataLoader(SynthImages(), batch_size=batch, shuffle=False, num_workers=workers,
                                         pin_memory=workers > 0, persistent_workers=workers > 0, drop_last=True,
                                         prefetch_factor=2 if workers > 0 else None)
    while True:
        yield from loader


def graphed(fn, *static_inputs):
    """fn(*static_inputs) captured once in a CUDA graph; the returned step replays it."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(*static_inputs)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(*static_inputs)
    return lambda: (g.replay(), out)[1]


# --- the pairs ----------------------------------------------------------------------------------------------------


def dataloader_pair(model_name, batch, train):
    model = tv_model(model_name)
    model_b = tv_model(model_name)
    if not train:
        model, model_b = model.eval().to(torch.bfloat16), model_b.eval().to(torch.bfloat16)
    opts = [sgd_momentum(m) for m in (model, model_b)]

    def make(m, opt, workers):
        it = batches(workers, batch)

        def step():
            x, y = next(it)
            x, y = x.to(dev, non_blocking=workers > 0), y.to(dev, non_blocking=workers > 0)
            if train:
                return vision_train_step(m, opt, x, y)
            with torch.no_grad():
                return m(x.to(torch.bfloat16))

        return step

    return make(model, opts[0], 0), make(model_b, opts[1], 8)


@pair("dl_resnet18_train", "dataloader", "host", "train",
      "ResNet-18 AMP training, b32, CPU augmentation in the DataLoader: num_workers=0 → 8 workers + pin_memory")
def _():
    return dataloader_pair("resnet18", 32, True)


@pair("dl_resnet50_infer", "dataloader", "host", "infer",
      "ResNet-50 bf16 inference, b32, CPU augmentation in the DataLoader: num_workers=0 → 8 workers + pin_memory")
def _():
    return dataloader_pair("resnet50", 32, False)


@pair("h2d_resnet50_infer", "copy", "pinned,prefetch", "infer",
      "ResNet-50 bf16 inference, b64, fp32 batch in pageable memory .cuda() each step → pinned, non_blocking, the next "
      "batch copied on a side stream")
def _():
    model = tv_model("resnet50").eval().to(torch.bfloat16)
    pageable = [images(64) for _ in range(2)]
    pinned = [x.pin_memory() for x in pageable]
    state = {"i": 0}

    def before():
        x = pageable[state["i"] % 2].to(dev)
        state["i"] += 1
        with torch.no_grad():
            return model(x.to(torch.bfloat16))

    side = torch.cuda.Stream()
    pre = {"i": 0, "next": None, "ev": None}

    def prefetch():
        with torch.cuda.stream(side):
            pre["next"] = pinned[pre["i"] % 2].to(dev, non_blocking=True)
            pre["ev"] = torch.cuda.Event()
            pre["ev"].record(side)
        pre["i"] += 1

    def after():
        if pre["next"] is None:
            prefetch()
        torch.cuda.current_stream().wait_event(pre["ev"])
        x = pre["next"]
        x.record_stream(torch.cuda.current_stream())
        prefetch()
        with torch.no_grad():
            return model(x.to(torch.bfloat16))

    return before, after


@pair("h2d_vit_train", "copy", "pinned", "train",
      "ViT-B/16 AMP training, b32, batch in pageable memory .cuda() each step → pinned + non_blocking")
def _():
    m1, m2 = tv_model("vit_b_16"), tv_model("vit_b_16")
    o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True) for m in (m1, m2))
    pageable, pinned = images(32), images(32, pinned=True)
    y = labels(32)

    def before():
        return vision_train_step(m1, o1, pageable.to(dev), y)

    def after():
        return vision_train_step(m2, o2, pinned.to(dev, non_blocking=True), y)

    return before, after


@pair("item_resnet18_train", "sync", "sync", "train",
      "ResNet-18 AMP training, b64 on device-resident data, loss.item() logged every step → no per-step sync")
def _():
    m1, m2 = tv_model("resnet18"), tv_model("resnet18")
    o1, o2 = (sgd_momentum(m) for m in (m1, m2))
    x, y = images(64).to(dev), labels(64)
    return (lambda: vision_train_step(m1, o1, x, y, sync_loss=True)), (lambda: vision_train_step(m2, o2, x, y))


@pair("gradaccum_bert_train", "sync", "sync", "train",
      "BERT-base AMP training, 4 micro-batches of 8×128 per step, running loss .item() after each micro-batch → "
      "accumulated on the GPU")
def _():
    m1, m2 = hf_model("bert"), hf_model("bert")
    o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
    ids = torch.randint(0, 30522, (8, 128), device=dev)
    y = torch.randint(0, 2, (8,), device=dev)

    def make(m, opt, sync):
        def step():
            total = 0.0 if sync else torch.zeros((), device=dev)
            for _ in range(4):
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = m(input_ids=ids, labels=y).loss / 4
                loss.backward()
                total = total + (loss.item() if sync else loss.detach())
            opt.step()
            opt.zero_grad(set_to_none=True)
            return total

        return step

    return make(m1, o1, True), make(m2, o2, False)


def graphs_infer_pair(model_name):
    """bf16 inference of a torchvision model at batch 1, eager, and with the forward captured in a CUDA graph."""
    model = tv_model(model_name).eval().to(torch.bfloat16)
    x = images(1).to(dev, torch.bfloat16)

    def fwd(inp):
        with torch.no_grad():
            return model(inp)

    return (lambda: fwd(x)), graphed(fwd, x)


@pair("graphs_mobilenet_infer", "launch", "graphs", "infer",
      "MobileNetV3-small bf16 inference at batch 1, eager → the forward captured in a CUDA graph")
def _():
    return graphs_infer_pair("mobilenet_v3_small")


@pair("graphs_bert_infer", "launch", "graphs", "infer",
      "BERT-base bf16 inference at batch 1 × 32 tokens, eager → the forward captured in a CUDA graph")
def _():
    model = hf_model("bert").eval().to(torch.bfloat16)
    ids = torch.randint(0, 30522, (1, 32), device=dev)

    def fwd(inp):
        with torch.no_grad():
            return model(input_ids=inp).logits

    return (lambda: fwd(ids)), graphed(fwd, ids)


def pinned_infer_pair(model_name, batch):
    """bf16 inference of a torchvision model on an fp32 batch copied each step: from pageable memory, and from pinned
    memory with non_blocking."""
    m1 = tv_model(model_name).eval().to(torch.bfloat16)
    m2 = tv_model(model_name).eval().to(torch.bfloat16)
    pageable, pinned = images(batch), images(batch, pinned=True)

    def run(m, x):
        with torch.no_grad():
            return m(x.to(torch.bfloat16))

    return (lambda: run(m1, pageable.to(dev))), (lambda: run(m2, pinned.to(dev, non_blocking=True)))


def pinned_train_pair(model_name, batch):
    """AMP training of a torchvision model on an fp32 batch copied each step: from pageable memory, and from pinned
    memory with non_blocking."""
    m1, m2 = tv_model(model_name), tv_model(model_name)
    o1, o2 = sgd_momentum(m1), sgd_momentum(m2)
    pageable, pinned, y = images(batch), images(batch, pinned=True), labels(batch)
    return ((lambda: vision_train_step(m1, o1, pageable.to(dev), y)),
            (lambda: vision_train_step(m2, o2, pinned.to(dev, non_blocking=True), y)))


def channels_last_train_pair(model_name, batch):
    """AMP training of a torchvision model in NCHW, and with the model and its input channels_last."""
    m1 = tv_model(model_name)
    m2 = tv_model(model_name).to(memory_format=torch.channels_last)
    o1, o2 = sgd_momentum(m1), sgd_momentum(m2)
    x1, y = images(batch).to(dev), labels(batch)
    x2 = x1.contiguous(memory_format=torch.channels_last)
    return (lambda: vision_train_step(m1, o1, x1, y)), (lambda: vision_train_step(m2, o2, x2, y))


def channels_last_infer_pair(model_name, batch, size=224, **model_kw):
    """bf16 inference of a torchvision model in NCHW, and with the model and its input channels_last (images of
    size × size; model_kw to the model's constructor)."""
    m1 = tv_model(model_name, **model_kw).eval().to(torch.bfloat16)
    m2 = tv_model(model_name, **model_kw).eval().to(torch.bfloat16).to(memory_format=torch.channels_last)
    x1 = images(batch, size=size).to(dev, torch.bfloat16)
    x2 = x1.contiguous(memory_format=torch.channels_last)

    def run(m, x):
        with torch.no_grad():
            return m(x)

    return (lambda: run(m1, x1)), (lambda: run(m2, x2))


def bf16_infer_pair(model_name, batch):
    """fp32 inference of a torchvision model with TF32 off (PyTorch's default), and the same under bf16 autocast."""
    model = tv_model(model_name).eval()
    x = images(batch).to(dev)

    def make(bf16):
        def step():
            torch.backends.cuda.matmul.allow_tf32 = False
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                return model(x)

        return step

    return make(False), make(True)


@pair("cl_resnet50_infer", "layout", "layout", "infer",
      "ResNet-50 bf16 inference, b64, NCHW → model and input channels_last")
def _():
    return channels_last_infer_pair("resnet50", 64)


@pair("cl_resnet50_train", "layout", "layout", "train",
      "ResNet-50 AMP training, b32, NCHW → model and input channels_last")
def _():
    return channels_last_train_pair("resnet50", 32)


@pair("tf32_vit_train", "precision", "", "train",
      "ViT-B/16 fp32 training, b16, full-precision fp32 matmuls → TF32 (torch.backends.cuda.matmul.allow_tf32)")
def _():
    m1, m2 = tv_model("vit_b_16"), tv_model("vit_b_16")
    o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True) for m in (m1, m2))
    x, y = images(16).to(dev), labels(16)

    def make(m, opt, tf32):
        def step():
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        return step

    return make(m1, o1, False), make(m2, o2, True)


@pair("bf16_bert_infer", "precision", "", "infer",
      "BERT-base fp32 inference, b32 × 128 tokens (TF32 off, PyTorch's default) → bf16 autocast")
def _():
    model = hf_model("bert").eval()
    ids = torch.randint(0, 30522, (32, 128), device=dev)

    def make(bf16):
        def step():
            torch.backends.cuda.matmul.allow_tf32 = False
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                return model(input_ids=ids).logits

        return step

    return make(False), make(True)


@pair("fused_adamw_bert_train", "optimizer", "", "train",
      "BERT-base AMP training, b8 × 128, AdamW(foreach=False) (a kernel per parameter per op) → AdamW(fused=True)")
def _():
    m1, m2 = hf_model("bert"), hf_model("bert")
    o1 = torch.optim.AdamW(m1.parameters(), lr=1e-5, foreach=False)
    o2 = torch.optim.AdamW(m2.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, 30522, (8, 128), device=dev)
    y = torch.randint(0, 2, (8,), device=dev)

    return hf_train_step(m1, o1, input_ids=ids, labels=y), hf_train_step(m2, o2, input_ids=ids, labels=y)


@pair("sdpa_gpt2_infer", "attention", "", "infer",
      "GPT-2 (124M) bf16 forward, b8 × 1024 tokens, eager attention (matmul, mask, softmax, matmul) → "
      "scaled_dot_product_attention")
def _():
    m1 = hf_model("gpt2", attn="eager").eval().to(torch.bfloat16)
    m2 = hf_model("gpt2", attn="sdpa").eval().to(torch.bfloat16)
    ids = torch.randint(0, 50257, (8, 1024), device=dev)

    def run(m):
        with torch.no_grad():
            return m(input_ids=ids, use_cache=False).logits

    return (lambda: run(m1)), (lambda: run(m2))


@pair("sdpa_gpt2_train", "attention", "", "train",
      "GPT-2 (124M) AMP training, b4 × 1024 tokens, eager attention → scaled_dot_product_attention")
def _():
    m1, m2 = hf_model("gpt2", attn="eager"), hf_model("gpt2", attn="sdpa")
    o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
    ids = torch.randint(0, 50257, (4, 1024), device=dev)

    kw = dict(input_ids=ids, labels=ids, use_cache=False)
    return hf_train_step(m1, o1, **kw), hf_train_step(m2, o2, **kw)


@pair("static_gpt2_decode", "launch", "graphs", "infer",
      "GPT-2 (124M) bf16 greedy decode of 32 tokens at batch 1, dynamic KV cache, eager → static KV cache with the "
      "forward compiled (mode=reduce-overhead: CUDA graphs)")
def _():
    m1 = hf_model("gpt2").eval().to(torch.bfloat16)
    m2 = hf_model("gpt2").eval().to(torch.bfloat16)
    m2.forward = torch.compile(m2.forward, mode="reduce-overhead", fullgraph=True)
    ids = torch.randint(0, 50257, (1, 16), device=dev)
    kw = dict(max_new_tokens=32, min_new_tokens=32, do_sample=False, pad_token_id=0)

    def before():
        with torch.no_grad():
            return m1.generate(ids, **kw)

    def after():
        with torch.no_grad():
            return m2.generate(ids, cache_implementation="static", **kw)

    return before, after


# --- measurement --------------------------------------------------------------------------------------------------


def sync():
    torch.cuda.synchronize()


def chunk_ms(step, n, drain):
    for _ in range(drain):  # untimed: a DataLoader's prefetched batches, graph warm-up
        step()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return (time.perf_counter() - t) / n * 1e3


def summary(xs):
    return {"median_ms": statistics.median(xs), "min_ms": min(xs), "max_ms": max(xs), "rounds_ms": xs}


def measure(out, names):
    from torch.profiler import ProfilerActivity, profile, schedule

    os.makedirs(os.path.join(out, "traces"), exist_ok=True)
    path = os.path.join(out, "realmodels.json")
    result = json.load(open(path)) if os.path.exists(path) else {}
    result.update({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                   "uuid": str(torch.cuda.get_device_properties(0).uuid), "pairs": result.get("pairs", {})})
    try:
        import torchvision
        import transformers

        result["torchvision"], result["transformers"] = torchvision.__version__, transformers.__version__
    except ImportError:
        pass
    deadline = time.time() + float(os.environ.get("REALMODELS_BUDGET_S", "420"))
    for name in names:
        if time.time() > deadline:
            print(f"{name}: skipped (budget spent)", flush=True)
            continue
        spec = PAIRS[name]
        t0 = time.time()
        try:
            before, after = spec["make"]()
            drain = 20 if spec["cls"] == "dataloader" else 3
            for fn in (before, after):
                chunk_ms(fn, 5, drain)  # warm-up: cuDNN/cuBLAS choices, compile, workers
            probe = max(chunk_ms(before, 3, 0), chunk_ms(after, 3, 0))
            n = int(min(200, max(6, 250 / max(probe, 1e-3))))
            b, a = [], []
            for _ in range(int(os.environ.get("REALMODELS_ROUNDS", "7"))):  # interleaved rounds
                b.append(chunk_ms(before, n, drain))
                a.append(chunk_ms(after, n, drain))
            rec = {k: spec[k] for k in ("cls", "fix", "mode", "what", "set")}
            rec.update({"steps_per_round": n, "before": summary(b), "after": summary(a)})
            for variant, fn in (("before", before), ("after", after)):
                for _ in range(drain):
                    fn()
                sync()
                trace = os.path.join(out, "traces", f"{name}-{variant}.pt.json")

                def ready(p, trace=trace):
                    p.export_chrome_trace(trace)

                # As users profile: prof.step() after each iteration marks ProfilerStep#N; no extra syncs.
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                             schedule=schedule(wait=1, warmup=2, active=4), on_trace_ready=ready) as prof:
                    for i in range(7):
                        fn()
                        prof.step()
                    sync()
                os.system(f"gzip -9f {trace}")
            result["pairs"][name] = rec
            print(f"{name}: before {statistics.median(b):.3f} ms, after {statistics.median(a):.3f} ms "
                  f"({statistics.median(a) / statistics.median(b) - 1:+.1%}), {time.time() - t0:.0f} s", flush=True)
        except Exception as e:  # one broken pair must not lose the others
            result["pairs"][name] = {"error": repr(e)[:400]}
            print(f"{name}: FAILED {e!r}"[:400], flush=True)
        before = after = None
        gc.collect()
        json.dump(result, open(path, "w"), indent=1)
        torch.cuda.empty_cache()


def run_one(name, variant, steps, warmup):
    before, after = PAIRS[name]["make"]()
    fn = before if variant == "before" else after
    drain = 20 if PAIRS[name]["cls"] == "dataloader" else 3
    for _ in range(warmup + drain):
        fn()
    sync()
    t = time.perf_counter()
    for i in range(steps):
        with torch.cuda.nvtx.range(f"ProfilerStep#{i}"):
            fn()
    sync()
    print(json.dumps({"pair": name, "variant": variant, "traced_ms": (time.perf_counter() - t) / steps * 1e3}))


if __name__ == "__main__":
    import cnn_bf16  # the CNN precision calibration pairs (cnn_bf16.py)
    import heldout  # the held-out batch (heldout.py), registered into this table
    import heldout4  # the fourth held-out set (heldout4.py)
    import heldout5  # the fifth held-out set (heldout5.py)

    heldout.register(sys.modules[__name__])
    cnn_bf16.register(sys.modules[__name__])
    heldout4.register(sys.modules[__name__])
    heldout5.register(sys.modules[__name__])
    args = sys.argv[1:]
    if not args or args[0] == "list":  # [list [corpus|heldout|cnn-bf16|heldout4|heldout5]]
        for k, v in PAIRS.items():
            if len(args) < 2 or v["set"] == args[1]:
                print(f"{k:28} {v['cls']:10} {v['fix'] or '-':16} {v['mode']:6} {v['set']:8} {v['what']}")
    elif args[0] == "measure":  # the corpus unless names are given
        measure(args[1], args[2:] or [k for k, v in PAIRS.items() if v["set"] == "corpus"])
    elif args[0] == "run":
        opts = dict(zip(args[3::2], args[4::2]))
        run_one(args[1], args[2], int(opts.get("--steps", 8)), int(opts.get("--warmup", 5)))
    else:
        sys.exit(__doc__)
