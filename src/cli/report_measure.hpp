// What `report` measures itself on a live GPU.
#pragma once

#include "bench/runner.hpp"

#include <string>
#include <vector>

namespace gsq::cli {

// Short runs of the memory and PCIe probes within `budget_s` seconds; `notes` says what did not run and why.
[[nodiscard]] std::vector<bench::Run> measure_live(double budget_s, std::vector<std::string>& notes);

}  // namespace gsq::cli
