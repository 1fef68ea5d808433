// What is known about NCCL_* environment variables people set: the ones that do not exist, were removed, are
// deprecated, belong to PyTorch, or are debugging switches. Shared by `nccl analyze` (the environment a log shows) and
// `tune` (a profile's [env]).
#pragma once

#include <map>
#include <string>
#include <utility>

namespace gsq {

enum class NcclEnvKind { invented, removed, deprecated, pytorch, debug };

// name → (kind, what is true, what to do instead)
struct NcclEnvNote {
  NcclEnvKind kind;
  const char* truth;
  const char* instead;
};
[[nodiscard]] const std::map<std::string, NcclEnvNote>& nccl_env_notes();

}  // namespace gsq
