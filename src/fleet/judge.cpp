// The fleet's judgement: GPUs grouped by model; config fields against the group's majority, signals against its
// median with a robust scale, health counters on their own.
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

// What an NVIDIA XID code means for whoever runs the node (NVIDIA's XID catalogue,
// docs.nvidia.com/deploy/xid-errors): the common ones only; others point at the catalogue.
std::string xid_fix(double code) {
  switch (static_cast<int>(code)) {
    case 79:
      return "XID 79: the GPU fell off the bus — drain the node, check power and seating, reset or replace it";
    case 48:
      return "XID 48: double-bit ECC error — drain the node, reset the GPU; replace it if it repeats";
    case 94:
      return "XID 94: contained ECC error — the affected process was stopped; reset the GPU when it drains";
    case 95:
      return "XID 95: uncontained ECC error — drain the node and reset the GPU before running more work";
    case 63:
    case 64:
      return "XID 63/64: row remapping event — reset the GPU when idle to apply it; replace if remapping fails";
    case 74:
      return "XID 74: NVLink error — check the link's error counters (`nvidia-smi nvlink -e`) and reseat";
    case 92:
      return "XID 92: high single-bit ECC rate — watch the node; replace the GPU if the rate stays high";
    case 13:
    case 31:
    case 43:
      return "XID 13/31/43: an application fault (bad address, illegal instruction) — a program's bug, not the "
             "GPU's, unless it repeats across programs";
    case 119:
    case 120:
      return "XID 119/120: GSP firmware error or timeout — update the driver; reset the GPU";
    default:
      return fmt::format("XID {:.0f}: see NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors)", code);
  }
}

std::string fill(std::string_view text, const std::string& value, const std::string& group) {
  std::string out(text);
  for (auto [key, with] : {std::pair<std::string_view, const std::string&>{"{value}", value}, {"{group}", group}})
    for (size_t at; (at = out.find(key)) != std::string::npos;) out.replace(at, key.size(), with);
  return out;
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
    const bool enough = members.size() >= o.min_group;
    if (!enough)
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
        for (size_t i : members)
          if (auto it = r.gpus[i].config.find(id); it != r.gpus[i].config.end() && it->second != top->first)
            judged[i].config.push_back(
                {std::string(id), std::string(label), "config", fmt::format("{}{}", it->second, unit),
                 fmt::format("{}{}", top->first, unit), std::nullopt,
                 fill(f.fix, fmt::format("{}{}", it->second, unit), fmt::format("{}{}", top->first, unit))});
        continue;
      }
      std::vector<double> values;
      for (size_t i : members)
        if (auto it = r.gpus[i].signals.find(id); it != r.gpus[i].signals.end() && std::isfinite(it->second))
          values.push_back(it->second);
      if (values.empty()) continue;
      if (f.kind == Kind::health) {  // on its own: a count above zero is the event, whatever the peers saw
        for (size_t i : members) {
          auto it = r.gpus[i].signals.find(id);
          if (it == r.gpus[i].signals.end() || !(it->second > 0)) continue;
          std::string fix(f.fix);
          if (id == "xid_events")
            if (auto last = r.gpus[i].signals.find("last_xid"); last != r.gpus[i].signals.end())
              fix = xid_fix(last->second) + ". " + fix;
          judged[i].health.push_back({std::string(id), std::string(label), "health",
                                      fmt::format("{:g}{}", it->second, unit), "0", std::nullopt, fill(fix, "", "")});
          judged[i].fail = judged[i].fail || f.fail;
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
        auto it = r.gpus[i].signals.find(id);
        if (it == r.gpus[i].signals.end() || !std::isfinite(it->second)) continue;
        const double z = (it->second - med) / scale;
        const bool apart = f.bad == Bad::high ? z >= kZ : z <= -kZ;
        if (!apart) continue;
        Difference d{std::string(id),
                     std::string(label),
                     f.kind == Kind::counter ? "health" : "signal",
                     fmt::format("{:.4g}{}", it->second, unit),
                     fmt::format("{:.4g}{}", med, unit),
                     z,
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
    const bool outlier = !j.config.empty() || !j.health.empty() || j.signals.size() >= kMinSignals;
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
  std::stable_sort(r.outliers.begin(), r.outliers.end(),
                   [](const Outlier& a, const Outlier& b) { return a.severity > b.severity; });
  return r;
}

std::string subject(const Result& r, const Outlier& o) {
  const Gpu& first = r.gpus[o.gpus.front()];
  if (o.gpus.size() == 1) return fmt::format("{} GPU {} ({})", first.node, first.index, first.uuid);
  std::vector<std::string> idx;
  for (size_t i : o.gpus) idx.push_back(r.gpus[i].index);
  return fmt::format("{} (GPUs {})", first.node, fmt::join(idx, ", "));
}

}  // namespace gsq::fleet
