// The bench JSON (gpusqueeze.bench/1): a run written with or without its raw samples, and read back.
#include "bench/runner.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/stats.hpp"

#include <fmt/format.h>

namespace gsq::bench {

using nlohmann::json;

namespace {

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

}  // namespace gsq::bench
