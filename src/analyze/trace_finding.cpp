// The analyzer's finding builder (see trace_finding.hpp).
#include "analyze/trace_finding.hpp"

namespace gsq::analyze::detail {

Finding finding(const char* id, double share, std::string title, std::vector<Evidence> ev, int64_t saving_ns,
                std::string fix, std::string source, int64_t wall_ns) {
  ev.push_back({"saving_ns", std::to_string(saving_ns)});
  Finding f = make_finding(id, share >= 0.10 ? Severity::warn : Severity::info, std::move(title), std::move(ev),
                           std::move(fix), std::move(source), 2, "trace");
  if (saving_ns > 0 && wall_ns > 0) f.saving_ratio = static_cast<double>(saving_ns) / static_cast<double>(wall_ns);
  return f;
}

}  // namespace gsq::analyze::detail
