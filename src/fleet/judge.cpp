// The fleet's judgement: GPUs grouped by model; config fields against the group's majority, signals against its
// median with a robust scale, health counters on their own.
#include "core/xid.hpp"
#include "fleet/fields.hpp"
#include "fleet/fleet.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace gsq::fleet {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The fix text with "{value}" and "{group}" filled in, in one pass: the values come from outside (a driver label, a
// report's field) and may hold the placeholders themselves.
std::string fill(std::string_view text, const std::string& value, const std::string& group) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    if (text.substr(at).starts_with("{value}")) {
      out += value, at += 7;
    } else if (text.substr(at).starts_with("{group}")) {
      out += group, at += 7;
    } else {
      out += text[at++];
    }
  }
  return out;
}

// Application faults (a program's bad address or illegal instruction): XIDs every ML fleet sees, not the GPU's.
bool application_xid(double code) {
  return code == 13 || code == 31 || code == 43 || code == 45;
}

// A count as people read it: PromQL's increase() extrapolates to the window's edges (2.003 XIDs), so whole numbers.
std::string count_text(double v) {
  return v < 0.5 ? "fewer than 1" : fmt::format("{:.0f}", std::round(v));
}

// A signal's value with its unit; the shares of time under load as percentages.
std::string value_text(std::string_view id, double v, std::string_view unit) {
  if (id.ends_with("_fraction")) return fmt::format("{:.1f}%", 100 * v);
  return fmt::format("{:.4g}{}", v, unit);
}

// The differences of one GPU against its group.
struct Judged {
  std::vector<Difference> config, health, signals;
  bool fail = false;
};

}  // namespace

