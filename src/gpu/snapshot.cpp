// JSON record/replay of snapshots. Each struct lists its fields once; writing and reading share that list.
#include "gpu/snapshot.hpp"

#include "gpu/clock_events.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>

#include <array>
#include <concepts>
#include <utility>

namespace gsq::gpu {

namespace {

using nlohmann::json;

// Thrown while reading, carrying the dotted path to the field at fault.
struct FieldError {
  std::string path;
  std::string what;
};

template <class A, class B>
concept same_base = std::same_as<std::remove_const_t<A>, B>;

template <class S, class V>
requires same_base<S, GpuProcess>
void fields(S& p, V&& v) {
  v("pid", p.pid);
  v("used_memory_bytes", p.used_memory_bytes);
  v("name", p.name);
}

template <class S, class V>
requires same_base<S, MigInstance>
void fields(S& m, V&& v) {
  v("index", m.index);
  v("uuid", m.uuid);
  v("memory_total_bytes", m.memory_total_bytes);
}

template <class S, class V>
requires same_base<S, NvLink>
void fields(S& l, V&& v) {
  v("link", l.link);
  v("active", l.active);
  v("replay_errors", l.replay_errors);
  v("recovery_errors", l.recovery_errors);
  v("crc_flit_errors", l.crc_flit_errors);
  v("crc_data_errors", l.crc_data_errors);
}

template <class S, class V>
requires same_base<S, LoadSample>
void fields(S& l, V&& v) {
  v("duration_s", l.duration_s);
  v("samples", l.samples);
  v("sm_clock_min_mhz", l.sm_clock_min_mhz);
  v("sm_clock_max_mhz", l.sm_clock_max_mhz);
  v("pcie_gen_max_seen", l.pcie_gen_max_seen);
  v("clock_event_reasons_mask", l.clock_event_reasons_mask);
  v("pcie_replay_delta", l.pcie_replay_delta);
  v("temperature_max_c", l.temperature_max_c);
  v("power_max_w", l.power_max_w);
}

template <class S, class V>
requires same_base<S, GpuSnapshot>
void fields(S& g, V&& v) {
  v("index", g.index);
  v("name", g.name);
  v("uuid", g.uuid);
  v("serial", g.serial);
  v("vbios_version", g.vbios_version);
  v("pci_bus_id", g.pci_bus_id);
  v("architecture", g.architecture);
  v("compute_capability", g.compute_capability);
  v("persistence_mode", g.persistence_mode);
  v("compute_mode", g.compute_mode);
  v("mig_mode_current", g.mig_mode_current);
  v("mig_mode_pending", g.mig_mode_pending);
  v("mig_instances", g.mig_instances);
  v("ecc_mode_current", g.ecc_mode_current);
  v("ecc_mode_pending", g.ecc_mode_pending);
  v("ecc_volatile_corrected", g.ecc_volatile_corrected);
  v("ecc_volatile_uncorrected", g.ecc_volatile_uncorrected);
  v("ecc_aggregate_corrected", g.ecc_aggregate_corrected);
  v("ecc_aggregate_uncorrected", g.ecc_aggregate_uncorrected);
  v("remapped_rows_correctable", g.remapped_rows_correctable);
  v("remapped_rows_uncorrectable", g.remapped_rows_uncorrectable);
  v("remap_pending", g.remap_pending);
  v("remap_failure", g.remap_failure);
  v("retired_pages_single_bit", g.retired_pages_single_bit);
  v("retired_pages_double_bit", g.retired_pages_double_bit);
  v("sm_clock_mhz", g.sm_clock_mhz);
  v("mem_clock_mhz", g.mem_clock_mhz);
  v("sm_clock_max_mhz", g.sm_clock_max_mhz);
  v("mem_clock_max_mhz", g.mem_clock_max_mhz);
  v("sm_clock_app_mhz", g.sm_clock_app_mhz);
  v("mem_clock_app_mhz", g.mem_clock_app_mhz);
  v("sm_clock_app_default_mhz", g.sm_clock_app_default_mhz);
  v("mem_clock_app_default_mhz", g.mem_clock_app_default_mhz);
  v("clock_event_reasons_mask", g.clock_event_reasons_mask);
  v("power_draw_w", g.power_draw_w);
  v("power_limit_w", g.power_limit_w);
  v("power_default_limit_w", g.power_default_limit_w);
  v("power_enforced_limit_w", g.power_enforced_limit_w);
  v("temperature_c", g.temperature_c);
  v("temperature_slowdown_c", g.temperature_slowdown_c);
  v("temperature_shutdown_c", g.temperature_shutdown_c);
  v("temperature_gpu_max_c", g.temperature_gpu_max_c);
  v("temperature_mem_max_c", g.temperature_mem_max_c);
  v("pcie_gen_current", g.pcie_gen_current);
  v("pcie_gen_max", g.pcie_gen_max);
  v("pcie_gen_gpu_max", g.pcie_gen_gpu_max);
  v("pcie_width_current", g.pcie_width_current);
  v("pcie_width_max", g.pcie_width_max);
  v("pcie_replay_counter", g.pcie_replay_counter);
  v("bar1_total_bytes", g.bar1_total_bytes);
  v("bar1_used_bytes", g.bar1_used_bytes);
  v("memory_total_bytes", g.memory_total_bytes);
  v("memory_used_bytes", g.memory_used_bytes);
  v("memory_reserved_bytes", g.memory_reserved_bytes);
  v("memory_bus_width_bits", g.memory_bus_width_bits);
  v("utilization_gpu_pct", g.utilization_gpu_pct);
  v("utilization_memory_pct", g.utilization_memory_pct);
  v("processes", g.processes);
  v("nvlinks", g.nvlinks);
  v("cpu_affinity", g.cpu_affinity);
  v("numa_node", g.numa_node);
  v("gpm_supported", g.gpm_supported);
  v("under_load", g.under_load);
}

template <class S, class V>
requires same_base<S, HostSnapshot>
void fields(S& h, V&& v) {
  v("hostname", h.hostname);
  v("kernel", h.kernel);
  v("os", h.os);
  v("cpu_model", h.cpu_model);
  v("cpu_count", h.cpu_count);
  v("cpu_governor", h.cpu_governor);
  v("driver_version", h.driver_version);
  v("cuda_driver_version", h.cuda_driver_version);
  v("nvml_version", h.nvml_version);
  v("cuda_runtime_version", h.cuda_runtime_version);
  v("nvidia_params", h.nvidia_params);
  v("aspm_policy", h.aspm_policy);
  v("iommu", h.iommu);
  v("container_hints", h.container_hints);
  v("process_cpu_affinity", h.process_cpu_affinity);
  v("uid", h.uid);
  v("env", h.env);
}

template <class T>
json write_fields(const T& obj) {
  json j = json::object();
  fields(obj, [&](const char* key, const auto& member) { j[key] = member; });
  return j;
}

template <class T>
void read_fields(const json& j, T& obj) {
  if (!j.is_object()) throw FieldError{"", fmt::format("expected an object, found {}", j.type_name())};
  fields(obj, [&](const char* key, auto& member) {
    const auto it = j.find(key);
    if (it == j.end()) throw FieldError{key, "missing"};
    try {
      member = strict_get<std::remove_cvref_t<decltype(member)>>(*it);
    } catch (const std::invalid_argument& e) {
      throw FieldError{key, e.what()};
    } catch (FieldError& e) {
      e.path = e.path.empty() ? key : fmt::format("{}.{}", key, e.path);
      throw;
    } catch (const json::exception& e) {
      throw FieldError{key, e.what()};
    }
  });
}

}  // namespace

void to_json(json& j, const GpuProcess& p) {
  j = write_fields(p);
}
void from_json(const json& j, GpuProcess& p) {
  read_fields(j, p);
}
void to_json(json& j, const MigInstance& m) {
  j = write_fields(m);
}
void from_json(const json& j, MigInstance& m) {
  read_fields(j, m);
}
void to_json(json& j, const NvLink& l) {
  j = write_fields(l);
}
void from_json(const json& j, NvLink& l) {
  read_fields(j, l);
}
void to_json(json& j, const LoadSample& l) {
  j = write_fields(l);
}
void from_json(const json& j, LoadSample& l) {
  read_fields(j, l);
}

void to_json(json& j, const Snapshot& s) {
  j = json{{"schema", kSnapshotSchema},
           {"captured_at", s.captured_at},
           {"tool_version", s.tool_version},
           {"host", write_fields(s.host)},
           {"notes", s.notes}};
  json gpus = json::array();
  for (const auto& g : s.gpus) gpus.push_back(write_fields(g));
  j["gpus"] = std::move(gpus);
}

Snapshot snapshot_from_json(const json& j, const std::string& origin) {
  Snapshot s;
  s.source = origin;
  std::string where;
  try {
    where = "captured_at";
    s.captured_at = j.at("captured_at").get<std::string>();
    where = "tool_version";
    s.tool_version = j.at("tool_version").get<std::string>();
    where = "notes";
    s.notes = j.at("notes").get<std::vector<std::string>>();
    where = "host";
    read_fields(j.at("host"), s.host);
    where = "gpus";
    const json& gpus = j.at("gpus");
    if (!gpus.is_array()) throw FieldError{"", "expected an array"};
    for (size_t i = 0; i < gpus.size(); ++i) {
      where = fmt::format("gpus[{}]", i);
      GpuSnapshot g;
      read_fields(gpus[i], g);
      s.gpus.push_back(std::move(g));
    }
  } catch (const FieldError& e) {
    throw_bad_input(fmt::format("{}: {}{}{}: {}", origin, where, e.path.empty() ? "" : ".", e.path, e.what));
  } catch (const json::exception& e) {
    throw_bad_input(fmt::format("{}: {}: {}", origin, where, e.what()));
  }
  return s;
}

Snapshot load_snapshot(const std::filesystem::path& file) {
  return snapshot_from_json(read_json_file(file, kSnapshotSchema), file.string());
}

std::vector<std::string> clock_event_reason_names(uint64_t mask) {
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const auto& [bit, name] : clock_events::kNames) {
    known |= bit;
    if (mask & bit) names.emplace_back(name);
  }
  if (mask & ~known) names.push_back(fmt::format("unknown_0x{:x}", mask & ~known));
  return names;
}

bool is_recorded_env_var(std::string_view name) {
  static constexpr std::array<std::string_view, 13> kPrefixes{"CUDA_",   "NCCL_",   "PYTORCH_", "TORCH_", "CUBLAS",
                                                              "CUDNN_",  "NVIDIA_", "OMP_",     "MKL_",   "KMP_",
                                                              "TRITON_", "NVTE_",   "GSQ_"};
  static constexpr std::array<std::string_view, 3> kExact{"LD_PRELOAD", "LD_LIBRARY_PATH", "MALLOC_CONF"};
  for (auto p : kPrefixes)
    if (name.starts_with(p)) return true;
  for (auto e : kExact)
    if (name == e) return true;
  return false;
}

}  // namespace gsq::gpu
