// Suite runner: configurations, idle check, NVML clock probe, L2 flush buffer; and the bench JSON and printers.
#include "bench/runner.hpp"

#include "bench/turns.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/stats.hpp"
#include "core/table.hpp"
#include "cuda/device.hpp"
#include "cuda/raii.hpp"
#include "env/fingerprint.hpp"
#include "gpu/clock_events.hpp"
#include "gpu/collect.hpp"
#include "gpu/peaks.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <exception>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <tuple>

namespace gsq::bench {

namespace {

using nlohmann::json;

struct NvmlContext {
  gpu::Nvml nvml;
  uint32_t index;
  gpu::Snapshot snapshot;
};

std::optional<NvmlContext> open_nvml_for(int cuda_ordinal, std::string& why) {
  try {
    auto nvml = gpu::Nvml::open();
    gpu::Snapshot s = gpu::collect_snapshot(nvml);
    for (const auto& g : s.gpus) {
      if (g.pci_bus_id.ok() && cuda::cuda_ordinal_for_pci(*g.pci_bus_id) == cuda_ordinal) {
        const uint32_t index = g.index;
        return NvmlContext{std::move(nvml), index, std::move(s)};
      }
    }
    why = "no NVML device matches the CUDA device's PCI bus id";
  } catch (const Error& e) {
    why = e.what();
  }
  return std::nullopt;
}

void idle_check(const NvmlContext& ctx, bool allow_busy, const std::function<void(const std::string&)>& progress) {
  const auto& g = ctx.snapshot.gpus[ctx.index];
  std::vector<std::string> others;
  if (g.processes.ok()) {
    for (const auto& p : *g.processes)
      if (p.pid != static_cast<uint32_t>(::getpid()))
        others.push_back(fmt::format("pid {} {}", p.pid, p.name.empty() ? "?" : p.name));
  }
  const bool busy_util = g.utilization_gpu_pct.ok() && *g.utilization_gpu_pct > 10;
  if (others.empty() && !busy_util) return;
  std::string what;
  for (const auto& o : others) what += (what.empty() ? "" : ", ") + o;
  if (busy_util) what += fmt::format("{}utilization {}%", what.empty() ? "" : "; ", *g.utilization_gpu_pct);
  const std::string msg =
      fmt::format("GPU {} is busy ({}): a baseline on a shared GPU is not a baseline", g.index, what);
  if (!allow_busy) throw_bad_input(msg + "; stop those processes, pick another GPU, or pass --allow-busy");
  if (progress) progress("warning: " + msg + " (--allow-busy)");
}

// Pins the calling thread to one CPU near the GPU for its lifetime and restores the previous mask afterwards.
class CpuPin {
 public:
  CpuPin(const std::string& gpu_cpulist) {
    if (pthread_getaffinity_np(pthread_self(), sizeof old_, &old_) != 0) return;
    for (int c : host::parse_cpulist(gpu_cpulist)) {
      if (c < 0 || c >= CPU_SETSIZE || !CPU_ISSET(c, &old_)) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0) cpu_ = c;
      return;
    }
  }
  CpuPin(const CpuPin&) = delete;
  CpuPin& operator=(const CpuPin&) = delete;
  ~CpuPin() {
    if (cpu_ >= 0) pthread_setaffinity_np(pthread_self(), sizeof old_, &old_);
  }
  [[nodiscard]] int cpu() const noexcept { return cpu_; }

 private:
  cpu_set_t old_{};
  int cpu_ = -1;
};

json measurement_json(const Result& r, const Measurement& m, bool with_samples) {
  const Derived d = derive(r, m);
  json j{{"mode", m.mode},
         {"launches_per_sample", m.launches_per_sample},
         {"stop_reason", m.stop_reason},
         {"wall_s", m.wall_s},
         {"overhead_ns_per_sample", m.overhead_ns_per_sample},
         {"throttled_dropped", m.throttled_dropped},
         {"n", d.n},
         {"dropped", d.dropped},
         {"ns",
          {{"min", d.min},
           {"p50", d.p50},
           {"p90", d.p90},
           {"p99", d.p99},
           {"p999", d.p999},
           {"max", d.max},
           {"mean", d.mean},
           {"stdev", d.stdev},
           {"rel_noise", d.rel_noise}}},
         {"ci95_ns", {{"p50", {d.p50_lo, d.p50_hi}}, {"p99", {d.p99_lo, d.p99_hi}}}},
         {"throughput",
          {{"bytes_per_s", d.bytes_per_s},
           {"items_per_s", d.items_per_s},
           {"flops_per_s", d.flops_per_s},
           {"pct_of_peak", d.pct_of_peak}}}};
  if (!m.sm_clock_mhz.empty()) {
    std::vector<double> c(m.sm_clock_mhz.begin(), m.sm_clock_mhz.end());
    const auto s = stats::summarize(c);
    j["sm_clock_mhz"] = {{"min", s.min}, {"p50", s.p50}, {"max", s.max}};
  }
  if (with_samples) {
    j["samples_ns"] = m.samples_ns;
    j["throttled"] = m.throttled;
    j["sm_clock_samples_mhz"] = m.sm_clock_mhz;
  }
  return j;
}

}  // namespace

