#include "analyze/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <unordered_map>

namespace gsq::analyze {

namespace {

constexpr std::array<const char*, 7> kRatioTracks = {"sm_active",     "sm_occupancy", "dram_bandwidth_utilization",
                                                     "tensor_active", "fp16_active",  "fp32_active",
                                                     "fp64_active"};
constexpr std::array<const char*, 4> kPipes = {"tensor_active", "fp16_active", "fp32_active", "fp64_active"};
constexpr double kRoofNear = 0.6;  // below 60% of both roofs a kernel is limited by neither: latency

std::string pct(double v) {
  return v < 0 ? "n/a" : fmt::format("{:.0f}%", v * 100);
}

}  // namespace

Roofline roofline(const Trace& t, const Analysis& a, double min_fill) {
  Roofline r;
  r.device = t.gpu_name;
  r.dram_peak_bytes_per_s = t.dram_peak_bytes_per_s;
  r.min_fill = min_fill;
  std::vector<const CounterTrack*> tracks;
  for (const auto& c : t.counters)
    if (std::find(kRatioTracks.begin(), kRatioTracks.end(), c.name) != kRatioTracks.end() && !c.t_ns.empty())
      tracks.push_back(&c);
  if (tracks.empty()) {
    r.note =
        "no GPM counters in this trace: record it with `gpusqueeze trace --gpu-metrics 100 -- CMD` (Hopper or "
        "later)";
    return r;
  }
  // The sampling intervals: GPM values are averages over the interval around each timestamp (its midpoint).
  const CounterTrack& ref = **std::max_element(
      tracks.begin(), tracks.end(), [](const auto* x, const auto* y) { return x->t_ns.size() < y->t_ns.size(); });
  const std::vector<int64_t>& mid = ref.t_ns;
  int64_t period = 0;
  if (mid.size() >= 2) {
    std::vector<int64_t> d;
    for (size_t i = 1; i < mid.size(); ++i) d.push_back(mid[i] - mid[i - 1]);
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
    period = d[d.size() / 2];
  }
  if (period <= 0) {
    r.note = "fewer than two counter samples: the program ran shorter than the sampling interval";
    return r;
  }
  // Kernel time inside each interval, per kernel group.
  std::unordered_map<uint32_t, size_t> group_of_name;
  std::vector<std::string> groups;
  std::unordered_map<std::string, size_t> group_index;
  std::vector<std::unordered_map<size_t, int64_t>> fill(mid.size());
  const int64_t half = period / 2;
  for (const Event& e : t.events) {
    if (e.kind != Kind::kernel) continue;
    auto [it, fresh] = group_of_name.try_emplace(e.name, 0);
    if (fresh) {
      const std::string g = normalize_kernel_name(t.name(e));
      auto [gi, added] = group_index.try_emplace(g, groups.size());
      if (added) groups.push_back(g);
      it->second = gi->second;
    }
    auto i = static_cast<size_t>(std::lower_bound(mid.begin(), mid.end(), e.start_ns - half + 1) - mid.begin());
    for (; i < mid.size() && mid[i] - half < e.end_ns(); ++i) {
      const int64_t lo = std::max(e.start_ns, mid[i] - half), hi = std::min(e.end_ns(), mid[i] + half);
      if (hi > lo) fill[i][it->second] += hi - lo;
    }
  }
  std::vector<int64_t> owner(mid.size(), -1);  // the group that filled an interval, -1 if none did
  for (size_t i = 0; i < mid.size(); ++i)
    for (const auto& [g, ns] : fill[i])
      if (static_cast<double>(ns) >= min_fill * static_cast<double>(period)) owner[i] = static_cast<int64_t>(g);
  // Each track's samples go to the owner of the interval they fall in.
  std::map<std::pair<size_t, std::string>, std::pair<double, size_t>> sums;
  std::vector<size_t> owned(groups.size(), 0);
  for (size_t i = 0; i < mid.size(); ++i)
    if (owner[i] >= 0) ++owned[static_cast<size_t>(owner[i])];
  for (const CounterTrack* c : tracks) {
    for (size_t j = 0; j < c->t_ns.size() && j < c->values.size(); ++j) {
      const auto it = std::lower_bound(mid.begin(), mid.end(), c->t_ns[j] - half);
      if (it == mid.end() || *it - c->t_ns[j] > half) continue;
      const int64_t g = owner[static_cast<size_t>(it - mid.begin())];
      if (g < 0) continue;
      auto& [sum, n] = sums[{static_cast<size_t>(g), c->name}];
      sum += c->values[j], ++n;
    }
  }
  for (const KernelGroup& k : a.top_kernels) {
    RooflinePoint p;
    p.kernel = k.name;
    p.total_ns = k.total_ns;
    p.share = k.share;
    const auto gi = group_index.find(k.name);
    if (gi != group_index.end()) p.samples = owned[gi->second];
    if (p.samples == 0) {
      p.reason = fmt::format(
          "no {:.0f} ms counter interval is ≥ {:.0f}% this kernel: it runs shorter than the "
          "interval or shares it with others",
          static_cast<double>(period) / 1e6, min_fill * 100);
      r.points.push_back(std::move(p));
      continue;
    }
    for (const char* name : kRatioTracks) {
      const auto s = sums.find({gi->second, name});
      if (s != sums.end() && s->second.second) p.mean[name] = s->second.first / static_cast<double>(s->second.second);
    }
    if (p.mean.contains("dram_bandwidth_utilization")) p.memory = p.mean["dram_bandwidth_utilization"];
    for (const char* pipe : kPipes)
      if (p.mean.contains(pipe) && p.mean[pipe] > p.compute) p.compute = p.mean[pipe], p.pipe = pipe;
    if (p.memory >= 0 && r.dram_peak_bytes_per_s > 0) p.dram_bytes_per_s = p.memory * r.dram_peak_bytes_per_s;
    const double nearest = std::max(p.memory, p.compute);
    p.bound = nearest < kRoofNear ? "latency" : (p.memory >= p.compute ? "memory" : "compute");
    r.points.push_back(std::move(p));
  }
  return r;
}

nlohmann::json to_json(const Roofline& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json j = {{"kernel", p.kernel}, {"total_ns", p.total_ns}, {"share", p.share}, {"samples", p.samples}};
    if (p.samples) {
      j["memory"] = p.memory;
      j["compute"] = p.compute;
      j["pipe"] = p.pipe;
      j["bound"] = p.bound;
      j["mean"] = p.mean;
      if (p.dram_bytes_per_s >= 0) j["dram_bytes_per_s"] = p.dram_bytes_per_s;
    } else {
      j["reason"] = p.reason;
    }
    points.push_back(std::move(j));
  }
  nlohmann::json j = {{"device", r.device},
                      {"dram_peak_bytes_per_s", r.dram_peak_bytes_per_s},
                      {"min_fill", r.min_fill},
                      {"points", std::move(points)}};
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

Table roofline_table(const Roofline& r) {
  Table t;
  t.header = {"kernel",       "share",     "intervals", "DRAM % of peak", "DRAM GB/s",
              "busiest pipe", "SM active", "occupancy", "nearer roof"};
  for (const auto& p : r.points) {
    if (!p.samples) {
      t.rows.push_back({abbreviate(p.kernel, 60), pct(p.share), "0", "", "", "", "", "", "— (too short to sample)"});
      continue;
    }
    auto m = [&](const char* k) { return p.mean.contains(k) ? pct(p.mean.at(k)) : "n/a"; };
    t.rows.push_back({abbreviate(p.kernel, 60), pct(p.share), std::to_string(p.samples), pct(p.memory),
                      p.dram_bytes_per_s >= 0 ? fmt::format("{:.0f}", p.dram_bytes_per_s / 1e9) : "n/a",
                      p.pipe.empty() ? "n/a" : fmt::format("{} {}", p.pipe.substr(0, p.pipe.find('_')), pct(p.compute)),
                      m("sm_active"), m("sm_occupancy"), p.bound});
  }
  return t;
}

}  // namespace gsq::analyze
