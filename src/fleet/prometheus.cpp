// The fleet from a PromQL endpoint that scrapes `gpusqueeze exporter`: one instant query per field over the window,
// every series matched to its GPU by the `uuid` label the exporter puts on each of them.
#include "core/error.hpp"
#include "fleet/fields.hpp"
#include "fleet/fleet.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <regex>

namespace gsq::fleet {

using nlohmann::json;

double duration_seconds(const std::string& w) {
  // PromQL's durations: one or more number-unit parts, largest unit first ("90m", "1h30m", "2d").
  static const std::regex whole(R"(^([0-9]+(ms|s|m|h|d|w|y))+$)"), part(R"(([0-9]+)(ms|s|m|h|d|w|y))");
  if (!std::regex_match(w, whole))
    throw_bad_input(fmt::format("--since {}: a PromQL duration is numbers with units: 30m, 6h, 1h30m, 2d", w));
  double total = 0;
  for (auto it = std::sregex_iterator(w.begin(), w.end(), part); it != std::sregex_iterator(); ++it) {
    const std::string u = (*it)[2];
    const double unit = u == "ms"  ? 1e-3
                        : u == "s" ? 1
                        : u == "m" ? 60
                        : u == "h" ? 3600
                        : u == "d" ? 86400
                        : u == "w" ? 604800
                                   : 31536000;
    const std::string digits = (*it)[1];
    if (digits.size() > 12) throw_bad_input(fmt::format("--since {}: more than a lifetime", w));
    total += std::stod(digits) * unit;
  }
  if (total < 1) throw_bad_input(fmt::format("--since {}: at least one second", w));
  return total;
}

namespace {

struct Url {
  std::string scheme_host_port, prefix;
};

Url parse_url(const std::string& url) {
  static const std::regex re(R"(^(https?)://([A-Za-z0-9._\-]+|\[[0-9A-Fa-f:]+\])(:[0-9]{1,5})?(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, re))
    throw_bad_input(
        fmt::format("--prometheus {}: expected http://HOST[:PORT][/PATH] (Prometheus, Thanos Query, "
                    "VictoriaMetrics or any PromQL endpoint)",
                    url));
  if (m[1] == "https")
    throw_bad_input(
        fmt::format("--prometheus {}: this build speaks plain HTTP only; reach the endpoint through "
                    "`kubectl port-forward` or a local proxy",
                    url));
  std::string prefix = m[4];
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return {fmt::format("http://{}{}", m[2].str(), m[3].str()), prefix};
}

// The config and signal fields as series: "value" queries give the field its number; "info" gives labels.
struct Query {
  const char* field;
  const char* promql;  // {S}: the extra matchers (with a leading comma when given), {W}: window, {R}: resolution
};

constexpr Query kQueries[] = {
    // The newest time each (GPU, driver) series was seen: a driver changed within the window leaves two series, and
    // the newer one is the GPU's driver now.
    {"info", "max_over_time(timestamp(gsq_gpu_info{{{B}}})[{W}:{R}])"},
    // The newest time each node's exporter reported: a GPU last seen well before it has gone from its node.
    {"exporter_seen", "max_over_time(timestamp(gsq_exporter_gpus{{{B}}})[{W}:{R}])"},
    {"power_limit_w", "last_over_time(gsq_gpu_power_limit_watts{{{B}}}[{W}])"},
    {"sm_clock_max_mhz", "last_over_time(gsq_gpu_sm_clock_max_hertz{{{B}}}[{W}]) / 1e6"},
    {"pcie_gen_max", "last_over_time(gsq_gpu_pcie_link_generation_max{{{B}}}[{W}])"},
    {"pcie_width", "last_over_time(gsq_gpu_pcie_link_width{{{B}}}[{W}])"},
    {"mig", "last_over_time(gsq_gpu_mig_enabled{{{B}}}[{W}])"},
    {"xid_events", "increase(gsq_gpu_xid_events_total{{{B}}}[{W}])"},  // within the window, as the alert rule counts
    {"last_xid", "last_over_time(gsq_gpu_last_xid{{{B}}}[{W}])"},
    {"ecc_uncorrected", "last_over_time(gsq_gpu_ecc_errors_total{{type=\"uncorrected\",scope=\"volatile\"{S}}}[{W}])"},
    {"remap_pending", "last_over_time(gsq_gpu_row_remap_pending{{{B}}}[{W}])"},
    {"nvlink_errors", "sum without (link, type) (increase(gsq_gpu_nvlink_errors_total{{{B}}}[{W}]))"},
    {"pcie_replays", "increase(gsq_gpu_pcie_replays_total{{{B}}}[{W}])"},
    // Under load only (utilisation above one half): idle GPUs neither clock up nor reach their power cap, and a fleet
    // mixes busy and idle ones.
    {"clock_under_load_mhz",
     "avg_over_time((gsq_gpu_sm_clock_hertz{{{B}}} and on (uuid) gsq_gpu_utilization_ratio{{{B}}} > 0.5)[{W}:{R}]) / "
     "1e6"},
    {"power_cap_fraction",
     "avg_over_time((gsq_gpu_clock_event_active{{reason=\"sw_power_cap\"{S}}} and on (uuid) "
     "gsq_gpu_utilization_ratio{{{B}}} > 0.5)[{W}:{R}])"},
    {"thermal_fraction",
     "max without (reason) (avg_over_time((gsq_gpu_clock_event_active{{reason=~\"hw_slowdown|sw_thermal_slowdown|"
     "hw_thermal_slowdown\"{S}}} and on (uuid) gsq_gpu_utilization_ratio{{{B}}} > 0.5)[{W}:{R}]))"},
    {"under_load_samples", "count_over_time((gsq_gpu_utilization_ratio{{{B}}} > 0.5)[{W}:{R}])"},
    {"temperature_under_load_c",
     "avg_over_time((gsq_gpu_temperature_celsius{{{B}}} and on (uuid) gsq_gpu_utilization_ratio{{{B}}} > 0.5)[{W}:"
     "{R}])"},
};

bool is_config(std::string_view field) {
  const FieldSpec* f = field_spec(field);
  return f != nullptr && f->kind == Kind::config;
}

std::string config_text(std::string_view field, double v) {
  if (field == "mig") return v > 0 ? "on" : "off";
  return fmt::format("{:.0f}", v);
}

Collection fold_answers(const std::vector<std::pair<std::string, std::string>>& queries,
                        const std::vector<std::string>& bodies);

}  // namespace

std::vector<std::pair<std::string, std::string>> prometheus_queries(const PromOptions& o) {
  const double w = duration_seconds(o.window);
  const std::string sel = o.selector.empty() ? "" : "," + o.selector;
  const std::string res = fmt::format("{:.0f}s", std::max(1.0, std::ceil(w / 240)));  // ≤ 240 points a subquery
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& q : kQueries) {
    // {B}: the extra matchers in braces of their own ("{}" without any: PromQL accepts an empty list after a metric
    // name); {S}: the same after other matchers, with a leading comma.
    // One series per GPU: an exporter restarted within the window (a new pod, a new `instance`) or two Prometheus
    // replicas behind Thanos give several; the largest is kept (a counter's increase, the newest info).
    const std::string inner = fmt::format(fmt::runtime(q.promql), fmt::arg("B", o.selector), fmt::arg("S", sel),
                                          fmt::arg("W", o.window), fmt::arg("R", res));
    const std::string_view field = q.field;
    out.emplace_back(q.field, field == "exporter_seen"
                                  ? fmt::format("max by (hostname) ({})", inner)  // a node's series, not a GPU's
                                  : fmt::format("max by (uuid, gpu, hostname, model{}) ({})",
                                                field == "info" ? ", driver" : "", inner));
  }
  return out;
}

Collection gpus_from_prometheus(const std::vector<std::pair<std::string, std::string>>& queries,
                                const std::vector<std::string>& bodies) {
  try {
    return fold_answers(queries, bodies);
  } catch (const json::exception& e) {  // JSON of another shape than /api/v1/query's
    throw_bad_input(fmt::format("the PromQL endpoint's answer has an unexpected shape: {}", e.what()));
  }
}

namespace {

Collection fold_answers(const std::vector<std::pair<std::string, std::string>>& queries,
                        const std::vector<std::string>& bodies) {
  Collection c;
  std::map<std::string, size_t> by_uuid;
  std::map<std::string, double> newest_info;    // uuid → the newest time its info series was seen
  std::map<std::string, double> exporter_seen;  // hostname → the newest time its exporter reported
  auto gpu_of = [&](const json& labels) -> Gpu* {
    const std::string uuid = labels.value("uuid", "");
    if (uuid.empty()) return nullptr;
    auto [it, fresh] = by_uuid.emplace(uuid, c.gpus.size());
    if (fresh)
      c.gpus.push_back({labels.value("hostname", ""),
                        labels.value("gpu", ""),
                        uuid,
                        labels.value("model", ""),
                        "prometheus",
                        {},
                        {}});
    Gpu& g = c.gpus[it->second];
    if (g.node.empty()) g.node = labels.value("hostname", "");
    if (g.model.empty()) g.model = labels.value("model", "");
    if (g.index.empty()) g.index = labels.value("gpu", "");
    return &g;
  };
  for (size_t q = 0; q < queries.size() && q < bodies.size(); ++q) {
    const auto& [field, promql] = queries[q];
    json answer;
    try {
      answer = json::parse(bodies[q]);
    } catch (const json::exception& e) {
      throw_bad_input(fmt::format("the PromQL endpoint's answer to {} is not JSON: {}", field, e.what()));
    }
    if (!answer.is_object() || answer.value("status", "") != "success")
      throw_bad_input(fmt::format("the PromQL endpoint refused {} ({}): {}: {}", field, promql,
                                  answer.is_object() ? answer.value("errorType", "error") : "not an object",
                                  answer.is_object() ? answer.value("error", "") : bodies[q].substr(0, 200)));
    const auto& result = answer.value("data", json::object()).value("result", json::array());
    if (result.empty()) {
      // The newest XID exists only after an XID; NVLink counters only on NVLink GPUs; the others every exporter has.
      if (field != "last_xid" && field != "nvlink_errors")
        c.notes.push_back(fmt::format("no series for {} ({})", field, promql));
      continue;
    }
    if (!result.is_array()) throw_bad_input(fmt::format("the answer to {} holds no result list", field));
    for (const auto& series : result) {
      if (!series.is_object()) continue;
      if (field == "exporter_seen") {
        const auto& value = series.value("value", json::array());
        const auto host = series.value("metric", json::object()).value("hostname", "");
        if (value.size() == 2 && value[1].is_string() && !host.empty()) try {
            exporter_seen[host] = std::stod(value[1].get<std::string>());
          } catch (const std::exception&) {
          }
        continue;
      }
      Gpu* g = gpu_of(series.value("metric", json::object()));
      const auto& value = series.value("value", json::array());
      if (!g || value.size() != 2 || !value[1].is_string()) continue;
      double v = NAN;
      try {
        v = std::stod(value[1].get<std::string>());
      } catch (const std::exception&) {
        continue;
      }
      if (field == "info") {
        if (double& last = g->signals.try_emplace("last_seen", v).first->second; v > last) last = v;
        if (const auto d = series["metric"].value("driver", ""); !d.empty()) {
          auto [seen, fresh] = newest_info.try_emplace(g->uuid, v);
          if (fresh || v > seen->second) g->config["driver"] = d, seen->second = v;
        }
      } else if (is_config(field)) {
        if (std::isfinite(v)) g->config[field] = config_text(field, v);
      } else if (std::isfinite(v)) {
        g->signals[field] = v;
      }
    }
  }
  // A GPU gone from a node whose exporter went on reporting (fallen off the bus, lost by the driver): its series stop.
  for (auto& g : c.gpus) {
    auto last = g.signals.find("last_seen");
    auto node = exporter_seen.find(g.node);
    if (last != g.signals.end() && node != exporter_seen.end() && node->second - last->second > kMissingAfterS)
      g.signals["missing_s"] = node->second - last->second;
    if (last != g.signals.end()) g.signals.erase(last);
  }
  return c;
}

}  // namespace

Collection collect_prometheus(const PromOptions& o) {
  const Url url = parse_url(o.url);
  const auto queries = prometheus_queries(o);
  httplib::Client cli(url.scheme_host_port);
  const auto timeout = std::chrono::duration<double>(o.timeout_s);
  cli.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  std::vector<std::string> bodies;
  for (const auto& [field, promql] : queries) {
    auto r = cli.Get(url.prefix + "/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!r)
      throw_bad_input(
          fmt::format("--prometheus {}: no answer from {} ({} error); is it the PromQL endpoint's "
                      "address, and does this host reach it?",
                      o.url, url.scheme_host_port, httplib::to_string(r.error())));
    if (r->status != 200 && r->status != 400 && r->status != 422)  // 400/422 carry PromQL's own error in JSON
      throw_bad_input(
          fmt::format("--prometheus {}: HTTP {} for {}: {}", o.url, r->status, field, r->body.substr(0, 200)));
    bodies.push_back(std::move(r->body));
  }
  Collection c = gpus_from_prometheus(queries, bodies);
  c.source = fmt::format("{} (PromQL, window {}{})", o.url, o.window, o.selector.empty() ? "" : ", " + o.selector);
  return c;
}

}  // namespace gsq::fleet
