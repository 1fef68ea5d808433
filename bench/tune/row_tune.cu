// Sweeps the register-resident row kernels' plans (threads per row × 16-byte accesses per thread × block size) for
// bf16 rows of the given widths, next to the shipped dispatch (plan_row) and cudaMemcpy D2D of the same bytes, all in
// one process: what plan_row's choice is taken from. Rows of 2048 and wider also run the two-pass kernel in blocks of
// 256-1024 threads with 1-4 accesses in flight (the shape of torch.compile's looped reductions). Each plan's output is
// checked against the shipped kernel's on the same input (the reductions' order differs, so within a bf16 rounding
// step, not bit for bit).
//
//   row_tune [--widths 256,1024,4096,16384] [--ops layer_norm,rms_norm,softmax,softmax_dropout]
//            [--elements 134217728] [--launches 20] [--reps 9]
//
// Input and output together are 1 GiB at the default size (17 L2s), so back-to-back launches read from DRAM. Prints
// µs per launch (median of reps batches), GB/s (read + write), × the copy and × the shipped plan.
#include "kernels/launch.hpp"
#include "kernels/rowwise.cuh"
#include "tune_support.cuh"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

using namespace gsq::kernels;

namespace row_tune {  // named: the kernels' header already opens an unnamed namespace in gsq::kernels

using T = __nv_bfloat16;
constexpr int kVec = 8;  // bf16 values per 16-byte access

struct OpInfo {
  const char* name;
  RowOp op;
};
constexpr OpInfo kOps[] = {{"layer_norm", RowOp::layer_norm},
                           {"rms_norm", RowOp::rms_norm},
                           {"softmax", RowOp::softmax},
                           {"softmax_dropout", RowOp::softmax_dropout}};

// f(std::integral_constant<RowOp, OP>{}) for the run-time op: one place that turns it into a template argument.
template <class F>
cudaError_t with_op(RowOp op, F&& f) {
  switch (op) {
    case RowOp::layer_norm:
      return f(std::integral_constant<RowOp, RowOp::layer_norm>{});
    case RowOp::rms_norm:
      return f(std::integral_constant<RowOp, RowOp::rms_norm>{});
    case RowOp::softmax:
      return f(std::integral_constant<RowOp, RowOp::softmax>{});
    case RowOp::softmax_dropout:
      return f(std::integral_constant<RowOp, RowOp::softmax_dropout>{});
    case RowOp::add_rms_norm:  // timed by bench/kernels/row_shapes.py, not tuned here
      break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_plan(RowOp op, const RowArgs& a, const RowPlan& p, cudaStream_t s) {
  return with_op(op, [&](auto o) { return launch_planned<decltype(o)::value, T, kVec>(a, p, s); });
}

// Counts the values of got that are not within a bf16 rounding step (2^-7 relative, 1e-3 absolute) of want, and
// the largest difference (non-negative floats order as their bit patterns; a NaN counts as a mismatch).
__global__ void compare_kernel(const T* __restrict__ got, const T* __restrict__ want, size_t n,
                               unsigned long long* mismatches, unsigned* max_bits) {
  unsigned long long bad = 0;
  float worst = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float g = __bfloat162float(got[i]), w = __bfloat162float(want[i]), d = fabsf(g - w);
    if (!(d <= ldexpf(fabsf(w), -7) + 1e-3f)) ++bad;
    if (d > worst) worst = d;
  }
  if (bad) atomicAdd(mismatches, bad);
  atomicMax(max_bits, __float_as_uint(worst));
}

struct Check {
  unsigned long long mismatches = 0;
  float max_diff = 0;
};

Check compare(const T* got, const T* want, size_t n, cudaStream_t s) {
  unsigned long long* d_bad;
  unsigned* d_max;
  CHECK(cudaMallocAsync(&d_bad, sizeof *d_bad, s));
  CHECK(cudaMallocAsync(&d_max, sizeof *d_max, s));
  CHECK(cudaMemsetAsync(d_bad, 0, sizeof *d_bad, s));
  CHECK(cudaMemsetAsync(d_max, 0, sizeof *d_max, s));
  compare_kernel<<<1024, 256, 0, s>>>(got, want, n, d_bad, d_max);
  Check c;
  unsigned bits = 0;
  CHECK(cudaMemcpyAsync(&c.mismatches, d_bad, sizeof *d_bad, cudaMemcpyDeviceToHost, s));
  CHECK(cudaMemcpyAsync(&bits, d_max, sizeof bits, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeAsync(d_bad, s));
  CHECK(cudaFreeAsync(d_max, s));
  std::memcpy(&c.max_diff, &bits, sizeof bits);
  return c;
}

// A two-read shape as the sweep prints it, and the shipped plan too, so the two lines can be matched.
std::string two_read_label(int threads, int in_flight, bool hints, int min_blocks, bool hint_second = true) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "two reads, block %d x %d accesses in flight%s", threads, in_flight,
                !hints ? "" : (hint_second ? ", evict hints" : ", evict hint on the first"));
  std::string out = buf;
  if (min_blocks > 1) out += ", " + std::to_string(min_blocks) + " blocks/SM";
  return out;
}

std::string label(const RowPlan& p) {
  if (p.accesses_per_thread == 0)
    return two_read_label(p.block_threads, p.in_flight, p.cache_hints, p.min_blocks, p.hint_second_read);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%d threads/row x %d accesses%s, block %d", p.threads_per_row, p.accesses_per_thread,
                p.rows_per_thread == 2 ? " x 2 rows" : "", p.block_threads);
  return buf;
}

