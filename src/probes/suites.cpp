// Probe suites: HBM and L2 bandwidth by operation, access width and size; PCIe by direction and host memory kind.
// They run on the bench harness, so every figure has P50/P99, CIs, the fingerprint and JSON.
#include "probes/suites.hpp"
#include "bench/device_kernels.hpp"
#include "core/error.hpp"
#include "cuda/raii.hpp"
#include "probes/probe_kernels.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

namespace gsq::probes {

using namespace bench;  // the harness: State, Axis, Benchmark, Suite

namespace {

using probes::MemOp;

int sm_count(int device) {
  int sms = 0;
  GSQ_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Host memory of either kind; pageable is plain heap memory, touched so its pages exist.
struct HostMemory {
  cuda::PinnedBuffer pinned;
  std::unique_ptr<char[]> pageable;
  void* get() { return pinned.get() ? pinned.get() : pageable.get(); }
  static HostMemory create(const std::string& kind, size_t bytes) {
    HostMemory h;
    if (kind == "pinned")
      h.pinned = cuda::PinnedBuffer::create(bytes);
    else if (kind == "pageable") {
      h.pageable = std::make_unique<char[]>(bytes);
      std::memset(h.pageable.get(), 0x3C, bytes);
    } else {
      throw_bad_input(fmt::format("memory={} (use pinned or pageable)", kind));
    }
    return h;
  }
};

void mem_op(State& st, MemOp op, bool against_dram = true) {
  const auto bytes = static_cast<size_t>(st.axis_int("bytes"));
  auto hint = probes::CacheHint::normal;
  if (st.result().axes.contains("variant")) {
    const std::string& v = st.axis("variant");
    if (v == "streaming")
      hint = probes::CacheHint::streaming;
    else if (v == "tiled")
      hint = probes::CacheHint::tiled;
    else if (v == "bulk")
      hint = probes::CacheHint::bulk;
    else if (v == "flat")
      hint = probes::CacheHint::flat;
    else if (v != "grid_stride")
      throw_bad_input("variant=" + v + " (flat, grid_stride, streaming, tiled or bulk)");
  }
  if (op != MemOp::copy && hint != probes::CacheHint::normal && hint != probes::CacheHint::flat)
    throw_bad_input("variant=" + st.axis("variant") + " applies to mem.copy only (here: flat or grid_stride)");
  const int width = static_cast<int>(st.axis_int("width"));
  if (width != 4 && width != 8 && width != 16) throw_bad_input(fmt::format("width={} (use 4, 8 or 16 bytes)", width));
  if (hint == probes::CacheHint::bulk) {
    int major = 0;
    GSQ_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, st.device()));
    if (major < 9) return st.skip("the TMA bulk copy needs sm_90 (Hopper) or newer");
    if (width != 16) return st.skip("moves 12 KB tiles: width does not apply (see width=16)");
  }
  if (bytes % 16 != 0 || bytes == 0) throw_bad_input(fmt::format("bytes={} is not a positive multiple of 16", bytes));
  cuda::DeviceBuffer a = cuda::DeviceBuffer::create(bytes), b = cuda::DeviceBuffer::create(bytes),
                     c = cuda::DeviceBuffer::create(bytes);
  cuda::DeviceBuffer sink = cuda::DeviceBuffer::create(sizeof(float) * 1 << 16);
  launch_fill_kernel(b.as<float>(), bytes / sizeof(float), 3, st.stream());
  launch_fill_kernel(c.as<float>(), bytes / sizeof(float), 5, st.stream());
  st.set_bytes_per_launch(probes::bytes_moved(op, bytes / static_cast<size_t>(width), static_cast<size_t>(width)));
  if (against_dram) st.compare_to_dram_peak();
  const int sms = sm_count(st.device());
  st.exec([&, op, width, sms, hint](cudaStream_t s) {
    GSQ_CUDA_CHECK(probes::launch_mem_op(op, width, a.get(), b.get(), c.get(), sink.as<float>(), bytes, sms, s, hint));
  });
}

// Reads of a buffer small enough to stay in the L2 between launches (batch mode only): the L2 ceiling, and the size
// at which the bandwidth falls to the HBM one.
void l2_read(State& st) {
  st.warm_cache_only();
  mem_op(st, MemOp::read, /*against_dram=*/false);  // L2-resident sizes beat the HBM ceiling by design
}

// `chunks` chunks of `bytes` each go host→device, through a compute kernel of about the same length, and back.
// serial: all on one stream. streams: chunk i on stream i % 3, so chunk i+1's upload overlaps chunk i's compute and
// chunk i-1's download. With pageable host memory the copies are synchronous for the host and cannot overlap.
void overlap_copy_compute(State& st) {
  const auto bytes = static_cast<size_t>(st.axis_int("bytes"));
  const auto chunks = static_cast<int>(st.axis_int("chunks"));
  const int iters = static_cast<int>(st.axis_int("fma_per_element"));
  const std::string& schedule = st.axis("schedule");
  const std::string& memory = st.axis("memory");
  if (schedule != "serial" && schedule != "streams") throw_bad_input("schedule=" + schedule + " (serial or streams)");
  if (chunks < 1 || chunks > 64) throw_bad_input(fmt::format("chunks={} (1..64)", chunks));
  const size_t total = bytes * static_cast<size_t>(chunks);
  HostMemory up = HostMemory::create(memory, total), down = HostMemory::create(memory, total);
  cuda::DeviceBuffer dev = cuda::DeviceBuffer::create(total);
  if (memory == "pageable") st.no_blocking_kernel();
  std::vector<cuda::Stream> streams;
  std::vector<cuda::Event> joins;
  for (int i = 0; i < 3; ++i) streams.push_back(cuda::Stream::create()), joins.push_back(cuda::Event::create());
  cuda::Event fork = cuda::Event::create();
  st.set_bytes_per_launch(2.0 * static_cast<double>(total));  // up and down
  st.compare_to_pcie_peak(2);
  const int sms = sm_count(st.device());
  const size_t n = bytes / sizeof(float);
  st.exec([&, schedule, sms](cudaStream_t s) {
    const bool pipelined = schedule == "streams";
    if (pipelined) GSQ_CUDA_CHECK(cudaEventRecord(fork.get(), s));
    for (int i = 0; i < chunks; ++i) {
      cudaStream_t cs = pipelined ? streams[static_cast<size_t>(i % 3)].get() : s;
      if (pipelined && i < 3) GSQ_CUDA_CHECK(cudaStreamWaitEvent(cs, fork.get(), 0));
      const size_t off = static_cast<size_t>(i) * bytes;
      char* d = static_cast<char*>(dev.get()) + off;
      GSQ_CUDA_CHECK(cudaMemcpyAsync(d, static_cast<char*>(up.get()) + off, bytes, cudaMemcpyHostToDevice, cs));
      GSQ_CUDA_CHECK(probes::launch_fma_chunk(reinterpret_cast<float*>(d), n, iters, sms, cs));
      GSQ_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(down.get()) + off, d, bytes, cudaMemcpyDeviceToHost, cs));
    }
    if (pipelined) {
      for (size_t k = 0; k < 3; ++k) {
        GSQ_CUDA_CHECK(cudaEventRecord(joins[k].get(), streams[k].get()));
        GSQ_CUDA_CHECK(cudaStreamWaitEvent(s, joins[k].get(), 0));
      }
    }
  });
}

