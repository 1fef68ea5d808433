// Jitter analysis over sampled NVML readings and over a bench run's raw samples (see jitter.hpp).
#include "triage/jitter.hpp"

#include "gpu/clock_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gsq::triage {

namespace {

namespace ce = gpu::clock_events;

struct Series {
  const std::vector<int64_t>* t = nullptr;
  const std::vector<double>* v = nullptr;
  [[nodiscard]] bool ok() const { return t && v && !t->empty() && t->size() == v->size(); }
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::optional<double> info_number(const nlohmann::json& info, const char* key) {
  if (info.is_object() && info.contains(key) && info[key].is_number()) return info[key].get<double>();
  return std::nullopt;
}

// Fraction of [first, last] the counter advanced: Σ positive increments / elapsed time (a driver reload resets it).
std::optional<double> counter_fraction(const Series& s) {
  if (!s.ok() || s.t->size() < 2) return std::nullopt;
  double held = 0;
  for (size_t i = 1; i < s.v->size(); ++i) held += std::max(0.0, (*s.v)[i] - (*s.v)[i - 1]);
  const double wall = static_cast<double>(s.t->back() - s.t->front());
  return wall > 0 ? std::clamp(held / wall, 0.0, 1.0) : std::optional<double>{};
}

// Fraction of time each reason bit was set: each sample's mask stands for the interval that ends at it.
std::map<uint64_t, double> bitmask_fractions(const Series& s) {
  std::map<uint64_t, double> out;
  if (!s.ok() || s.t->size() < 2) return out;
  const double wall = static_cast<double>(s.t->back() - s.t->front());
  if (wall <= 0) return out;
  for (size_t i = 1; i < s.t->size(); ++i) {
    const auto mask = static_cast<uint64_t>((*s.v)[i]);
    const double dt = static_cast<double>((*s.t)[i] - (*s.t)[i - 1]);
    for (const auto& [bit, name] : ce::kNames)
      if (mask & bit) out[bit] += dt / wall;
  }
  return out;
}

Finding make(const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix,
             std::string subject) {
  return make_finding(
      id, sev, std::move(title), std::move(ev), std::move(fix),
      "NVML clock-event reasons and their cumulative counters (nvml.h, NVML_FI_DEV_CLOCKS_EVENT_REASON_*)", 0,
      std::move(subject));
}

std::string pct(double r) {
  return fmt::format("{:.1f}%", 100 * r);
}

double share(const GpuJitter& g, std::initializer_list<std::string_view> names) {
  double s = 0;
  for (const auto& r : g.reasons)
    for (auto n : names)
      if (r.reason == n) s += r.fraction;
  return std::min(s, 1.0);
}

void findings_for(const GpuJitter& g, std::vector<Finding>& out) {
  const std::string subject = fmt::format("GPU {} ({})", g.device, g.name.empty() ? "?" : g.name);
  const double thermal = share(g, {"sw_thermal_slowdown", "hw_thermal_slowdown"});
  if (thermal >= 0.01) {
    std::vector<Evidence> ev{{"thermal_slowdown_time", pct(thermal)}};
    if (g.temperature_max_c) ev.push_back({"temperature_max", fmt::format("{:.0f} °C", *g.temperature_max_c)});
    if (g.temperature_slowdown_c)
      ev.push_back({"slowdown_threshold", fmt::format("{:.0f} °C", *g.temperature_slowdown_c)});
    out.push_back(make("thermal-slowdown", thermal >= 0.05 ? Severity::fail : Severity::warn,
                       fmt::format("The clock was held down for temperature {} of the time", pct(thermal)),
                       std::move(ev),
                       "Cooling, not software: inlet temperature and airflow of the chassis, blanking panels, fan "
                       "policy of the BMC; compare with a GPU of the same node. Locking clocks lower (tune) trades "
                       "peak for steadiness — measure both with bench",
                       subject));
  }
  const double hw = share(g, {"hw_slowdown", "hw_power_brake_slowdown"});
  if (hw >= 0.01)
    out.push_back(
        make("hardware-slowdown", Severity::fail,
             fmt::format("Hardware slowdown or an external power brake held the clock down {} of the time", pct(hw)),
             {{"hw_slowdown_time", pct(hw)}},
             "A board or system signal (power supply, power brake, over-current): check the server's power "
             "delivery and BMC logs; doctor and nvidia-smi -q show which",
             subject));
  const double power = share(g, {"sw_power_cap"});
  if (power >= 0.05) {
    std::vector<Evidence> ev{{"power_capped_time", pct(power)}};
    if (g.power_max_w) ev.push_back({"power_max", fmt::format("{:.0f} W", *g.power_max_w)});
    if (g.power_limit_w) ev.push_back({"power_limit", fmt::format("{:.0f} W", *g.power_limit_w)});
    out.push_back(make("power-capped", power >= 0.5 ? Severity::warn : Severity::info,
                       fmt::format("The power limit set the clock {} of the time", pct(power)), std::move(ev),
                       "Expected for dense compute at the board's limit: the clock follows power. For steadier "
                       "latency, lock the SM clock below the boost clock (nvidia-smi -lgc, or a tune profile) and "
                       "compare P99 and throughput with bench; on data-center GPUs there is no 'Dynamic Boost' to set "
                       "through nvidia-settings",
                       subject));
  }
  if (g.sm_clock_p5_mhz && g.sm_clock_p50_mhz && g.busy_samples >= 10 &&
      *g.sm_clock_p5_mhz < 0.95 * *g.sm_clock_p50_mhz) {
    std::vector<Evidence> ev{{"sm_clock_busy_p5", fmt::format("{:.0f} MHz", *g.sm_clock_p5_mhz)},
                             {"sm_clock_busy_p50", fmt::format("{:.0f} MHz", *g.sm_clock_p50_mhz)}};
    for (const auto& r : g.reasons)
      if (r.fraction >= 0.01 && r.reason != "gpu_idle") ev.push_back({r.reason, pct(r.fraction)});
    out.push_back(make("clock-unstable", Severity::warn,
                       fmt::format("The SM clock while busy spread from {:.0f} to {:.0f} MHz (P5 to P50)",
                                   *g.sm_clock_p5_mhz, *g.sm_clock_p50_mhz),
                       std::move(ev),
                       "The reasons above say why; latency P99 follows the slow end. Lock clocks (tune) if steadiness "
                       "matters more than peak, and time with gpusqueeze bench, which flags throttled samples",
                       subject));
  }
  if (g.memory_temperature_max_c && g.memory_temperature_limit_c &&
      *g.memory_temperature_max_c >= *g.memory_temperature_limit_c - 5)
    out.push_back(make("hot-memory", Severity::warn,
                       fmt::format("HBM reached {:.0f} °C, within 5 °C of its {:.0f} °C limit",
                                   *g.memory_temperature_max_c, *g.memory_temperature_limit_c),
                       {{"memory_temperature_max", fmt::format("{:.0f} °C", *g.memory_temperature_max_c)},
                        {"memory_temperature_limit", fmt::format("{:.0f} °C", *g.memory_temperature_limit_c)}},
                       "Memory-bound work heats HBM before the GPU die: check airflow over the module; sw thermal "
                       "slowdown acts on memory temperature too",
                       subject));
}

}  // namespace

void write_jitter_trace(const std::filesystem::path& file, const std::string& command, int64_t start_monotonic_ns,
                        int64_t start_realtime_ns, int exit_code, const std::vector<nlohmann::json>& payloads) {
  // start.cupti_ns = start.monotonic_ns: the counters' monotonic timestamps need no shift.
  const nlohmann::json header{
      {"schema", trace::kSchema},
      {"command", command},
      {"clock", "CLOCK_MONOTONIC (ns): counter tracks only, no CUPTI records"},
      {"start",
       {{"cupti_ns", start_monotonic_ns}, {"monotonic_ns", start_monotonic_ns}, {"realtime_ns", start_realtime_ns}}},
      {"status", "counters-only"},
      {"record_bytes", sizeof(trace::Record)}};
  {
    trace::Writer w(file, header);
    w.write_end({{"ended_by", "gpusqueeze jitter"}, {"exit_code", exit_code}});
  }
  for (const auto& p : payloads) trace::append_counters(file, p);
}

JitterReport analyze_jitter(const trace::TraceFile& t) {
  JitterReport r;
  r.origin = t.path.string();
  std::map<uint32_t, std::map<std::string, Series>> by_gpu;
  std::map<uint32_t, const trace::CounterTrack*> any;
  for (const auto& c : t.counters) {
    by_gpu[c.device][c.name] = {&c.t_ns, &c.values};
    any[c.device] = &c;
  }
  for (auto& [dev, tracks] : by_gpu) {
    const Series clock = tracks["sm_clock"], temp = tracks["temperature"], mask = tracks["clock_event_reasons"];
    if (!clock.ok() && !temp.ok()) continue;
    GpuJitter g;
    g.device = dev;
    g.name = any[dev]->device_name;
    const auto& info = any[dev]->device_info;
    const Series& base = clock.ok() ? clock : temp;
    g.samples = base.t->size();
    g.duration_s = static_cast<double>(base.t->back() - base.t->front()) / 1e9;
    if (clock.ok()) {
      std::vector<double> busy;
      for (size_t i = 0; i < clock.v->size(); ++i) {
        const bool idle = mask.ok() && i < mask.v->size() && (static_cast<uint64_t>((*mask.v)[i]) & ce::kGpuIdle);
        if (!idle) busy.push_back((*clock.v)[i] / 1e6);
      }
      g.busy_samples = busy.size();
      if (!busy.empty()) {
        g.sm_clock_min_mhz = *std::min_element(busy.begin(), busy.end());
        g.sm_clock_max_mhz = *std::max_element(busy.begin(), busy.end());
        g.sm_clock_p5_mhz = quantile(busy, 0.05);
        g.sm_clock_p50_mhz = quantile(busy, 0.5);
      }
    }
    if (const Series m = tracks["mem_clock"]; m.ok()) {
      g.mem_clock_min_mhz = *std::min_element(m.v->begin(), m.v->end()) / 1e6;
      g.mem_clock_max_mhz = *std::max_element(m.v->begin(), m.v->end()) / 1e6;
    }
    if (temp.ok()) {
      g.temperature_start_c = temp.v->front();
      g.temperature_end_c = temp.v->back();
      g.temperature_max_c = *std::max_element(temp.v->begin(), temp.v->end());
      // Least-squares slope over the samples, °C per minute.
      // A trend needs a minute or more: over seconds a GEMM's warm-up would read as degrees per minute.
      const size_t n = temp.v->size();
      if (n >= 2 && g.duration_s >= 60) {
        double st = 0, sv = 0, stt = 0, stv = 0;
        for (size_t i = 0; i < n; ++i) {
          const double x = static_cast<double>((*temp.t)[i] - temp.t->front()) / 60e9, y = (*temp.v)[i];
          st += x, sv += y, stt += x * x, stv += x * y;
        }
        const double den = static_cast<double>(n) * stt - st * st;
        if (den > 0) g.temperature_slope_c_per_min = (static_cast<double>(n) * stv - st * sv) / den;
      }
    }
    if (const Series m = tracks["memory_temperature"]; m.ok())
      g.memory_temperature_max_c = *std::max_element(m.v->begin(), m.v->end());
    if (const Series p = tracks["power"]; p.ok()) {
      double sum = 0;
      for (double w : *p.v) sum += w;
      g.power_mean_w = sum / static_cast<double>(p.v->size());
      g.power_max_w = *std::max_element(p.v->begin(), p.v->end());
    }
    g.temperature_slowdown_c = info_number(info, "temperature_slowdown_c");
    g.memory_temperature_limit_c = info_number(info, "memory_temperature_max_c");
    g.power_limit_w = info_number(info, "power_limit_w");
    // Shares: NVML's cumulative counters where they were sampled, else the reasons seen at each sample.
    const std::pair<const char*, const char*> counters[] = {
        {"throttle_sw_power_cap", "sw_power_cap"},
        {"throttle_sw_thermal_slowdown", "sw_thermal_slowdown"},
        {"throttle_hw_thermal_slowdown", "hw_thermal_slowdown"},
        {"throttle_hw_power_brake_slowdown", "hw_power_brake_slowdown"},
        {"throttle_sync_boost", "sync_boost"}};
    std::map<std::string, ReasonShare> shares;
    for (const auto& [bit, f] : bitmask_fractions(mask))
      for (const auto& [b, name] : ce::kNames)
        if (b == bit && f > 0) shares[std::string(name)] = {std::string(name), f, "bitmask"};
    for (const auto& [track, reason] : counters)
      if (const auto f = counter_fraction(tracks[track])) shares[reason] = {reason, *f, "counter"};
    for (auto& [name, s] : shares)
      if (s.fraction > 0) g.reasons.push_back(s);
    std::sort(g.reasons.begin(), g.reasons.end(),
              [](const ReasonShare& a, const ReasonShare& b) { return a.fraction > b.fraction; });
    findings_for(g, r.findings);
    r.gpus.push_back(std::move(g));
  }
  return r;
}

nlohmann::json to_json(const JitterReport& r) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : r.gpus) {
    nlohmann::json reasons = nlohmann::json::array();
    for (const auto& s : g.reasons)
      reasons.push_back({{"reason", s.reason}, {"fraction", s.fraction}, {"source", s.source}});
    gpus.push_back(
        {{"device", g.device},
         {"name", g.name},
         {"duration_s", g.duration_s},
         {"samples", g.samples},
         {"busy_samples", g.busy_samples},
         {"sm_clock_mhz",
          {{"min", opt(g.sm_clock_min_mhz)},
           {"p5", opt(g.sm_clock_p5_mhz)},
           {"p50", opt(g.sm_clock_p50_mhz)},
           {"max", opt(g.sm_clock_max_mhz)}}},
         {"mem_clock_mhz", {{"min", opt(g.mem_clock_min_mhz)}, {"max", opt(g.mem_clock_max_mhz)}}},
         {"temperature_c",
          {{"start", opt(g.temperature_start_c)},
           {"end", opt(g.temperature_end_c)},
           {"max", opt(g.temperature_max_c)},
           {"slope_per_min", opt(g.temperature_slope_c_per_min)},
           {"slowdown_threshold", opt(g.temperature_slowdown_c)}}},
         {"memory_temperature_c",
          {{"max", opt(g.memory_temperature_max_c)}, {"limit", opt(g.memory_temperature_limit_c)}}},
         {"power_w", {{"mean", opt(g.power_mean_w)}, {"max", opt(g.power_max_w)}, {"limit", opt(g.power_limit_w)}}},
         {"throttled", reasons}});
  }
  return {{"schema", kJitterSchema}, {"origin", r.origin}, {"gpus", gpus}, {"findings", r.findings}};
}

