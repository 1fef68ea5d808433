// Facts about the host read from procfs and sysfs (CPU, governor, PCIe ASPM, IOMMU, containers, the nvidia module's
// parameters, affinity, environment): no CUDA, no NVML. Each reader says why when the fact is not there.
#pragma once

#include "core/field.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gsq::host {

// The first line of a text file, or why it could not be read.
[[nodiscard]] Field<std::string> read_first_line(const std::filesystem::path& p);

// "0-3,8" <-> {0,1,2,3,8}. parse_cpulist returns an empty list for malformed text.
[[nodiscard]] std::vector<int> parse_cpulist(const std::string& text);
[[nodiscard]] std::string format_cpulist(const std::vector<int>& cpus);

[[nodiscard]] std::optional<std::string> hostname();
[[nodiscard]] std::optional<std::string> kernel_release();  // "6.1.0-18-amd64 x86_64"
[[nodiscard]] Field<std::string> os_pretty_name();          // /etc/os-release PRETTY_NAME
[[nodiscard]] Field<std::string> cpu_model();               // /proc/cpuinfo "model name"
[[nodiscard]] uint32_t cpu_count();                         // configured CPUs, at least 1
[[nodiscard]] Field<std::string> cpu_governor();            // one governor, or "mixed: a×N b×M"
[[nodiscard]] Field<std::string> aspm_policy();             // the bracketed word of pcie_aspm's policy
[[nodiscard]] Field<std::string> iommu_state();             // "on (N groups) <cmdline iommu words>" or "off"
[[nodiscard]] std::vector<std::string> container_hints();   // Docker, Podman, Kubernetes, cgroup quota
// /proc/driver/nvidia/params as name → value (names without the NVreg_ prefix, as the driver prints them).
[[nodiscard]] Field<std::map<std::string, std::string>> nvidia_module_params();
[[nodiscard]] std::optional<std::vector<int>> process_cpu_affinity();          // CPUs this process may run on
[[nodiscard]] std::vector<std::pair<std::string, std::string>> environment();  // this process's variables

}  // namespace gsq::host
