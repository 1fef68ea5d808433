// `tune` profiles: TOML files of settings in five groups (gpu, module, host, env, framework), with `include`
// inheritance (the included file first, later keys win), read with toml++ and checked against the catalogue of real
// settings: an unknown key, or one of the invented knobs the tuning folklore repeats, is an error naming the real
// alternative.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gsq::tune {

enum class ValueKind { boolean, integer, number, text, clock_pair };

struct Setting {
  std::string id;     // "gpu.*.power_limit_w" (all GPUs), "gpu.1.…", "gpu.GPU-uuid.…", "host.cpu_governor",
                      // "module.nvidia.RestrictProfilingToAdminUsers", "env.CUDA_MODULE_LOADING", "framework.…"
  std::string value;  // canonical text: "true", "600", "1980,1980", "performance"
  ValueKind kind = ValueKind::text;
  std::string origin;  // "profile.toml:12:1"

  [[nodiscard]] std::string group() const { return id.substr(0, id.find('.')); }
  [[nodiscard]] std::string key() const { return id.substr(id.rfind('.') + 1); }
};

struct Profile {
  std::string summary;
  std::vector<std::string> files;                  // this file and those it includes, outermost first
  std::vector<Setting> settings;                   // one per id, in file order; an included file's come first
  std::map<std::string, std::string> unsupported;  // id → why capture could not read it

  [[nodiscard]] const Setting* find(const std::string& id) const;
  void set(Setting s);  // replaces the setting of the same id, else appends
};

// Reads FILE and what it includes. Throws Error(bad_input) "FILE:LINE:COLUMN: what is wrong" for syntax errors,
// unknown or rejected keys, values of the wrong type or outside the setting's words, include cycles.
[[nodiscard]] Profile read_profile(const std::filesystem::path& file);
// The same for text in memory; includes are looked up under `base_dir` (none when empty).
[[nodiscard]] Profile parse_profile(const std::string& text, const std::string& origin,
                                    const std::filesystem::path& base_dir = {});
// TOML text that read_profile reads back to the same settings (the header comment says what made it).
[[nodiscard]] std::string write_profile(const Profile& p, const std::string& header_comment);

// What one key means and how it lasts, for `tune keys` and the docs.
struct KeyInfo {
  std::string group, key, values, lasts, meaning;
};
[[nodiscard]] const std::vector<KeyInfo>& catalogue();

// nvidia-smi's compute-mode numbers (0 default, 1 exclusive process, 2 prohibited) and names → canonical names.
[[nodiscard]] std::string canonical_compute_mode(const std::string& text);

}  // namespace gsq::tune