BenchJitter bench_outliers(const nlohmann::json& run) {
  BenchJitter out;
  for (const auto& res : run.value("results", nlohmann::json::array())) {
    std::string config = res.value("name", "?");
    if (res.contains("axes") && res["axes"].is_object() && !res["axes"].empty()) {
      std::string axes;
      for (const auto& [k, v] : res["axes"].items())
        axes += (axes.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
      config += "[" + axes + "]";
    }
    for (const auto& m : res.value("measurements", nlohmann::json::array())) {
      if (!m.contains("samples_ns") || !m["samples_ns"].is_array() || m["samples_ns"].size() < 100) continue;
      const auto samples = m["samples_ns"].get<std::vector<double>>();
      std::vector<int> flagged(samples.size(), 0);
      if (m.contains("throttled") && m["throttled"].is_array() && m["throttled"].size() == samples.size())
        for (size_t i = 0; i < samples.size(); ++i) flagged[i] = m["throttled"][i].get<int>() != 0;
      if (m.contains("sm_clock_samples_mhz") && m["sm_clock_samples_mhz"].is_array() &&
          m["sm_clock_samples_mhz"].size() == samples.size()) {
        const auto clocks = m["sm_clock_samples_mhz"].get<std::vector<double>>();
        const double top = *std::max_element(clocks.begin(), clocks.end());
        for (size_t i = 0; i < samples.size(); ++i) flagged[i] |= clocks[i] > 0 && clocks[i] < 0.95 * top;
      }
      OutlierCoincidence c;
      c.config = config;
      c.mode = m.value("mode", "?");
      c.samples = samples.size();
      c.p99_ns = quantile(samples, 0.99);
      size_t hot = 0, all = 0;
      for (size_t i = 0; i < samples.size(); ++i) {
        all += static_cast<size_t>(flagged[i]);
        if (samples[i] > c.p99_ns) ++c.outliers, hot += static_cast<size_t>(flagged[i]);
      }
      c.throttled_overall = static_cast<double>(all) / static_cast<double>(samples.size());
      c.throttled_among_outliers = c.outliers ? static_cast<double>(hot) / static_cast<double>(c.outliers) : 0.0;
      if (c.outliers >= 3 && c.throttled_among_outliers >= 0.5 && c.throttled_among_outliers >= 3 * c.throttled_overall)
        out.findings.push_back(make(
            "clock-unstable", Severity::warn,
            fmt::format("{} ({}): {} of the samples above P99 were throttled, {} of all samples", c.config, c.mode,
                        pct(c.throttled_among_outliers), pct(c.throttled_overall)),
            {{"p99_ns", fmt::format("{:.0f}", c.p99_ns)}, {"outliers", std::to_string(c.outliers)}},
            "The tail is the clock: find the reason with gpusqueeze jitter over the same workload; lock clocks (tune) "
            "if steadiness matters more than peak",
            config));
      out.rows.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace gsq::triage
