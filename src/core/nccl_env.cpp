// The NCCL environment notes (NCCL's docs and source; nccl-tests and PyTorch threads cited in shared research).
#include "core/nccl_env.hpp"

namespace gsq {

const std::map<std::string, NcclEnvNote>& nccl_env_notes() {
  static const std::map<std::string, NcclEnvNote> notes = {
      {"NCCL_SOCKET_TIMEOUT",
       {NcclEnvKind::invented, "does not exist in any NCCL version",
        "remove it; the timeout that fires is PyTorch's (init_process_group(timeout=…))"}},
      {"NCCL_TIMEOUT",
       {NcclEnvKind::invented, "does not exist", "remove it; PyTorch's timeout is init_process_group(timeout=…)"}},
      {"NCCL_TREE_THRESHOLD",
       {NcclEnvKind::removed, "was removed in NCCL 2.5 and is ignored",
        "NCCL_ALGO / NCCL_PROTO choose algorithms now"}},
      {"NCCL_LL_THRESHOLD",
       {NcclEnvKind::removed, "was removed in NCCL 2.5 and is ignored", "NCCL_PROTO chooses protocols now"}},
      {"NCCL_MIN_NCHANNELS", {NcclEnvKind::deprecated, "is deprecated since 2.17", "NCCL_MIN_CTAS"}},
      {"NCCL_MAX_NCHANNELS", {NcclEnvKind::deprecated, "is deprecated since 2.17", "NCCL_MAX_CTAS"}},
      {"NCCL_ASYNC_ERROR_HANDLING",
       {NcclEnvKind::pytorch, "is PyTorch's old name, not NCCL's", "TORCH_NCCL_ASYNC_ERROR_HANDLING"}},
      {"NCCL_IB_DISABLE",
       {NcclEnvKind::debug, "is a debugging setting: with 1, InfiniBand/RoCE clusters run over TCP",
        "unset it in production"}},
      {"NCCL_P2P_DISABLE",
       {NcclEnvKind::debug, "is a debugging setting: with 1, intra-node traffic goes through host memory",
        "unset it once the P2P problem is found"}},
  };
  return notes;
}

}  // namespace gsq