// Plans that keep the row in registers: threads per row tpr (a power of two) with accesses / tpr ∈ {1, 2, 4}
// accesses each, in blocks of 32…1024 threads holding whole rows (one warp a block is the shape of torch.compile's
// persistent reductions); for the norms also 2 rows a thread or 8 accesses a thread, in blocks of up to 512. (Four
// rows a thread measured slower than two at every width on the H200:
// bench/results/2026-12-04-h200-row-sharing/1-rows-row_tune.log.)
std::vector<RowPlan> plans_for(RowOp op, int64_t cols) {
  const bool norm = op == RowOp::layer_norm || op == RowOp::rms_norm;
  std::vector<RowPlan> out;
  const int64_t accesses = cols / kVec;
  for (int vpt : {1, 2, 4, 8}) {
    const int64_t tpr = accesses / vpt;
    if (tpr < 4 || tpr > 1024 || accesses % vpt != 0 || (tpr & (tpr - 1)) != 0 || (vpt == 8 && !norm)) continue;
    for (int rows : {1, 2}) {
      if (rows > 1 && (!norm || vpt == 8)) continue;
      for (int block : {32, 64, 128, 256, 512, 1024}) {
        if (block < tpr || ((rows > 1 || vpt == 8) && block > 512)) continue;
        RowPlan p;
        p.vector = true;
        p.elems_per_access = kVec;
        p.threads_per_row = static_cast<int>(tpr);
        p.accesses_per_thread = vpt;
        p.block_threads = block;
        p.rows_per_thread = rows;
        out.push_back(p);
      }
    }
  }
  return out;
}

// The two-pass kernel (each row read twice, the second time mostly from the L2) in blocks of 256-1024 threads with
// 1-4 accesses in flight a thread: the shape of Inductor's looped reductions.
struct TwoPass {
  int threads, unroll;
  bool hints;
  cudaError_t (*launch)(RowOp, const RowArgs&, cudaStream_t);
  int min_blocks = 1;       // blocks per SM the compiler must fit (__launch_bounds__), 1 = its own register choice
  bool hint_second = true;  // with hints: the second read marked evict-first too (false: a plain load)
};

template <int THREADS, int UNROLL, bool HINTS, int MIN_BLOCKS = 1, bool HINT_SECOND = true>
cudaError_t launch_two_pass(RowOp op, const RowArgs& a, cudaStream_t s) {
  return with_op(op, [&](auto o) {
    row_kernel_wide<decltype(o)::value, T, kVec, THREADS, UNROLL, HINTS, MIN_BLOCKS, HINT_SECOND>
        <<<static_cast<unsigned>(a.rows), THREADS, 0, s>>>(a);
    return cudaGetLastError();
  });
}