void pcie_copy(State& st, cudaMemcpyKind kind) {
  const auto bytes = static_cast<size_t>(st.axis_int("bytes"));
  const std::string& memory = st.axis("memory");
  HostMemory host = HostMemory::create(memory, bytes);
  cuda::DeviceBuffer dev = cuda::DeviceBuffer::create(bytes);
  launch_fill_kernel(dev.as<float>(), bytes / sizeof(float), 9, st.stream());
  if (memory == "pageable") st.no_blocking_kernel();  // the driver blocks the host for pageable copies
  st.set_bytes_per_launch(static_cast<double>(bytes));
  st.compare_to_pcie_peak();
  void* dst = kind == cudaMemcpyHostToDevice ? dev.get() : host.get();
  const void* src = kind == cudaMemcpyHostToDevice ? host.get() : dev.get();
  st.exec([&](cudaStream_t s) { GSQ_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s)); });
}

void pcie_bidirectional(State& st) {
  const auto bytes = static_cast<size_t>(st.axis_int("bytes"));
  cuda::PinnedBuffer up = cuda::PinnedBuffer::create(bytes), down = cuda::PinnedBuffer::create(bytes);
  cuda::DeviceBuffer d_up = cuda::DeviceBuffer::create(bytes), d_down = cuda::DeviceBuffer::create(bytes);
  cuda::Stream other = cuda::Stream::create();
  cuda::Event fork = cuda::Event::create(), join = cuda::Event::create();
  st.set_bytes_per_launch(2.0 * static_cast<double>(bytes));
  st.compare_to_pcie_peak(2);
  // H2D on the timed stream and D2H on a second one, joined back, so both directions run at once.
  st.exec([&](cudaStream_t s) {
    GSQ_CUDA_CHECK(cudaEventRecord(fork.get(), s));
    GSQ_CUDA_CHECK(cudaStreamWaitEvent(other.get(), fork.get(), 0));
    GSQ_CUDA_CHECK(cudaMemcpyAsync(d_up.get(), up.get(), bytes, cudaMemcpyHostToDevice, s));
    GSQ_CUDA_CHECK(cudaMemcpyAsync(down.get(), d_down.get(), bytes, cudaMemcpyDeviceToHost, other.get()));
    GSQ_CUDA_CHECK(cudaEventRecord(join.get(), other.get()));
    GSQ_CUDA_CHECK(cudaStreamWaitEvent(s, join.get(), 0));
  });
}