std::vector<std::map<std::string, std::string>> expand_axes(
    const std::vector<Axis>& axes, const std::map<std::string, std::vector<std::string>>& overrides, bool boundary) {
  std::vector<std::map<std::string, std::string>> out{{}};
  for (const auto& a : axes) {
    std::vector<std::string> values = a.values;
    if (const auto it = overrides.find(a.name); it != overrides.end()) values = it->second;
    if (boundary && values.size() > 2) values = {values.front(), values.back()};
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& partial : out)
      for (const auto& v : values) {
        auto m = partial;
        m[a.name] = v;
        next.push_back(std::move(m));
      }
    out = std::move(next);
  }
  return out;
}

void apply_set(const std::string& set, Settings& s) {
  if (set == "default" || set == "boundary") return;
  if (set == "stress") {
    s.min_samples = std::max<uint32_t>(s.min_samples, 1000);  // a P99 needs at least 1000 samples to mean anything
    s.max_seconds = std::max(s.max_seconds, 10.0);
    return;
  }
  if (set == "warmup") {
    s.first_calls = true;
    s.cold = s.batch = false;
    return;
  }
  throw_bad_input(fmt::format("unknown sample set '{}' (default, stress, boundary, warmup)", set));
}

std::string config_label(const Result& r) {
  std::string axes;
  for (const auto& [k, v] : r.axes) axes += fmt::format("{}{}={}", axes.empty() ? "" : ",", k, v);
  return axes.empty() ? r.name : fmt::format("{}[{}]", r.name, axes);
}

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
    idle_check(*nvml, o.allow_busy, o.progress);
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

json to_json(const Run& run, bool with_samples) {
  json results = json::array();
  for (const auto& r : run.results) {
    json jr{{"name", r.name},
            {"axes", r.axes},
            {"bytes_per_launch", r.bytes_per_launch},
            {"items_per_launch", r.items_per_launch},
            {"flops_per_launch", r.flops_per_launch},
            {"peak_bytes_per_s", r.peak_bytes_per_s},
            {"peak_name", r.peak_name},
            {"skipped", r.skipped}};
    jr["measurements"] = json::array();
    for (const auto& m : r.measurements) jr["measurements"].push_back(measurement_json(r, m, with_samples));
    results.push_back(std::move(jr));
  }
  const auto& s = run.settings;
  return json{{"schema", kBenchSchema},
              {"suite", run.suite},
              {"created_at", run.created_at},
              {"tool_version", run.tool_version},
              {"gpu", {{"name", run.gpu_name}, {"uuid", run.gpu_uuid}, {"l2_cache_bytes", run.l2_cache_bytes}}},
              {"fingerprint", run.fingerprint},
              {"env_fields", run.env_fields},
              {"set", run.set},
              {"settings",
               {{"warmup_launches", s.warmup_launches},
                {"warmup_seconds", s.warmup_seconds},
                {"min_samples", s.min_samples},
                {"max_samples", s.max_samples},
                {"min_seconds", s.min_seconds},
                {"max_seconds", s.max_seconds},
                {"target_rel_ci", s.target_rel_ci},
                {"batch_target_ms", s.batch_target_ms},
                {"keep_throttled", s.keep_throttled},
                {"throttle_clock_ratio", s.throttle_clock_ratio},
                {"interleave", s.interleave},
                {"pinned_cpu", run.pinned_cpu}}},
              {"results", results}};
}