// Each shape plain and with the cache hints of torch.compile's looped reductions; the hinted shapes whose registers
// leave an SM part empty (LayerNorm: 40-48 registers) also with the occupancy forced.
#define GSQ_TWO_PASS(threads, unroll)                                  \
  {threads, unroll, false, launch_two_pass<threads, unroll, false>}, { \
    threads, unroll, true, launch_two_pass<threads, unroll, true>      \
  }
#define GSQ_TWO_PASS_FULL(threads, unroll, blocks) \
  { threads, unroll, true, launch_two_pass<threads, unroll, true, blocks>, blocks }
#define GSQ_TWO_PASS_FIRST_HINT(threads, unroll, blocks) \
  { threads, unroll, true, launch_two_pass<threads, unroll, true, blocks, false>, blocks, false }
constexpr TwoPass kTwoPass[] = {
    GSQ_TWO_PASS(256, 1),         GSQ_TWO_PASS(256, 2),         GSQ_TWO_PASS_FULL(256, 2, 8),
    GSQ_TWO_PASS(256, 4),         GSQ_TWO_PASS_FULL(256, 4, 8), GSQ_TWO_PASS(512, 1),
    GSQ_TWO_PASS(512, 2),         GSQ_TWO_PASS_FULL(512, 2, 4), GSQ_TWO_PASS_FIRST_HINT(512, 2, 4),
    GSQ_TWO_PASS(512, 4),         GSQ_TWO_PASS_FULL(512, 4, 3), GSQ_TWO_PASS_FULL(512, 4, 4),
    GSQ_TWO_PASS(1024, 1),        GSQ_TWO_PASS(1024, 2),        GSQ_TWO_PASS(1024, 4),
    GSQ_TWO_PASS_FULL(1024, 4, 2)};
#undef GSQ_TWO_PASS_FIRST_HINT
#undef GSQ_TWO_PASS_FULL
#undef GSQ_TWO_PASS

}  // namespace row_tune

using namespace row_tune;
using tune::split;
using tune::time_us;

