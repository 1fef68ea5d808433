// One traced process's session: configuration, queue, file writer and the writer thread that decodes CUPTI's buffers
// into the file; the CUPTI callbacks in inject.cpp feed it. Lives in the injected library only.
#pragma once

#include "trace/format.hpp"
#include "trace/tracer/config.hpp"
#include "trace/tracer/decode.hpp"
#include "trace/tracer/queue.hpp"

#include <cupti.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gsq::trace::tracer {

// CUPTI's clock (ns), the one CPU and GPU records share.
[[nodiscard]] uint64_t cupti_now();

class Tracer {
 public:
  explicit Tracer(Config c) : cfg(std::move(c)), queue(kBufferBytes, cfg.max_buffers, cfg.max_cpu_records) {}

  Config cfg;
  RecordQueue queue;
  std::unique_ptr<Writer> writer;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<bool> cpu_on{false};
  std::atomic<bool> finished{false};
  std::atomic<bool> ended{false};  // the end chunk is written: nothing more goes into the file
  bool forked_child = false;

  // Names of the runtime/driver functions, interned before the writer thread starts (read-only afterwards).
  std::vector<uint32_t> runtime_name, driver_name;
  // The callbacks of the CPU side; enabled only while recording, so an idle (delayed, on-demand) tracer costs
  // the traced program no callback dispatch.
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> wanted_callbacks;
  std::mutex stamps_mu;
  std::string kernel_stamps;  // where kernel timestamps come from (hardware events or software); under stamps_mu

  // Writer thread only (and finish() after joining it).
  std::optional<Decoder> decoder;
  std::atomic<uint64_t> cupti_dropped{0};
  uint64_t by_kind[8] = {};
  nlohmann::json windows = nlohmann::json::array();  // on-demand captures: [{start_ns, end_ns}]
  std::thread writer_thread;

  std::string kernel_timestamps_now();
  nlohmann::json stats_json();
  void write(std::vector<Record>& out);
  // Decodes the completed CUPTI buffers into `out` and returns them to the pool.
  void decode_buffers(const std::deque<RecordQueue::Buffer>& buffers, std::vector<Record>& out);
  // On-demand: tells the waiting capture command that the window's records are in the file.
  void reply_window_done();
  // On-demand: the window's length in seconds from the control file, if the capture command wrote one.
  std::optional<double> read_control_file();
  void writer_loop();
  void enable_activities(bool on);
  // Stops recording, flushes CUPTI and writes the end chunk. Safe to call more than once.
  void finish(const char* why);

 private:
  uint64_t windows_start_ns = 0;
};

}  // namespace gsq::trace::tracer