Result judge(Collection c, const Options& o) {
  Result r;
  r.source = c.source;
  r.gpus = std::move(c.gpus);
  r.notes = std::move(c.notes);
  std::map<std::string, std::vector<size_t>> by_model;
  for (size_t i = 0; i < r.gpus.size(); ++i)
    by_model[r.gpus[i].model.empty() ? "unknown model" : r.gpus[i].model].push_back(i);
  std::vector<Judged> judged(r.gpus.size());
  for (auto& [model, members] : by_model) {
    Group g{model, members, {}, {}, {}};
    const bool known = model != "unknown model";  // GPUs whose model is not said may be of several: listed only
    const bool enough = known && members.size() >= o.min_group;
    if (!known) g.notes.push_back("the model is not reported: listed, not compared");
    if (known && !enough)
      g.notes.push_back(fmt::format("{} GPU{}: fewer than {}, listed but not compared", members.size(),
                                    members.size() == 1 ? "" : "s", o.min_group));
    for (const auto& f : kFields) {
      const std::string_view id = f.id, label = f.label, unit = f.unit;
      if (f.kind == Kind::config) {
        std::map<std::string, size_t> counts;
        size_t reporting = 0;
        for (size_t i : members)
          if (auto it = r.gpus[i].config.find(id); it != r.gpus[i].config.end()) ++counts[it->second], ++reporting;
        if (counts.empty() || !enough) continue;
        const auto top = std::max_element(counts.begin(), counts.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
        if (reporting < o.min_group) continue;
        if (static_cast<double>(top->second) < kMajority * static_cast<double>(reporting)) {
          std::string values;
          for (const auto& [v, n] : counts) values += fmt::format("{}{} ×{}", values.empty() ? "" : ", ", v, n);
          g.notes.push_back(fmt::format("{}: no value held by two thirds of the GPUs ({}): not judged", label, values));
          continue;
        }
        g.config[std::string(id)] = top->first;
        for (size_t i : members) {
          // The CUDA driver API's version follows the driver's: said once, as the driver.
          if (id == "cuda_driver" && std::any_of(judged[i].config.begin(), judged[i].config.end(),
                                                 [](const Difference& d) { return d.field == "driver"; }))
            continue;
          if (auto it = r.gpus[i].config.find(id); it != r.gpus[i].config.end() && it->second != top->first)
            judged[i].config.push_back(
                {std::string(id), std::string(label), "config", fmt::format("{}{}", it->second, unit),
                 fmt::format("{}{}", top->first, unit), std::nullopt,
                 fill(f.fix, fmt::format("{}{}", it->second, unit), fmt::format("{}{}", top->first, unit))});
        }
        continue;
      }
      // A reading the GPU has: finite, and for signals read under load, from enough time under load.
      auto reading = [&](size_t i) -> const double* {
        const auto& sig = r.gpus[i].signals;
        auto it = sig.find(id);
        if (it == sig.end() || !std::isfinite(it->second)) return nullptr;
        if (f.under_load)
          if (auto n = sig.find("under_load_samples"); n != sig.end() && n->second < kMinLoadSamples) return nullptr;
        return &it->second;
      };
      std::vector<double> values;
      for (size_t i : members)
        if (const double* v = reading(i)) values.push_back(*v);
      if (values.empty()) continue;
      if (f.kind == Kind::health) {  // on its own: a count above zero is the event, whatever the peers saw
        for (size_t i : members) {
          auto it = r.gpus[i].signals.find(id);
          if (it == r.gpus[i].signals.end() || !(it->second > 0)) continue;
          std::string fix(f.fix);
          bool fail = f.fail;
          if (id == "xid_events")
            if (auto last = r.gpus[i].signals.find("last_xid"); last != r.gpus[i].signals.end()) {
              // The newest XID's code says what the count means: an application's fault is a warning without the
              // advice to drain (earlier codes of the window are not known: the exporter keeps the newest).
              fail = !application_xid(last->second);
              fix = fail ? gsq::xid_advice(last->second) + ". " + fix : gsq::xid_advice(last->second);
            }
          const std::string value = unit.empty() ? count_text(it->second) : fmt::format("{:.0f}{}", it->second, unit);
          judged[i].health.push_back(
              {std::string(id), std::string(label), "health", value, "0", std::nullopt, fill(fix, "", "")});
          judged[i].fail = judged[i].fail || fail;
        }
        continue;
      }
      if (values.size() < o.min_group) continue;
      const double med = median_of(values);
      std::vector<double> dev;
      for (double v : values) dev.push_back(std::abs(v - med));
      const double scale = std::max({1.4826 * median_of(dev), f.abs_floor, f.rel_floor * std::abs(med)});
      g.median[std::string(id)] = med;
      if (!enough || !(scale > 0)) continue;
      for (size_t i : members) {
        const double* v = reading(i);
        if (v == nullptr) continue;
        const double z = (*v - med) / scale;
        const bool apart = f.bad == Bad::high ? z >= kZ : z <= -kZ;
        if (!apart) continue;
        Difference d{std::string(id),          std::string(label),        f.kind == Kind::counter ? "health" : "signal",
                     value_text(id, *v, unit), value_text(id, med, unit), z,
                     std::string(f.fix)};
        (f.kind == Kind::counter ? judged[i].health : judged[i].signals).push_back(std::move(d));
      }
    }
    r.groups.push_back(std::move(g));
  }
  // Outliers: config drift, a health event, or enough signals agreeing; GPUs of one node that differ only in the same
  // config fields, alike, take one line.
  std::map<std::string, size_t> merged;  // node + config signature → outlier index
  for (size_t i = 0; i < r.gpus.size(); ++i) {
    const auto& j = judged[i];
    std::set<std::string_view> families;  // signals of one cause count once
    bool slowed_for_heat = false;
    for (const auto& d : j.signals) {
      if (const FieldSpec* f = field_spec(d.field)) families.insert(f->family);
      slowed_for_heat = slowed_for_heat || d.field == "thermal_fraction";
    }
    // A heavier workload than its peers' draws more power: it runs at the power cap, at lower clocks and hotter. Those
    // are one cause, the job's, not the GPU's: clocks and heat count as one family unless the GPU was slowed for heat
    // (its cooling). A real power-delivery fault shows beside them as a config (power limit) or another signal.
    if (!slowed_for_heat && families.contains("clock") && families.contains("heat")) families.erase("heat");
    const bool outlier = !j.config.empty() || !j.health.empty() || families.size() >= kMinSignals;
    const std::string group = r.gpus[i].model.empty() ? "unknown model" : r.gpus[i].model;
    if (!outlier) {
      if (!j.signals.empty()) r.watch.push_back({{i}, group, Severity::info, j.signals});
      continue;
    }
    Outlier out{{i}, group, j.fail ? Severity::fail : Severity::warn, {}};
    for (const auto* part : {&j.health, &j.config, &j.signals})
      out.differences.insert(out.differences.end(), part->begin(), part->end());
    if (j.health.empty() && j.signals.empty()) {
      std::string key = r.gpus[i].node + '\n' + group;
      for (const auto& d : j.config) key += '\n' + d.field + '=' + d.value;
      if (auto it = merged.find(key); it != merged.end()) {
        r.outliers[it->second].gpus.push_back(i);
        continue;
      }
      merged[key] = r.outliers.size();
    }
    r.outliers.push_back(std::move(out));
  }
  std::stable_sort(r.outliers.begin(), r.outliers.end(), [](const Outlier& a, const Outlier& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.differences.size() > b.differences.size();  // more that differs first
  });
  return r;
}

std::string subject(const Result& r, const Outlier& o) {
  const Gpu& first = r.gpus[o.gpus.front()];
  if (o.gpus.size() == 1)
    return first.uuid.empty() ? fmt::format("{} GPU {}", first.node, first.index)
                              : fmt::format("{} GPU {} ({})", first.node, first.index, first.uuid);
  std::vector<std::string> idx;
  for (size_t i : o.gpus) idx.push_back(r.gpus[i].index);
  std::sort(idx.begin(), idx.end(), [](const std::string& a, const std::string& b) {  // 2 before 10
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return fmt::format("{} (GPUs {})", first.node, fmt::join(idx, ", "));
}

}  // namespace gsq::fleet