Run run_from_json(const json& j, const std::string& origin) {
  Run run;
  try {
    run.suite = j.at("suite").get<std::string>();
    run.created_at = j.at("created_at").get<std::string>();
    run.tool_version = j.value("tool_version", "");
    run.gpu_name = j.at("gpu").at("name").get<std::string>();
    run.gpu_uuid = j.at("gpu").value("uuid", "");
    run.l2_cache_bytes = j.at("gpu").value("l2_cache_bytes", uint64_t{0});
    run.fingerprint = j.at("fingerprint").get<std::string>();
    run.env_fields = j.at("env_fields").get<std::map<std::string, std::string>>();
    run.set = j.value("set", "default");
    if (j.contains("settings")) run.settings.interleave = j.at("settings").value("interleave", false);
    size_t index = 0;
    for (const auto& jr : j.at("results")) {
      Result r;
      r.name = jr.at("name").get<std::string>();
      r.axes = jr.at("axes").get<std::map<std::string, std::string>>();
      r.bytes_per_launch = jr.at("bytes_per_launch").get<double>();
      r.items_per_launch = jr.at("items_per_launch").get<double>();
      r.flops_per_launch = jr.at("flops_per_launch").get<double>();
      r.peak_bytes_per_s = jr.at("peak_bytes_per_s").get<double>();
      r.peak_name = jr.value("peak_name", "");
      r.skipped = jr.value("skipped", "");
      for (const auto& jm : jr.at("measurements")) {
        Measurement m;
        m.mode = jm.at("mode").get<std::string>();
        m.launches_per_sample = jm.at("launches_per_sample").get<uint32_t>();
        m.stop_reason = jm.at("stop_reason").get<std::string>();
        m.wall_s = jm.at("wall_s").get<double>();
        m.overhead_ns_per_sample = jm.at("overhead_ns_per_sample").get<double>();
        m.throttled_dropped = jm.at("throttled_dropped").get<bool>();
        if (jm.contains("samples_ns")) {
          m.samples_ns = jm.at("samples_ns").get<std::vector<double>>();
          m.throttled = jm.at("throttled").get<std::vector<uint8_t>>();
          m.sm_clock_mhz = jm.at("sm_clock_samples_mhz").get<std::vector<uint32_t>>();
          if (m.throttled.size() != m.samples_ns.size()) {
            throw_bad_input(fmt::format("{}: results[{}] {}: {} samples but {} throttle flags", origin, index, m.mode,
                                        m.samples_ns.size(), m.throttled.size()));
          }
        }
        r.measurements.push_back(std::move(m));
      }
      run.results.push_back(std::move(r));
      ++index;
    }
  } catch (const json::exception& e) {
    throw_bad_input(fmt::format("{}: not a valid {} document: {}", origin, kBenchSchema, e.what()));
  }
  return run;
}

Run load_run(const std::filesystem::path& file) {
  return run_from_json(read_json_file(file, kBenchSchema), file.string());
}

namespace {
std::string human_ns(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.2f} µs", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}
std::string throughput(const Result& r, const Derived& d) {
  if (r.bytes_per_launch > 0) {
    std::string s = fmt::format("{:.1f} GB/s", d.bytes_per_s / 1e9);
    if (d.pct_of_peak > 0) s += fmt::format(" ({:.1f}% of {})", d.pct_of_peak, r.peak_name);
    return s;
  }
  if (r.flops_per_launch > 0) return fmt::format("{:.1f} TFLOP/s", d.flops_per_s / 1e12);
  if (r.items_per_launch > 0) return fmt::format("{:.2f} M items/s", d.items_per_s / 1e6);
  return "";
}
}  // namespace

Table results_table(const Run& run) {
  Table t{{"benchmark", "mode", "n", "P50", "P50 95% CI", "P90", "P99", "max", "noise", "throughput", "stop"}, {}};
  for (const auto& r : run.results) {
    if (!r.skipped.empty()) {
      t.rows.push_back({config_label(r), "skipped", "", "", "", "", "", "", "", r.skipped, ""});
      continue;
    }
    for (const auto& m : r.measurements) {
      const Derived d = derive(r, m);
      const std::string mode = m.launches_per_sample > 1 ? fmt::format("{}×{}", m.mode, m.launches_per_sample) : m.mode;
      t.rows.push_back({config_label(r), mode,
                        d.dropped ? fmt::format("{} (-{} throttled)", d.n, d.dropped) : std::to_string(d.n),
                        human_ns(d.p50), fmt::format("{}–{}", human_ns(d.p50_lo), human_ns(d.p50_hi)), human_ns(d.p90),
                        human_ns(d.p99), human_ns(d.max), fmt::format("{:.2f}%", 100 * d.rel_noise), throughput(r, d),
                        m.stop_reason});
    }
  }
  return t;
}

std::string render_markdown(const Run& run) {
  return fmt::format("suite {} on {} (fingerprint {}, set {})\n\n{}", run.suite, run.gpu_name, run.fingerprint, run.set,
                     results_table(run).markdown());
}