const std::vector<std::string> kMemSizes{"16Mi", "64Mi", "256Mi", "1Gi", "4Gi"};
const std::vector<std::string> kPcieSizes{"4Ki", "64Ki", "1Mi", "16Mi", "256Mi"};

}  // namespace

Suite mem_suite() {
  const std::vector<std::string> widths{"4", "8", "16"};
  return {
      {"mem.read",
       "read-only stream (bytes read); variant: grid_stride (persistent grid, 4 in flight), flat (one access per "
       "thread, a block per 128; 70% of the grid-stride rate on the H200)",
       {{"bytes", kMemSizes}, {"width", widths}, {"variant", {"grid_stride", "flat"}}},
       [](State& st) { mem_op(st, MemOp::read); }},
      {"mem.write",
       "write-only stream (bytes written); variant: grid_stride, flat (78% of the grid-stride rate on the H200)",
       {{"bytes", kMemSizes}, {"width", widths}, {"variant", {"grid_stride", "flat"}}},
       [](State& st) { mem_op(st, MemOp::write); }},
      {"mem.copy",
       "a[i] = b[i] (read + write counted); variant: flat (one access per thread, a block per 128, no loop), "
       "grid_stride (persistent grid, 4 in flight), streaming (evict-first, 8 in flight), tiled (contiguous tiles per "
       "block, 8 in flight), bulk (12 KB tiles through shared memory by the TMA, sm_90+)",
       {{"bytes", kMemSizes}, {"width", widths}, {"variant", {"flat", "grid_stride", "streaming", "tiled", "bulk"}}},
       [](State& st) { mem_op(st, MemOp::copy); }},
      {"mem.triad",
       "a[i] = b[i] + s*c[i] (2 reads + 1 write); variant: flat (7% faster than grid_stride on the H200), "
       "grid_stride (2 in flight)",
       {{"bytes", kMemSizes}, {"width", widths}, {"variant", {"flat", "grid_stride"}}},
       [](State& st) { mem_op(st, MemOp::triad); }},
      {"mem.memcpy_d2d",
       "cudaMemcpyAsync device to device, the reference (read + write counted)",
       {{"bytes", kMemSizes}},
       memcpy_d2d},
  };
}

Suite l2_suite() {
  return {{"l2.read",
           "read-only, 16-byte accesses, data left in the L2 between launches (batch mode)",
           {{"bytes",
             {"2Mi", "4Mi", "8Mi", "16Mi", "24Mi", "32Mi", "40Mi", "48Mi", "56Mi", "64Mi", "96Mi", "128Mi", "256Mi",
              "1Gi"}},
            {"width", {"16"}}},
           l2_read}};
}

Suite overlap_suite() {
  return {{"overlap.copy_compute",
           "H2D + compute + D2H per chunk; serial on one stream vs over three streams; pinned vs pageable",
           {{"schedule", {"serial", "streams"}},
            {"memory", {"pinned", "pageable"}},
            {"bytes", {"16Mi"}},
            {"chunks", {"8"}},
            {"fma_per_element", {"4096"}}},
           overlap_copy_compute}};
}

Suite pcie_suite() {
  const std::vector<std::string> kinds{"pinned", "pageable"};
  return {
      {"pcie.h2d",
       "cudaMemcpyAsync host to device",
       {{"bytes", kPcieSizes}, {"memory", kinds}},
       [](State& st) { pcie_copy(st, cudaMemcpyHostToDevice); }},
      {"pcie.d2h",
       "cudaMemcpyAsync device to host",
       {{"bytes", kPcieSizes}, {"memory", kinds}},
       [](State& st) { pcie_copy(st, cudaMemcpyDeviceToHost); }},
      {"pcie.bidir",
       "both directions at once, pinned (bytes of both counted)",
       {{"bytes", kPcieSizes}},
       pcie_bidirectional},
  };
}

}  // namespace gsq::probes
