// The settings `tune` knows (group, key, kind of value, allowed words, how long each lasts), the keys it rejects with
// the reason and the real alternative, and the checks of environment values. Shared by the profile reader and `tune
// keys`.
#pragma once

#include "tune/profile.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gsq::tune {

struct Known {
  const char* group;
  const char* key;
  ValueKind kind;
  std::vector<std::string> words;  // allowed values of a text key (empty: any)
  const char* lasts;
  const char* meaning;
};

[[nodiscard]] const std::vector<Known>& known();
// "group.key" → why it is refused and what to use instead.
[[nodiscard]] const std::map<std::string, std::string>& rejected();
// A setting whose value when nothing sets it is documented: unset then means this value, so a profile that names it
// holds on a machine where it is unset (the shipped profile states such defaults; they are not drift).
struct DocumentedDefault {
  const char* id;         // "env.CUDA_MODULE_LOADING"
  const char* value;      // "LAZY"
  int since_cuda_driver;  // the driver's CUDA version (NVML's 12020 = 12.2) from which it is the default; 0: any
  const char* source;     // where it is documented
};
[[nodiscard]] const std::vector<DocumentedDefault>& documented_defaults();
// The value `id` has when unset on a driver supporting CUDA `cuda_driver_version` (none: unknown, so only defaults of
// every driver count); nullopt when no default is documented for it there.
[[nodiscard]] std::optional<std::string> default_when_unset(const std::string& id,
                                                            std::optional<int> cuda_driver_version);

// Why NAME=VALUE cannot be in [env] (an invented or unknown CUDA variable, a variable outside the GPU stack, a value
// the variable does not take), else empty.
[[nodiscard]] std::string env_problem(const std::string& name, const std::string& value);

}  // namespace gsq::tune