std::vector<Ceiling> ceilings(const Run& run) {
  std::map<std::string, Ceiling> best;
  for (const auto& r : run.results) {
    if (r.bytes_per_launch <= 0) continue;
    for (const auto& m : r.measurements) {
      const Derived d = derive(r, m);
      // Without an L2 flush between launches, data that fits the L2 is served from it: that is the L2's ceiling, not
      // the one the benchmark declared.
      const bool l2 = r.peak_name == "theoretical HBM" && m.mode != "cold" && run.l2_cache_bytes > 0 &&
                      r.bytes_per_launch <= static_cast<double>(run.l2_cache_bytes);
      const std::string name = l2 ? r.name + " (L2-resident)" : r.name;
      auto& b = best[name];
      if (d.bytes_per_s > b.bytes_per_s) {
        b = {name, config_label(r) + " " + m.mode, l2 ? "" : r.peak_name, d.bytes_per_s, l2 ? 0 : r.peak_bytes_per_s};
      }
    }
  }
  std::vector<Ceiling> out;
  for (auto& [name, c] : best) out.push_back(std::move(c));
  return out;
}

Table ceilings_table(const Run& run) {
  Table t{{"ceiling", "best measured", "where", "theoretical", "of theoretical"}, {}};
  for (const auto& c : ceilings(run)) {
    t.rows.push_back(
        {c.name, fmt::format("{:.1f} GB/s", c.bytes_per_s / 1e9), c.where,
         c.peak_bytes_per_s > 0 ? fmt::format("{:.1f} GB/s ({})", c.peak_bytes_per_s / 1e9, c.peak_name) : "",
         c.peak_bytes_per_s > 0 ? fmt::format("{:.1f}%", 100 * c.bytes_per_s / c.peak_bytes_per_s) : ""});
  }
  // The best mem.copy variant (16-byte accesses) against cudaMemcpy, first (cold) mode, at every size both ran that
  // is past four L2s (smaller copies are partly served by what the flush leaves): the "≥ 1.00×" test, one
  // row a size, smallest first, because the verdict can differ between sizes (on the H200 the flat copy is ahead at
  // 1 GiB and 0.2% behind at 4 GiB).
  auto first_rate = [](const Result& r) {
    return r.measurements.empty() ? 0.0 : derive(r, r.measurements[0]).bytes_per_s;
  };
  std::map<double, const Result*> copy_by_size;
  for (const auto& r : run.results) {
    if (r.name != "mem.copy" || !r.axes.count("width") || r.axes.at("width") != "16" || r.measurements.empty())
      continue;
    const Result*& best_copy = copy_by_size[r.bytes_per_launch];
    if (!best_copy || first_rate(r) > first_rate(*best_copy)) best_copy = &r;
  }
  for (const auto& [bytes, copy] : copy_by_size) {
    if (run.l2_cache_bytes > 0 && bytes <= 4.0 * static_cast<double>(run.l2_cache_bytes)) continue;
    const Result* ref = nullptr;
    for (const auto& r : run.results)
      if (r.name == "mem.memcpy_d2d" && !r.measurements.empty() && r.axes.count("bytes") &&
          r.axes.at("bytes") == copy->axes.at("bytes"))
        ref = &r;
    if (!ref) continue;
    const double a = first_rate(*copy), b = first_rate(*ref);
    // Four decimals: the test is against 1, and the two are often within a tenth of a percent.
    t.rows.push_back({"mem.copy / cudaMemcpy", fmt::format("{:.4f}×", b > 0 ? a / b : 0),
                      fmt::format("bytes={}, width=16{}, {}{}", copy->axes.at("bytes"),
                                  copy->axes.count("variant") ? ", variant=" + copy->axes.at("variant") : "",
                                  copy->measurements[0].mode, run.settings.interleave ? ", interleaved" : ""),
                      "", ""});
  }
  if (t.rows.empty()) t.rows.push_back({"(no benchmark declares bytes)", "", "", "", ""});
  return t;
}

std::string render_csv(const Run& run) {
  std::string csv =
      "benchmark,mode,launches_per_sample,n,dropped,p50_ns,p50_lo_ns,p50_hi_ns,p90_ns,p99_ns,p99_lo_ns,p99_hi_ns,max_"
      "ns,"
      "rel_noise,bytes_per_s,flops_per_s,items_per_s,pct_of_peak,stop_reason\n";
  for (const auto& r : run.results) {
    for (const auto& m : r.measurements) {
      const Derived d = derive(r, m);
      csv += fmt::format(
          "\"{}\",{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.5f},{:.4g},{:.4g},{:.4g},{:."
          "2f},{}\n",
          config_label(r), m.mode, m.launches_per_sample, d.n, d.dropped, d.p50, d.p50_lo, d.p50_hi, d.p90, d.p99,
          d.p99_lo, d.p99_hi, d.max, d.rel_noise, d.bytes_per_s, d.flops_per_s, d.items_per_s, d.pct_of_peak,
          m.stop_reason);
    }
  }
  return csv;
}

}  // namespace gsq::bench
