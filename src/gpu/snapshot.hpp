// Snapshot of every GPU and of the host: everything that changes performance, recorded to and replayed from JSON.
#pragma once

#include "core/field.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gsq::gpu {

inline constexpr const char* kSnapshotSchema = "gpusqueeze.snapshot/1";

struct GpuProcess {
  uint32_t pid = 0;
  Field<uint64_t> used_memory_bytes;
  std::string name;  // from /proc/PID/comm where visible, else ""
};

struct MigInstance {
  uint32_t index = 0;
  Field<std::string> uuid;
  Field<uint64_t> memory_total_bytes;
};

struct NvLink {
  uint32_t link = 0;
  bool active = false;
  Field<uint64_t> replay_errors, recovery_errors, crc_flit_errors, crc_data_errors;
};

// Readings taken while gpusqueeze's own load kernel ran (doctor), so idle power saving is not mistaken for a fault.
struct LoadSample {
  double duration_s = 0;
  uint32_t samples = 0;
  Field<uint32_t> sm_clock_min_mhz, sm_clock_max_mhz;
  Field<uint32_t> pcie_gen_max_seen;
  Field<uint64_t> clock_event_reasons_mask;  // OR of every sample
  Field<uint64_t> pcie_replay_delta;
  Field<int32_t> temperature_max_c;
  Field<double> power_max_w;
};

struct GpuSnapshot {
  uint32_t index = 0;
  Field<std::string> name, uuid, serial, vbios_version, pci_bus_id, architecture, compute_capability;
  Field<bool> persistence_mode;
  Field<std::string> compute_mode;  // "default", "exclusive_process", "prohibited"
  Field<bool> mig_mode_current, mig_mode_pending;
  std::vector<MigInstance> mig_instances;
  Field<bool> ecc_mode_current, ecc_mode_pending;
  Field<uint64_t> ecc_volatile_corrected, ecc_volatile_uncorrected, ecc_aggregate_corrected, ecc_aggregate_uncorrected;
  Field<uint32_t> remapped_rows_correctable, remapped_rows_uncorrectable;
  Field<bool> remap_pending, remap_failure;
  Field<uint32_t> retired_pages_single_bit, retired_pages_double_bit;
  Field<uint32_t> sm_clock_mhz, mem_clock_mhz, sm_clock_max_mhz, mem_clock_max_mhz;
  Field<uint32_t> sm_clock_app_mhz, mem_clock_app_mhz, sm_clock_app_default_mhz, mem_clock_app_default_mhz;
  Field<uint64_t> clock_event_reasons_mask;
  Field<double> power_draw_w, power_limit_w, power_default_limit_w, power_enforced_limit_w;
  Field<int32_t> temperature_c, temperature_slowdown_c, temperature_shutdown_c, temperature_gpu_max_c,
      temperature_mem_max_c;
  Field<uint32_t> pcie_gen_current, pcie_gen_max, pcie_gen_gpu_max, pcie_width_current, pcie_width_max;
  Field<uint32_t> pcie_replay_counter;
  Field<uint64_t> bar1_total_bytes, bar1_used_bytes;
  Field<uint64_t> memory_total_bytes, memory_used_bytes, memory_reserved_bytes;
  Field<uint32_t> memory_bus_width_bits;
  Field<uint32_t> utilization_gpu_pct, utilization_memory_pct;
  Field<std::vector<GpuProcess>> processes;
  std::vector<NvLink> nvlinks;
  Field<std::string> cpu_affinity;  // cpulist, "0-15,32-47"
  Field<int32_t> numa_node;
  Field<bool> gpm_supported;
  Field<LoadSample> under_load;  // only when taken by doctor with its load kernel
};

struct HostSnapshot {
  Field<std::string> hostname, kernel, os, cpu_model;
  Field<uint32_t> cpu_count;
  Field<std::string> cpu_governor;  // the one governor of all CPUs, or "mixed: performance×8, powersave×8"
  Field<std::string> driver_version, cuda_driver_version, nvml_version;
  std::string cuda_runtime_version;                         // the runtime gpusqueeze was built with
  Field<std::map<std::string, std::string>> nvidia_params;  // /proc/driver/nvidia/params
  Field<std::string> aspm_policy;  // the selected policy in /sys/module/pcie_aspm/parameters/policy
  Field<std::string> iommu;        // "on (N groups)", "off"
  std::vector<std::string> container_hints;
  Field<std::string> process_cpu_affinity;  // cpulist of the process taking the snapshot
  Field<uint32_t> uid;
  std::map<std::string, std::string> env;  // variables that change CUDA/PyTorch/NCCL behaviour
};

struct Snapshot {
  std::string captured_at;  // ISO 8601 UTC
  std::string tool_version;
  std::string source;  // "live" or the file it was replayed from
  HostSnapshot host;
  std::vector<GpuSnapshot> gpus;
  std::vector<std::string> notes;  // what could not be read at all, e.g. "NVML: no NVIDIA driver"
};

void to_json(nlohmann::json& j, const Snapshot& s);
// Throws Error(bad_input) naming the field on a wrong type; unknown extra fields are ignored.
[[nodiscard]] Snapshot snapshot_from_json(const nlohmann::json& j, const std::string& origin);
[[nodiscard]] Snapshot load_snapshot(const std::filesystem::path& file);

// Names of the bits set in a clocks-event-reasons mask ("gpu_idle", "sw_power_cap", "hw_thermal_slowdown", ...).
[[nodiscard]] std::vector<std::string> clock_event_reason_names(uint64_t mask);

// Environment variables a snapshot records: exact names and prefixes.
[[nodiscard]] bool is_recorded_env_var(std::string_view name);

}  // namespace gsq::gpu
