// A benchmark suite of your own against the harness's C++ API: declare axes, set up buffers, declare the bytes moved,
// hand the harness a launch function. The run has the same protocol, statistics and JSON as `gpusqueeze bench`, so
// `gpusqueeze compare` reads what this writes.
//   build/examples/custom_bench [OUT.json]
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "cuda/raii.hpp"

#include <cstdio>

namespace {

void memset_bench(gsq::bench::State& st) {
  const auto bytes = static_cast<size_t>(st.axis_int("bytes"));
  gsq::cuda::DeviceBuffer buf = gsq::cuda::DeviceBuffer::create(bytes);
  st.set_bytes_per_launch(static_cast<double>(bytes));  // write only
  st.compare_to_dram_peak();
  st.exec([&](cudaStream_t s) { GSQ_CUDA_CHECK(cudaMemsetAsync(buf.get(), 0x5A, bytes, s)); });
}

}  // namespace

int main(int argc, char** argv) {
  const gsq::bench::Suite suite{
      {"memset", "cudaMemsetAsync of a device buffer", {{"bytes", {"16Mi", "256Mi"}}}, memset_bench},
  };
  gsq::bench::RunOptions options;
  options.progress = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  try {
    const gsq::bench::Run run = gsq::bench::run_suite("example", suite, options);
    std::fputs(gsq::bench::render_markdown(run).c_str(), stdout);
    if (argc > 1) gsq::write_json_file(argv[1], gsq::bench::to_json(run, true));
  } catch (const gsq::Error& e) {
    std::fprintf(stderr, "custom_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return 0;
}
