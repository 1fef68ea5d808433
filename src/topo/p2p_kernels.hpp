// The SM side of `probe p2p`: a copy kernel that stores into another GPU's memory (loads and stores over NVLink or
// PCIe peer mappings, as NCCL's kernels move data, rather than the copy engines cudaMemcpyPeerAsync uses), and a
// ping-pong of flags between two GPUs' threads for the one-way latency of a store seen by a peer.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gsq::topo {

// Copies `bytes` (a multiple of 16) from `src` to `dst` on the current device's `stream`; either pointer may be
// another GPU's memory with peer access enabled. `blocks` × 512 threads, grid-stride.
void launch_sm_copy(void* dst, const void* src, uint64_t bytes, int blocks, cudaStream_t stream);

// One side of a ping-pong: round r (1 … rounds), the starter stores 2r − 1 into `peer_flag` and waits until
// `my_flag` reads 2r; the responder waits for 2r − 1 in `my_flag` and answers 2r into `peer_flag`. Flags are ints in
// the GPUs' memory, zeroed before. A side that waits longer than `timeout_ms` (by the GPU's global timer) stops and
// leaves 1 in `*timed_out`. Launched on the current device's `stream`, one thread.
void launch_pingpong(volatile int* my_flag, volatile int* peer_flag, int rounds, bool starter, int timeout_ms,
                     int* timed_out, cudaStream_t stream);

// Both sides in one launch of two blocks on the current device (flags in its own memory): the latency of a store
// seen by another SM through L2, the diagonal of the latency matrix.
void launch_pingpong_local(volatile int* flags, int rounds, int timeout_ms, int* timed_out, cudaStream_t stream);

}  // namespace gsq::topo
