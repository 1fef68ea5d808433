// NCCL's own account of a `probe nccl` run: its INFO lines (INIT, ENV, TUNING subsystems) written to files in a
// temporary folder while the probe runs, then read with the log reader (nccl_logs.hpp) so each result row says which
// algorithm, protocol and channel count NCCL chose for it, and the notes say which transports it used.
#pragma once

#include "topo/multigpu_probe.hpp"
#include "topo/nccl_logs.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gsq::topo {

class NcclInfoCapture {
 public:
  // Sets NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,ENV and NCCL_DEBUG_FILE (one file per process) for this process and
  // the children it starts — unless NCCL_DEBUG is set already (the user's choice stands; nothing is captured).
  // Construct it before NCCL's first use: NCCL reads these once. TUNING (a line per collective call, a cost inside
  // the timed loop) is left to a separate untimed pass: a child started with tuning_env() in front.
  NcclInfoCapture();
  ~NcclInfoCapture();  // removes the folder
  // Removes the folder now (before an exit that skips destructors: MPI_Abort).
  void discard() const;
  NcclInfoCapture(const NcclInfoCapture&) = delete;
  NcclInfoCapture& operator=(const NcclInfoCapture&) = delete;
  [[nodiscard]] bool active() const { return !dir_.empty(); }
  // `env` arguments for a child whose NCCL prints its TUNING lines into the same folder.
  [[nodiscard]] std::vector<std::string> tuning_env() const;
  // Every file NCCL wrote so far, read as one log; nothing when inactive or NCCL wrote nothing readable.
  [[nodiscard]] std::optional<NcclLog> read() const;

 private:
  std::filesystem::path dir_;
};

// The rows get NCCL's choice (algo, proto, channels) from the log's TUNING lines; the notes get the transports, NVLS
// and, where a row ran NVLS, Tree or CollNet, that its busbw is not a link's rate.
void annotate(NcclRun& run, const NcclLog& log);

// The collectives whose rows at the large sizes (a quarter of the largest and up) ran on an algorithm other than Ring
// (NVLS, Tree, CollNet, PAT): their busbw is no link's rate, and a Ring run beside them is the figure to hold against
// one. Empty when NCCL's choice was not captured.
[[nodiscard]] std::vector<std::string> collectives_off_ring(const NcclRun& run);

}  // namespace gsq::topo
