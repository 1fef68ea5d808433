// The settings `tune` knows (group, key, kind of value, allowed words, how long each lasts), the keys it rejects with
// the reason and the real alternative, and the checks of environment values. Shared by the profile reader and `tune
// keys`.
#pragma once

#include "tune/profile.hpp"

#include <map>
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
// Why NAME=VALUE cannot be in [env] (an invented or unknown CUDA variable, a variable outside the GPU stack, a value
// the variable does not take), else empty.
[[nodiscard]] std::string env_problem(const std::string& name, const std::string& value);

}  // namespace gsq::tune
