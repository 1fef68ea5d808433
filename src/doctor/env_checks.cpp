// The environment checks (core/nccl_env holds what is known about each variable).
#include "doctor/env_checks.hpp"

#include "core/nccl_env.hpp"

#include <fmt/format.h>

namespace gsq::doctor {

void nccl_env(const gpu::Snapshot& s, std::vector<Finding>& out) {
  for (const auto& [name, value] : s.host.env) {
    const auto it = nccl_env_notes().find(name);
    if (it == nccl_env_notes().end()) continue;
    const bool debug = it->second.kind == NcclEnvKind::debug;
    if (debug && value == "0") continue;  // the switch is off
    out.push_back(make_finding("nccl-env", debug ? Severity::warn : Severity::info,
                               fmt::format("{}={} {}", name, value, it->second.truth), {{name, value}},
                               it->second.instead, "NCCL environment variables (docs/env, release notes)", 5, "host"));
  }
}

}  // namespace gsq::doctor
