// How a job says what it is doing while it runs: a line at a time (the CLI prints it on stderr).
#pragma once

#include <functional>
#include <string>

namespace gsq::jobs {

using Progress = std::function<void(const std::string&)>;

}  // namespace gsq::jobs
