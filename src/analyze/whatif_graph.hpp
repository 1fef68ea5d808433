// The replay graph's pieces, shared by its builder (whatif_graph.cpp) and the replay (whatif.cpp); not an interface.
#pragma once

#include "analyze/model.hpp"
#include "analyze/trace_facts.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace gsq::analyze {

enum class CallType { launch, copy, sync, other };

struct Call {
  int64_t off = 0, dur = 0;  // offset from the item's start, recorded duration
  int64_t own = 0;           // the part not spent waiting for the GPU (recorded)
  CallType type = CallType::other;
  bool blocking = false;        // waits for GPU work: a sync, or a copy the driver stages
  bool pageable = false;        // a copy from or to pageable memory (the driver stages it: blocking)
  bool pageable_input = false;  // a host-to-device copy from pageable memory: what `pinned` turns asynchronous
  bool queued = false;  // a launch the recording shows blocked on a full launch queue (own: a typical launch's time)
  std::vector<size_t> gpu;  // GPU ops it launched (indices into Trace::events)
};

struct Item {
  int64_t start = 0, dur = 0, gap_before = 0;
  uint32_t name = 0;
  std::vector<Call> calls;
  // The optimizer step (an "Optimizer.step#Class.step" range of the main process) the item ran inside, as an index
  // into ReplayGraph::optimizer_steps; -1 outside any.
  int32_t optimizer_step = -1;
};

struct Step {
  int64_t start = 0, end = 0, trailing_gap = 0;
  std::vector<Item> items;
};

// The launching thread's steps and what the replay needs besides (see whatif.hpp).
struct ReplayGraph {
  std::vector<Step> steps;
  int32_t thread = -1;  // the main launching thread
  size_t threads = 1;   // launching threads merged into the replay
  std::string why;
  double launched_gpu_share = 0;
  std::unordered_map<size_t, size_t> waits_for;  // GPU op → the op on another stream it waits for (event waits)
  // The recorder's cost taken out: the host's own time is replayed × host_scale (see RecorderCorrection).
  double host_scale = 1.0;
  // Where the GPU sets the replayed step and the untraced step is longer, the GPU ran slower untraced (another
  // process, clocks, its own spread; a recorder only adds host time): every GPU op is replayed × gpu_scale (1 else).
  double gpu_scale = 1.0;
  std::string correction;  // how host_scale and gpu_scale were found, printed with every prediction
  int64_t host_ns = 0;     // the host's own time over the steps as recorded (gaps and CPU op time not waiting)
  size_t records = 0;      // CPU ops, CUDA calls and ranges recorded on the launching threads inside the steps
  // A host that runs ahead of a GPU-bound step fills the driver's launch queue and then blocks in each launch until the
  // GPU starts an earlier op: launches that long are waiting, not the host's own time. queue_depth is the number of
  // launched ops not yet started that such a launch waited behind (the median over the recording's blocked launches);
  // the replay holds every launch to it. 0: the recording shows no blocked launch, no queue is modelled.
  size_t queue_depth = 0;
  size_t queued_launches = 0;
  // The launch calls' durations as recorded over the steps: median (an asynchronous launch's cost in the replay) and
  // tenth percentile (a launch's own cost where the queue makes most of them wait).
  int64_t launch_median_ns = 0, launch_p10_ns = 0;
  std::vector<detail::OptimizerRange> optimizer_steps;  // the optimizer's step ranges, in time order (what `--what-if
                                                        // optimizer` fuses)
};

}  // namespace gsq::analyze
