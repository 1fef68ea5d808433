// Test helpers: the snapshot recorded on the H200, as JSON to edit or as a parsed snapshot.
#pragma once

#include "core/json_io.hpp"
#include "gpu/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace gsq::test {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(GSQ_FIXTURE_DIR) / name;
}

// A file published by others in ../shared/data (tests skip with a reason where it is absent).
inline std::filesystem::path shared_data(const std::string& relative) {
  return std::filesystem::path(GSQ_SOURCE_DIR) / ".." / "shared" / "data" / relative;
}

inline nlohmann::json h200_snapshot_json() {
  return read_json_file(fixture("h200-snapshot.json"), gpu::kSnapshotSchema);
}

// Edits one field by JSON pointer ("/gpus/0/pcie_width_current") and parses the result.
inline gpu::Snapshot edited(const std::string& pointer, const nlohmann::json& value) {
  nlohmann::json j = h200_snapshot_json();
  j[nlohmann::json::json_pointer(pointer)] = value;
  return gpu::snapshot_from_json(j, "edited fixture");
}

}  // namespace gsq::test
