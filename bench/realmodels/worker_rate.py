"""How fast DataLoader workers make batches, against the training process making them itself (num_workers=0): what
`--what-if workers:N` needs, and cannot see in a trace. A trace of a num_workers=0 loop records each batch's making
(its enumerate(DataLoader) range) in the main process, whose torch ops run on all of PyTorch's intra-op threads; a
worker runs them on one thread (the DataLoader sets torch.set_num_threads(1) in each) and writes the batch to shared
memory for the main process, which pins it (pin_memory=True). So a worker takes longer per batch than the range says.

For a few CPU input pipelines (no model, no GPU work: the loop only takes batches), measured in one process:
  main     ms per batch made in the main process (num_workers=0), PyTorch's default threads
  main_1t  the same on one intra-op thread
  w1, w8   ms per batch taken from 1 and from 8 workers (pin_memory=True, persistent, prefetch_factor=2), steady state
and the slowdowns k1 = w1 / main and k8 = 8 × w8 / main (1: a worker is as fast as the range said).

  python3 bench/realmodels/worker_rate.py OUT.json"""
import io
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pairs import SynthImages as TensorAug  # noqa: E402  the corpus's own pipeline (transforms.v2 on tensors)


class JpegAug(torch.utils.data.Dataset):
    """ImageNet-style: a JPEG decoded with PIL, RandomResizedCrop, flip, ToTensor, Normalize (transforms v1)."""

    def __init__(self, n=64):
        from PIL import Image
        from torchvision import transforms

        g = torch.Generator().manual_seed(0)
        self.jpegs = []
        for _ in range(n):
            img = Image.fromarray(torch.randint(0, 256, (375, 500, 3), dtype=torch.uint8, generator=g).numpy())
            buf = io.BytesIO()
            img.save(buf, format="JPEG", quality=90)
            self.jpegs.append(buf.getvalue())
        self.tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                                      transforms.ToTensor(),
                                      transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        from PIL import Image

        return self.tf(Image.open(io.BytesIO(self.jpegs[i % len(self.jpegs)])).convert("RGB")), i % 1000


class TokenCrop(torch.utils.data.Dataset):
    """Text-style: a random window of a long token array, shifted for labels (little CPU work per sample)."""

    def __init__(self):
        self.tokens = torch.randint(0, 50257, (1 << 22,))

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        s = (i * 7919) % (len(self.tokens) - 1025)
        w = self.tokens[s:s + 1025]
        return w[:-1].clone(), w[1:].clone()


PIPELINES = (("tensor_v2_b64", TensorAug, 64), ("tensor_v2_b128", TensorAug, 128), ("jpeg_pil_b64", JpegAug, 64),
             ("tokens_b64", TokenCrop, 64))


def per_batch_ms(loader, warm, n):
    it = iter(loader)
    for _ in range(warm):
        next(it)
    t = time.perf_counter()
    for _ in range(n):
        next(it)
    return (time.perf_counter() - t) / n * 1e3


def loader(ds, batch, workers):
    return torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers, pin_memory=workers > 0,
                                       persistent_workers=workers > 0,
                                       prefetch_factor=2 if workers > 0 else None, drop_last=True)


def main(out):
    result = {"torch": torch.__version__, "cpus": os.cpu_count(), "threads": torch.get_num_threads(), "pipelines": {}}
    deadline = time.time() + float(os.environ.get("WORKER_RATE_BUDGET_S", "150"))
    for name, cls, batch in PIPELINES:
        if time.time() > deadline:
            print(f"{name}: skipped (budget)", flush=True)
            continue
        ds = cls()
        threads = torch.get_num_threads()
        main_ms = statistics.median(per_batch_ms(loader(ds, batch, 0), 2, 6) for _ in range(3))
        torch.set_num_threads(1)
        main_1t = statistics.median(per_batch_ms(loader(ds, batch, 0), 2, 6) for _ in range(3))
        torch.set_num_threads(threads)
        # Workers: past the prefetched batches (2 per worker) before timing, so the rate is the workers' own.
        w1 = per_batch_ms(loader(ds, batch, 1), 4, 8)
        w8 = per_batch_ms(loader(ds, batch, 8), 24, 48)
        rec = {"batch": batch, "main_ms": main_ms, "main_1t_ms": main_1t, "w1_ms": w1, "w8_ms": w8,
               "k1": w1 / main_ms, "k8": 8 * w8 / main_ms, "one_thread_slowdown": main_1t / main_ms}
        result["pipelines"][name] = rec
        print(f"{name}: main {main_ms:.2f} ms/batch ({main_1t:.2f} on one thread), 1 worker {w1:.2f}, 8 workers "
              f"{w8:.2f} → k1 {rec['k1']:.2f}, k8 {rec['k8']:.2f}", flush=True)
        json.dump(result, open(out, "w"), indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
