// The row plans: how each row operation is spread over the GPU for a width, as tables in the manner of CUB's tuning
// policies — one row per operation and width range (in accesses: 16-byte vectors, or elements where rows or pointers
// do not allow them), with the card and the result folder it was measured on. plan_row reads the first row that
// matches; tests/kernels/test_kernels_cpu.cpp checks what it picks. A table for another card goes beside these.
#include "kernels/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

namespace gsq::kernels {

namespace {

constexpr int64_t kAny = std::numeric_limits<int64_t>::max();

// Rows too wide for registers, read twice by a block: the first read marked to stay in L1/L2, the second evict-first
// (the shape and hints of torch.compile's looped reductions). Only 16-byte rows. Measured against the plans they
// replace (register-resident, or the plain two-read kernel past 4096 accesses); the same shapes without the hints ran
// 6-25% slower (norms) and 8-11% (softmax).
struct TwoReadPolicy {
  RowOp op;
  int64_t from, to;       // accesses, inclusive
  int block_threads;      // a block a row
  int in_flight;          // accesses in flight a thread per step
  int min_blocks;         // blocks an SM the compiler is asked to fit (registers capped to match)
  bool hint_second_read;  // false: the second read is a plain load (the row is still in L1)
  const char* measured;   // the card, the gain, the result folder
};
constexpr TwoReadPolicy kTwoReads[] = {
    // Where the register count leaves threads out (45 registers: five blocks of 256 or two of 512 an SM), eight blocks
    // of 256, four of 512 and three of 512 are asked for: 32, 32 and 40 registers, no spills. On five to eight H200s
    // these ran 0.980-0.985 × copy at 16384 bf16 and 0.987-0.991 at 4096; the plans before them 0.964-0.983 and 0.962.
    {RowOp::rms_norm, 257, 512, 256, 2, 8, true, "H200; 2026-12-04-h200-row-sharing, -row-blocks-copy-variants"},
    // torch.compile's shape at 8192 bf16: 512 threads, 32 registers, 32-bit indices in the row; 0.999-1.004 ×
    // torch.compile on four H200s where 256 × 4 ran 0.991-0.992. The plain second load is 0.2% faster than one marked
    // evict-first on two cards.
    {RowOp::rms_norm, 513, 1024, 512, 2, 4, false, "H200; 2026-12-04-h200-rms-variants"},
    {RowOp::rms_norm, 1025, 2048, 512, 4, 3, true, "H200; 2026-12-04-h200-row-blocks-copy-variants"},
    {RowOp::rms_norm, 2049, 4096, 1024, 1, 1, true, "H200, +2.3%; 2026-12-04-h200-row-hints"},
    {RowOp::rms_norm, 4097, kAny, 1024, 4, 1, true, "H200, +6-11%; 2026-12-04-h200-row-hints"},
    // Its register plans stay ahead up to 4096: its second read also loads the bias.
    {RowOp::layer_norm, 4097, kAny, 1024, 2, 1, true, "H200, +4-12%; 2026-12-04-h200-row-hints"},
    {RowOp::softmax, 1025, 2048, 512, 4, 1, true, "H200, +10%; 2026-12-04-h200-row-hints"},
    {RowOp::softmax, 2049, 8192, 1024, 4, 1, true, "H200, +22-27%; 2026-12-04-h200-row-hints"},
    // Past 16384 the plain two-read kernel is level.
    {RowOp::softmax, 8193, 16384, 1024, 2, 1, true, "H200, +7%; 2026-12-04-h200-row-hints"},
};

// Rows held in registers: accesses a thread, the row's threads the next power of two that gives it, the block at
// least `block_for_four` threads when a thread takes four (else 128). Measured by bench/tune/row_tune on the H200
// (bf16, widths 256…32768, 2026-12-03-h200-row-plans and 2026-12-04-h200-row-sharing): two a thread while the row's
// threads reduce in a few steps (2-3% faster than four there), four beyond; softmax + dropout, bound by its Philox
// instructions, is fastest with four throughout.
struct RegisterPolicy {
  RowOp op;
  bool vector_only;    // only for 16-byte rows
  int64_t from, to;    // accesses, inclusive
  int per_thread;      // accesses a thread aimed at
  int block_for_four;  // the smallest block where a thread takes four
  const char* measured;
};
constexpr RegisterPolicy kRegisters[] = {
    // LayerNorm: two reductions, so past a warp a row the block-wide steps cost more than they win. Eight a thread past
    // 1024 accesses (0.1-1.0% faster than four at 16384 bf16), reading x marked L2 evict-last: 2.3-2.4% faster at
    // 16384 and 1.1-1.7% at 32768 bf16 than plain loads. At 4096 accesses 14% faster than a block of 1024 with four.
    {RowOp::layer_norm, false, 1, 64, 2, 256, "H200; 2026-12-03-h200-row-plans"},
    {RowOp::layer_norm, true, 1025, kAny, 8, 256, "H200; 2026-12-04-h200-row-sharing"},
    {RowOp::layer_norm, false, 65, kAny, 4, 256, "H200; 2026-12-03-h200-row-plans"},
    // RMSNorm's 16-byte rows of 17-32 accesses (256 bf16): one a thread, a warp a row, in blocks of 128: 0.5-0.7%
    // faster than two a thread on three H200s, the only plan there ahead of torch.compile (1.003-1.005 ×).
    {RowOp::rms_norm, true, 17, 32, 1, 512, "H200; 2026-12-04-h200-rms-variants"},
    {RowOp::rms_norm, false, 1, 1024, 2, 512, "H200; 2026-12-03-h200-row-plans"},
    {RowOp::rms_norm, false, 1025, kAny, 4, 512, "H200; 2026-12-03-h200-row-plans"},
    {RowOp::softmax, false, 1, 256, 2, 256, "H200; 2026-12-03-h200-row-plans"},
    {RowOp::softmax, false, 257, kAny, 4, 256, "H200; 2026-12-03-h200-row-plans"},
    {RowOp::softmax_dropout, false, 1, kAny, 4, 128, "H200; 2026-12-03-h200-row-plans"},
    // The residual add + RMSNorm: RMSNorm's plans (it reads the residual beside x and writes it back, three streams
    // where RMSNorm has two), unmeasured when set.
    {RowOp::add_rms_norm, false, 1, 1024, 2, 512, "RMSNorm's plan, unmeasured for the add"},
    {RowOp::add_rms_norm, false, 1025, kAny, 4, 512, "RMSNorm's plan, unmeasured for the add"},
};

// Past this many accesses a row is read twice by a block of 1024 without hints (rows without 16-byte accesses, and
// widths no two-read policy names).
constexpr int64_t kRegisterRowLimit = 1024 * 4;

}  // namespace

std::string RowPlan::describe() const {
  if (span)
    return fmt::format("16-byte packs of the row's span (first and last by element), {}block of {} per row, two reads",
                       parts > 1 ? fmt::format("a cluster of {} blocks × ", parts) : "", block_threads);
  if (accesses_per_thread == 0)
    return fmt::format("block of {} per row{}, two reads{}, {} × {}-element accesses in flight per thread",
                       block_threads, min_blocks > 1 ? fmt::format(" ({} blocks an SM)", min_blocks) : "",
                       !cache_hints       ? ""
                       : hint_second_read ? " (first kept in cache, second evict-first)"
                                          : " (first kept in cache)",
                       in_flight, elems_per_access);
  return fmt::format("{} per row, {} × {}-element accesses per thread{}, held in registers{}",
                     threads_per_row == 32 ? std::string("warp") : fmt::format("{} threads", threads_per_row),
                     accesses_per_thread, elems_per_access,
                     rows_per_thread > 1 ? fmt::format(" for {} rows", rows_per_thread) : "",
                     few ? " (few rows: weight loaded with x, one reduction)" : "");
}

RowPlan plan_row(RowOp op, DType dtype, int64_t cols, bool aligned16, int64_t rows, int sms) {
  RowPlan p;
  const int per16 = 16 / dtype_size(dtype);
  // Rows too few to give half the SMs a block are latency-bound: a row that fits in registers is read once by one
  // block (the register plans, not the two-read ones tuned for many rows), a wider one is split over a cluster.
  // Measured on an H100 (bench/results/2026-12-07-h100-row-shapes): with 1-32 rows of 8192-32000 bf16 split over
  // two to four blocks, RMSNorm, softmax and the residual add took 5.6-10.7 µs where Liger's one block a row took
  // 3.0-6.6; unsplit rows of 50257-151936 lost to torch.compile by up to 3x before the span kernel.
  const bool few = rows > 0 && sms > 0 && rows * 2 <= sms;
  // The span kernel: rows whose width is not a multiple of 16 bytes (vocabulary widths: 50257, 30522, 32001, ...) from
  // kSpanFrom packs, where one element per access would leave the loads 2-4 bytes wide; and few rows too wide for
  // registers, split over a cluster of up to eight blocks with at least kShareMin packs each. Whole 1024-thread blocks
  // where a share has kWideShare packs.
  constexpr int64_t kSpanFrom = 256, kShareMin = 512, kWideShare = 2048;
  const int64_t packs = (cols + per16 - 1) / per16 + 1;  // at most, whatever the row's start
  const bool split = aligned16 && few && packs > kRegisterRowLimit;
  if (split || (aligned16 && cols % per16 != 0 && packs >= kSpanFrom)) {
    p.vector = true, p.span = true, p.elems_per_access = per16, p.accesses_per_thread = 0;
    if (split) {
      p.parts = static_cast<int>(std::min<uint64_t>(8, std::bit_ceil(static_cast<uint64_t>((sms + rows - 1) / rows))));
      while (p.parts > 1 && packs / p.parts < kShareMin) p.parts /= 2;
    }
    p.block_threads = p.threads_per_row = packs / p.parts >= kWideShare ? 1024 : 256;
    return p;
  }
  p.vector = aligned16 && cols % per16 == 0;
  p.elems_per_access = p.vector ? per16 : 1;
  const int64_t accesses = (cols + p.elems_per_access - 1) / p.elems_per_access;
  // Few rows: a row's time is its chain of dependent steps (the loads, the reductions, the stores), and a thread's
  // share of the row is part of that chain. One access a thread up to 256, two up to 1024, four up to 2048 (Liger's
  // Triton norms give a row one program of 4-16 warps the same way). On an H100
  // (bench/results/2026-12-07-h100-row-probe) LayerNorm's plans for many rows took 2.65-2.98 µs a call at 1-8 ×
  // 768-8192 bf16 where Liger's took 1.50-2.26: 55-92 registers, a warp issuing every 5-11 cycles, the weight and bias
  // loaded after two reductions. Softmax + dropout keeps its plans (its Philox rounds, not latency, bound it).
  if (few && p.vector && op != RowOp::softmax_dropout && accesses <= 2048) {
    const int64_t per = accesses <= 256 ? 1 : accesses <= 1024 ? 2 : 4;
    p.threads_per_row = static_cast<int>(
        std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>((accesses + per - 1) / per)), 4, 512));
    p.accesses_per_thread =
        static_cast<int>(std::bit_ceil(static_cast<uint64_t>((accesses + p.threads_per_row - 1) / p.threads_per_row)));
    p.block_threads = std::max(p.threads_per_row, 32);
    p.few = true;
    return p;
  }
  if (p.vector && !few)
    for (const auto& t : kTwoReads)
      if (t.op == op && accesses >= t.from && accesses <= t.to) {
        p.accesses_per_thread = 0, p.cache_hints = true;
        p.threads_per_row = p.block_threads = t.block_threads;
        p.in_flight = t.in_flight, p.min_blocks = t.min_blocks, p.hint_second_read = t.hint_second_read;
        return p;
      }
  if (accesses > kRegisterRowLimit) {
    p.threads_per_row = p.block_threads = 1024;
    p.accesses_per_thread = 0;
    return p;
  }
  const auto& r = *std::find_if(std::begin(kRegisters), std::end(kRegisters), [&](const RegisterPolicy& x) {
    return x.op == op && (p.vector || !x.vector_only) && accesses >= x.from && accesses <= x.to;
  });
  const auto want = std::bit_ceil(static_cast<uint64_t>((accesses + r.per_thread - 1) / r.per_thread));
  p.threads_per_row = static_cast<int>(std::clamp<uint64_t>(want, 4, 1024));
  const int64_t per_thread = (accesses + p.threads_per_row - 1) / p.threads_per_row;
  p.accesses_per_thread = static_cast<int>(std::bit_ceil(static_cast<uint64_t>(per_thread)));
  p.block_threads = std::max(p.threads_per_row, p.accesses_per_thread == 4 ? r.block_for_four : 128);
  // LayerNorm's 16-byte rows of up to 256 accesses in blocks of one row group (one warp of two rows a thread up to
  // 128 accesses, sharing one load of the weight and bias packs; 64 threads for one row past that): a block retires,
  // and its slot takes new rows, as soon as its own rows are done instead of waiting for the slowest of four or
  // eight. On the H200 (2026-12-04-h200-row-blocks-copy-variants) 0.6-0.8% faster than blocks of 128 at 256-1024 bf16
  // and 1.8% than blocks of 256 at 2048; RMSNorm and softmax gained under 0.3% and keep theirs.
  if (p.vector && op == RowOp::layer_norm && accesses <= 128)
    p.rows_per_thread = 2, p.block_threads = 32;
  else if (p.vector && op == RowOp::layer_norm && p.threads_per_row <= 64)
    p.block_threads = p.threads_per_row;
  return p;
}

}  // namespace gsq::kernels
