// The hardware-ceiling probe suites (`gpusqueeze probe`, `bench mem|pcie|l2|overlap`), benchmarks of the harness in
// src/bench: HBM/L2 read and write by access width and size, PCIe by direction and host memory kind, copy/compute
// overlap. They live here, beside the probes' kernels; the harness knows only its own `core` suite.
#pragma once

#include "bench/benchmark.hpp"

namespace gsq::probes {

[[nodiscard]] bench::Suite mem_suite();
[[nodiscard]] bench::Suite pcie_suite();
[[nodiscard]] bench::Suite l2_suite();  // read bandwidth over sizes around the L2, data left in cache between launches
[[nodiscard]] bench::Suite overlap_suite();  // copy/compute pipelining over streams vs serial, pinned vs pageable

}  // namespace gsq::probes
