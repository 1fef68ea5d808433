"""Fragments the PyTorch caching allocator on purpose, then dumps an allocator snapshot for `gpusqueeze memory`.

Interleaves allocations of two sizes in the same segments and frees every other one, so free blocks sit between live
blocks (fragmentation), then asks for one block larger than any free piece. Run it twice, without and with
PYTORCH_ALLOC_CONF=expandable_segments:True; `gpusqueeze memory` must report the first as fragmented and the second
not. Usage: python3 fragment.py OUT.pickle [--rounds N]
"""
import argparse
import sys

import torch


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=64)
    args = ap.parse_args()
    torch.cuda.memory._record_memory_history(max_entries=100000)
    keep, drop = [], []
    for i in range(args.rounds):
        # 12 MiB and 4 MiB requests share 20 MiB segments (requests of 1-10 MiB split a 20 MiB block).
        keep.append(torch.empty(3 * 2**20, dtype=torch.float32, device="cuda"))
        drop.append(torch.empty(1 * 2**20, dtype=torch.float32, device="cuda"))
        # Larger ones, freed every other time, leave holes in the large segments.
        big = torch.empty((96 + 8 * (i % 4)) * 2**18, dtype=torch.float32, device="cuda")
        (drop if i % 2 else keep).append(big)
    del drop
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    print(f"reserved {stats['reserved_bytes.all.current'] / 2**20:.1f} MiB, allocated "
          f"{stats['allocated_bytes.all.current'] / 2**20:.1f} MiB, inactive split "
          f"{stats['inactive_split_bytes.all.current'] / 2**20:.1f} MiB", file=sys.stderr)
    torch.cuda.memory._dump_snapshot(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
