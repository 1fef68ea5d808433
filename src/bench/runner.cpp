// The runner: a suite's configurations timed on one GPU (idle check, CPU pin, throttle rule, one after the other or
// taking turns), and the statistics derived from a measurement.
#include "bench/runner.hpp"

#include "bench/environment.hpp"
#include "bench/turns.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "cuda/raii.hpp"
#include "env/fingerprint.hpp"
#include "gpu/clock_events.hpp"
#include "gpu/collect.hpp"
#include "gpu/peaks.hpp"

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <optional>
#include <regex>
#include <thread>
#include <tuple>

namespace gsq::bench {

using detail::CpuPin;
using detail::idle_check;
using detail::open_nvml_for;
using nlohmann::json;

Derived derive(const Result& r, const Measurement& m) {
  Derived d;
  const auto kept = m.kept();
  d.n = kept.size();
  d.dropped = m.samples_ns.size() - kept.size();
  if (kept.empty()) return d;
  const auto s = stats::summarize(kept);
  d.min = s.min, d.p50 = s.p50, d.p90 = s.p90, d.p99 = s.p99, d.p999 = s.p999, d.max = s.max, d.mean = s.mean;
  d.stdev = s.stdev, d.rel_noise = s.rel_noise;
  const auto c50 = stats::bootstrap_quantile_ci(kept, 0.5, 0.95, 1000);
  const auto c99 = stats::bootstrap_quantile_ci(kept, 0.99, 0.95, 1000);
  d.p50_lo = c50.lo, d.p50_hi = c50.hi, d.p99_lo = c99.lo, d.p99_hi = c99.hi;
  const double sec = d.p50 * 1e-9;
  if (sec > 0) {
    d.bytes_per_s = r.bytes_per_launch / sec;
    d.items_per_s = r.items_per_launch / sec;
    d.flops_per_s = r.flops_per_launch / sec;
    if (r.peak_bytes_per_s > 0) d.pct_of_peak = 100.0 * d.bytes_per_s / r.peak_bytes_per_s;
  }
  return d;
}

Run run_suite(const std::string& suite_name, const Suite& suite, const RunOptions& o) {
  Run run;
  run.suite = suite_name;
  run.created_at = gpu::utc_now_iso8601();
  run.tool_version = GSQ_VERSION_STRING;
  run.settings = o.settings;
  run.set = o.set;
  apply_set(o.set, run.settings);

  std::vector<const Benchmark*> selected;
  const std::regex re(o.filter.empty() ? ".*" : o.filter);
  for (const auto& b : suite)
    if (std::regex_search(b.name, re)) selected.push_back(&b);
  if (selected.empty()) throw_bad_input(fmt::format("no benchmark in suite {} matches '{}'", suite_name, o.filter));
  for (const auto& entry : o.overrides) {
    const std::string& name = entry.first;  // a named reference: lambdas cannot capture structured bindings in C++20
    const bool known = std::any_of(selected.begin(), selected.end(), [&](const Benchmark* b) {
      return std::any_of(b->axes.begin(), b->axes.end(), [&](const Axis& a) { return a.name == name; });
    });
    if (!known) throw_bad_input(fmt::format("-a {}=...: no selected benchmark has an axis '{}'", name, name));
  }

  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    const bool driver = std::filesystem::exists("/proc/driver/nvidia/version");
    throw_no_gpu(fmt::format("no NVIDIA GPU: CUDA reports {}{}", e == cudaSuccess ? "no device" : cudaGetErrorString(e),
                             driver ? "" : " (no NVIDIA driver is loaded on this machine)"));
  }
  if (o.device < 0 || o.device >= count)
    throw_bad_input(fmt::format("--device {}: CUDA sees {} device(s)", o.device, count));
  GSQ_CUDA_CHECK(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  GSQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  run.gpu_name = prop.name;
  run.l2_cache_bytes = static_cast<uint64_t>(prop.l2CacheSize);

  std::string why;
  auto nvml = open_nvml_for(o.device, why);
  Peaks peaks;
  if (nvml) {
    const auto& g = nvml->snapshot.gpus[nvml->index];
    idle_check(*nvml, o.allow_busy, o.progress, o.own_utilization);
    run.env_fields = env::locked_fields(nvml->snapshot);
    run.fingerprint = env::fingerprint(run.env_fields);
    run.gpu_uuid = g.uuid.ok() ? *g.uuid : "";
    if (g.mem_clock_max_mhz.ok() && g.memory_bus_width_bits.ok()) {
      peaks.dram_bytes_per_s = gpu::dram_peak_bytes_per_s(*g.mem_clock_max_mhz, *g.memory_bus_width_bits);
    }
    if (g.pcie_gen_max.ok() && g.pcie_width_max.ok())
      peaks.pcie_bytes_per_s = gpu::pcie_peak_bytes_per_s(*g.pcie_gen_max, *g.pcie_width_max);
  } else {
    run.fingerprint = "unavailable";
    if (o.progress) o.progress("NVML unavailable (" + why + "): no clocks per sample, no idle check, no fingerprint");
  }

  cuda::Stream stream = cuda::Stream::create();
  const size_t flush_bytes = 2 * static_cast<size_t>(std::max(prop.l2CacheSize, 1 << 20));
  cuda::DeviceBuffer flush = cuda::DeviceBuffer::create(flush_bytes);
  GSQ_CUDA_CHECK(cudaMemset(flush.get(), 0, flush_bytes));  // the flush kernel reads it; see launch_l2_flush
  auto probe = [&](uint32_t& mhz, uint8_t& slow) {
    if (!nvml) return;
    const auto r = gpu::read_clock(nvml->nvml, nvml->index);
    if (r.sm_clock_mhz.ok()) mhz = *r.sm_clock_mhz;
    if (r.clock_event_reasons_mask.ok()) slow = (*r.clock_event_reasons_mask & gpu::clock_events::kThrottles) ? 1 : 0;
  };

  std::string pin_cpus;  // where the launching thread runs: one CPU of the GPU's NUMA affinity, empty = not pinned
  if (run.settings.pin_cpu && nvml && nvml->snapshot.gpus[nvml->index].cpu_affinity.ok())
    pin_cpus = *nvml->snapshot.gpus[nvml->index].cpu_affinity;
  struct Config {
    const Benchmark* benchmark;
    std::map<std::string, std::string> axes;
  };
  std::vector<Config> configs;
  for (const Benchmark* b : selected)
    for (auto& axes : expand_axes(b->axes, o.overrides, o.set == "boundary")) configs.push_back({b, std::move(axes)});
  auto make_state = [&](const Config& c) {
    auto st =
        std::make_unique<State>(run.settings, c.axes, stream.get(), o.device, probe, flush.get(), flush_bytes, peaks);
    st->result().name = c.benchmark->name;
    return st;
  };
  auto measure = [&](const Config& c, State& st) {
    if (o.progress) o.progress("running " + config_label(st.result()));
    c.benchmark->run(st);
    GSQ_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  };

  if (!run.settings.interleave || configs.size() < 2) {
    std::optional<CpuPin> pin;
    if (!pin_cpus.empty()) pin.emplace(pin_cpus), run.pinned_cpu = pin->cpu();
    for (const Config& c : configs) {
      auto st = make_state(c);
      measure(c, *st);
      run.results.push_back(st->take_result());
    }
    return run;
  }

  // Interleaved: every configuration is set up at once, each on its own thread, and they take turns on the one
  // stream, one sample at a time (Turns). The first failure stops the others at their next sample.
  std::vector<std::unique_ptr<State>> states;
  for (const Config& c : configs) states.push_back(make_state(c));
  Turns turns(configs.size());
  struct Stopped {};           // thrown into the other configurations once one has failed
  std::exception_ptr failure;  // written only by the thread holding the turn
  std::vector<std::thread> threads;
  threads.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    threads.emplace_back([&, i] {
      turns.wait(i);
      try {
        if (failure) throw Stopped{};
        GSQ_CUDA_CHECK(cudaSetDevice(o.device));  // the current device is per thread
        std::optional<CpuPin> pin;
        if (!pin_cpus.empty()) pin.emplace(pin_cpus), run.pinned_cpu = pin->cpu();
        states[i]->between_samples([&, i] {
          const double waited = turns.yield(i);
          if (failure) throw Stopped{};
          return waited;
        });
        measure(configs[i], *states[i]);
      } catch (const Stopped&) {
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
      turns.leave(i);
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  for (auto& st : states) run.results.push_back(st->take_result());
  return run;
}

}  // namespace gsq::bench
