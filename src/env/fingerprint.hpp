// The environment fingerprint: the snapshot's stable, performance-relevant fields, hashed; and drift between two
// snapshots.
#pragma once

#include "gpu/snapshot.hpp"

#include <map>
#include <string>
#include <vector>

namespace gsq::env {

inline constexpr const char* kFingerprintSchema = "gpusqueeze.env/1";

// Dotted path → value text, e.g. "gpus[0].pcie_width_max" → "16"; "host.env.CUDA_MODULE_LOADING" → "LAZY".
// Only fields that are settings or identity (locked): readings that move on their own (temperature, power draw,
// current clocks, memory used, processes, error counters) are left out.
using FieldMap = std::map<std::string, std::string>;

[[nodiscard]] FieldMap locked_fields(const gpu::Snapshot& s);
[[nodiscard]] std::string fingerprint(const FieldMap& fields);  // 16 hex digits, FNV-1a 64 over sorted key=value lines

struct Drift {
  std::string field;
  std::string before;  // "(absent)" when only in one side
  std::string after;
};
[[nodiscard]] std::vector<Drift> drift(const FieldMap& before, const FieldMap& after);

// The saved form of `env --save`: fingerprint, its fields, and the whole snapshot for the record.
[[nodiscard]] nlohmann::json env_document(const gpu::Snapshot& s);
// Reads `env --save` output or a bare snapshot file; either gives back the locked fields.
[[nodiscard]] FieldMap fields_from_file(const std::filesystem::path& file);
[[nodiscard]] FieldMap fields_from_document(const nlohmann::json& j, const std::string& origin);

}  // namespace gsq::env
