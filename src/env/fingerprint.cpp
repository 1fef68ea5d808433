// Locked-field selection, hashing and drift.
#include "env/fingerprint.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace gsq::env {

namespace {

using nlohmann::json;

// Per-GPU fields that are settings or identity. Current clocks, PCIe gen (drops at idle), temperatures, power draw,
// memory use, utilisation, processes and error counters move on their own; doctor judges those.
constexpr std::array<std::string_view, 25> kLockedGpuFields{"name",
                                                            "uuid",
                                                            "vbios_version",
                                                            "pci_bus_id",
                                                            "architecture",
                                                            "compute_capability",
                                                            "persistence_mode",
                                                            "compute_mode",
                                                            "mig_mode_current",
                                                            "ecc_mode_current",
                                                            "sm_clock_max_mhz",
                                                            "mem_clock_max_mhz",
                                                            "sm_clock_app_mhz",
                                                            "mem_clock_app_mhz",
                                                            "power_limit_w",
                                                            "power_default_limit_w",
                                                            "power_enforced_limit_w",
                                                            "pcie_gen_max",
                                                            "pcie_width_current",
                                                            "pcie_width_max",
                                                            "bar1_total_bytes",
                                                            "memory_total_bytes",
                                                            "memory_bus_width_bits",
                                                            "numa_node",
                                                            "cpu_affinity"};

constexpr std::array<std::string_view, 10> kLockedHostFields{"hostname",
                                                             "kernel",
                                                             "os",
                                                             "cpu_model",
                                                             "cpu_count",
                                                             "cpu_governor",
                                                             "driver_version",
                                                             "cuda_driver_version",
                                                             "cuda_runtime_version",
                                                             "aspm_policy"};

// nvidia kernel-module parameters that change what a user can measure or how the driver behaves under load.
constexpr std::array<std::string_view, 4> kLockedNvidiaParams{"RmProfilingAdminOnly", "EnableStreamMemOPs",
                                                              "DynamicPowerManagement", "EnableGpuFirmware"};

std::string text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("unsupported")) return "unsupported";
  return v.dump();
}

std::string fnv1a64_hex(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace

FieldMap locked_fields(const gpu::Snapshot& s) {
  const json j = s;
  FieldMap out;
  const json& host = j.at("host");
  for (auto k : kLockedHostFields) out[fmt::format("host.{}", k)] = text(host.at(std::string(k)));
  for (const auto& [k, v] : host.at("env").items()) out["host.env." + k] = v.get<std::string>();
  if (const json& params = host.at("nvidia_params"); params.is_object() && !params.contains("unsupported")) {
    for (auto k : kLockedNvidiaParams)
      if (params.contains(std::string(k)))
        out[fmt::format("host.nvidia_params.{}", k)] = text(params.at(std::string(k)));
  }
  for (const auto& g : j.at("gpus")) {
    const auto prefix = fmt::format("gpus[{}].", g.at("index").get<unsigned>());
    for (auto k : kLockedGpuFields) out[prefix + std::string(k)] = text(g.at(std::string(k)));
  }
  out["gpus.count"] = std::to_string(j.at("gpus").size());
  return out;
}

std::string fingerprint(const FieldMap& fields) {
  std::string lines;
  for (const auto& [k, v] : fields) lines += k + '=' + v + '\n';
  return fnv1a64_hex(lines);
}

std::vector<Drift> drift(const FieldMap& before, const FieldMap& after) {
  std::vector<Drift> out;
  for (const auto& [k, v] : before) {
    const auto it = after.find(k);
    if (it == after.end())
      out.push_back({k, v, "(absent)"});
    else if (it->second != v)
      out.push_back({k, v, it->second});
  }
  for (const auto& [k, v] : after)
    if (!before.contains(k)) out.push_back({k, "(absent)", v});
  return out;
}

json env_document(const gpu::Snapshot& s) {
  const FieldMap f = locked_fields(s);
  return json{{"schema", kFingerprintSchema}, {"fingerprint", fingerprint(f)}, {"fields", f}, {"snapshot", s}};
}

FieldMap fields_from_document(const json& j, const std::string& origin) {
  const std::string schema =
      j.is_object() && j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
  if (schema == gpu::kSnapshotSchema) return locked_fields(gpu::snapshot_from_json(j, origin));
  if (schema != kFingerprintSchema) {
    throw_bad_input(fmt::format("{}: schema is \"{}\", expected \"{}\" (env --save) or \"{}\"", origin, schema,
                                kFingerprintSchema, gpu::kSnapshotSchema));
  }
  // The fields are recomputed from the embedded snapshot, so a hand-edited "fields" block cannot hide drift.
  if (!j.contains("snapshot")) throw_bad_input(origin + ": no \"snapshot\" in the env document");
  return locked_fields(gpu::snapshot_from_json(j.at("snapshot"), origin + ": snapshot"));
}

FieldMap fields_from_file(const std::filesystem::path& file) {
  const std::string text_in = read_text_file(file);
  // Parse without a fixed schema first: both env documents and bare snapshots are accepted.
  json j;
  try {
    j = json::parse(text_in);
  } catch (const json::parse_error&) {
    (void)parse_json_text(text_in, file.string(), kFingerprintSchema);  // throws with the precise message
  }
  return fields_from_document(j, file.string());
}

}  // namespace gsq::env
