// Doctor's checks of the environment the snapshot recorded (the process's CUDA/PyTorch/NCCL variables).
#pragma once

#include "core/finding.hpp"
#include "gpu/snapshot.hpp"

#include <vector>

namespace gsq::doctor {

// NCCL variables that do not exist, were removed, are deprecated, are PyTorch's, or are debugging switches left on.
void nccl_env(const gpu::Snapshot& s, std::vector<Finding>& out);

}  // namespace gsq::doctor