int main(int argc, char** argv) {
  std::vector<int64_t> widths{256, 1024, 4096, 16384};
  std::vector<std::string> ops{"layer_norm", "rms_norm", "softmax", "softmax_dropout"};
  int64_t elements = int64_t{1} << 27;
  int launches = 20, reps = 9;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return tune::option_value(argc, argv, i); };
    if (a == "--widths") {
      widths.clear();
      for (const auto& w : split(value())) widths.push_back(std::stoll(w));
    } else if (a == "--ops") {
      ops = split(value());
    } else if (a == "--elements") {
      elements = std::stoll(value());
    } else if (a == "--launches") {
      launches = std::stoi(value());
    } else if (a == "--reps") {
      reps = std::stoi(value());
    } else {
      std::fprintf(stderr,
                   "unknown argument %s\nusage: %s [--widths 256,1024,...] [--ops layer_norm,...] [--elements N] "
                   "[--launches N] [--reps N]\n",
                   a.c_str(), argv[0]);
      return 1;
    }
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; bf16, %lld elements per launch, median of %d batches of %d launches\n", prop.name,
              prop.multiProcessorCount, static_cast<long long>(elements), reps, launches);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t bytes = static_cast<size_t>(elements) * sizeof(T);
  T *x, *y, *ref, *w, *b;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&ref, bytes));
  const int64_t max_cols = *std::max_element(widths.begin(), widths.end());
  CHECK(cudaMalloc(&w, max_cols * sizeof(T)));
  CHECK(cudaMalloc(&b, max_cols * sizeof(T)));
  CHECK(fill_normal(DType::bf16, x, elements, 1, s));
  CHECK(fill_normal(DType::bf16, w, max_cols, 2, s));
  CHECK(fill_normal(DType::bf16, b, max_cols, 3, s));
  CHECK(cudaStreamSynchronize(s));
  const double gb = 2.0 * static_cast<double>(bytes) / 1e3;  // GB per µs → GB/s when divided by µs
  int failures = 0;
  for (const auto& op_name : ops) {
    const OpInfo* info = nullptr;
    for (const auto& o : kOps)
      if (op_name == o.name) info = &o;
    if (!info) {
      std::fprintf(stderr, "unknown op %s\n", op_name.c_str());
      return 1;
    }
    for (const int64_t cols : widths) {
      if (cols <= 0 || elements % cols != 0 || cols % kVec != 0) {
        std::fprintf(stderr, "width %lld must divide %lld elements and be a multiple of 8\n",
                     static_cast<long long>(cols), static_cast<long long>(elements));
        return 1;
      }
      RowArgs a;
      a.x = x, a.rows = elements / cols, a.cols = cols, a.eps = 1e-5f, a.p = 0.1f, a.seed = 7;
      if (info->op != RowOp::softmax && info->op != RowOp::softmax_dropout) a.weight = w;
      if (info->op == RowOp::layer_norm) a.bias = b;
      a.y = ref;
      CHECK(launch_row(info->op, DType::bf16, a, s));
      const double copy_us =
          time_us(s, launches, reps, [&](int) { CHECK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s)); });
      a.y = y;
      const double shipped_us =
          time_us(s, launches, reps, [&](int) { CHECK(launch_row(info->op, DType::bf16, a, s)); });
      const RowPlan shipped = plan_row(info->op, DType::bf16, cols, true);
      std::printf(
          "\n%s %lld x %lld: cudaMemcpy %.2f us (%.0f GB/s); shipped plan %s %.2f us (%.0f GB/s, %.3f x copy)\n",
          op_name.c_str(), static_cast<long long>(a.rows), static_cast<long long>(cols), copy_us, gb / copy_us,
          label(shipped).c_str(), shipped_us, gb / shipped_us, copy_us / shipped_us);
      std::printf("  %-54s %9s %8s %8s %9s %10s\n", "plan", "us", "GB/s", "x copy", "x shipped", "max |diff|");
      double best_us = 1e30;
      std::string best;
      const RowArgs la = info->op == RowOp::softmax_dropout ? with_dropout_fields(a) : a;
      // Checks one way of running the operation against the shipped kernel, times it and prints its line.
      auto measure = [&](const std::string& name, auto&& launch) {
        CHECK(cudaMemset(y, 0xff, bytes));  // NaN in bf16: a value the plan does not write fails the check
        CHECK(launch());
        const Check c = compare(y, ref, bytes / sizeof(T), s);
        const bool ok = c.mismatches == 0;
        failures += ok ? 0 : 1;
        const double us = time_us(s, launches, reps, [&](int) { CHECK(launch()); });
        std::printf("  %-54s %9.2f %8.0f %8.3f %9.3f %10.2g%s\n", name.c_str(), us, gb / us, copy_us / us,
                    shipped_us / us, static_cast<double>(c.max_diff), ok ? "" : "  MISMATCH");
        if (ok && us < best_us) best_us = us, best = name;
      };
      for (const RowPlan& p : plans_for(info->op, cols))
        measure(label(p), [&] { return launch_plan(info->op, la, p, s); });
      if (cols >= 2048)  // the two-pass kernel, for rows that could also stay in registers
        for (const TwoPass& t : kTwoPass)
          measure(two_read_label(t.threads, t.unroll, t.hints, t.min_blocks, t.hint_second),
                  [&] { return t.launch(info->op, la, s); });
      std::printf("  best: %s %.2f us = %.3f x copy, %.3f x shipped\n", best.c_str(), best_us, copy_us / best_us,
                  shipped_us / best_us);
      std::fflush(stdout);
    }
  }
  cudaFree(x), cudaFree(y), cudaFree(ref), cudaFree(w), cudaFree(b);
  if (failures) std::printf("\n%d plan(s) disagreed with the shipped kernel\n", failures);
  return failures ? 3 : 0;
}
