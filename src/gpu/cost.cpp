// CostScope's clocks and the table of sections it fills (see cost.hpp).
#include "gpu/cost.hpp"

#include <time.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace gsq::gpu {

namespace {

int64_t now_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Table {
  struct Row {
    uint64_t calls = 0;
    int64_t wall_ns = 0, cpu_ns = 0;
  };
  std::mutex mu;
  std::map<std::string, Row> rows;
};

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("GSQ_NVML_PROFILE");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

Table& table() {
  static Table t;
  return t;
}

}  // namespace

CostScope::CostScope(const char* what) : what_(what) {
  if (!enabled()) return;
  wall0_ = now_ns(CLOCK_MONOTONIC);
  cpu0_ = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

CostScope::~CostScope() {
  if (!wall0_) return;
  const int64_t wall = now_ns(CLOCK_MONOTONIC) - wall0_, cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0_;
  Table& t = table();
  std::lock_guard lk(t.mu);
  auto& r = t.rows[what_];
  ++r.calls, r.wall_ns += wall, r.cpu_ns += cpu;
}

std::vector<CostRow> collection_costs() {
  Table& t = table();
  std::lock_guard lk(t.mu);
  std::vector<CostRow> out;
  for (const auto& [what, r] : t.rows) out.push_back({what, r.calls, r.wall_ns, r.cpu_ns});
  return out;
}

}  // namespace gsq::gpu
