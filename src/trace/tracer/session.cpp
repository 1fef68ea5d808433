// The tracer session's writer thread, on-demand windows, stats and shutdown (see session.hpp).
#include "trace/tracer/session.hpp"

#include "trace/tracer/cupti_check.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace gsq::trace::tracer {

uint64_t cupti_now() {
  uint64_t t = 0;
  GSQ_CUPTI_CHECK(cuptiGetTimestamp(&t));
  return t;
}

std::string Tracer::kernel_timestamps_now() {
  std::lock_guard lk(stamps_mu);
  return kernel_stamps;
}

nlohmann::json Tracer::stats_json() {
  nlohmann::json records = nlohmann::json::object();
  for (uint8_t k = 1; k < 8; ++k) records[std::string(record_kind_name(k))] = by_kind[k];
  const CuptiFailures failures = cupti_failures();
  return {{"records", records},
          {"cupti_dropped_records", cupti_dropped.load()},
          {"cpu_dropped_records", queue.cpu_dropped()},
          {"buffers_refused", queue.buffers_refused()},
          {"cupti_overhead_ns", decoder ? decoder->overhead_ns() : 0},
          {"cupti_overhead_records", decoder ? decoder->overhead_records() : 0},
          {"cupti_failed_calls", failures.count},
          {"cupti_first_failure", failures.first},
          {"file_bytes", writer ? writer->bytes_written() : 0},
          {"drop_policy", "newest records dropped when the writer is behind (buffer pool or CPU queue full)"},
          {"cupti_ns_now", cupti_now()},
          {"capture_windows", windows},
          {"kernel_timestamps", kernel_timestamps_now()},
          {"write_failed", writer && writer->failed()}};
}

void Tracer::write(std::vector<Record>& out) {
  if (out.empty()) return;
  for (const Record& r : out) ++by_kind[r.kind & 7];
  writer->write_records(out);
  out.clear();
}

void Tracer::decode_buffers(const std::deque<RecordQueue::Buffer>& buffers, std::vector<Record>& out) {
  for (const auto& b : buffers) {
    CUpti_Activity* rec = nullptr;
    while (true) {
      const CUptiResult r = cuptiActivityGetNextRecord(b.data, b.valid, &rec);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // the end of the buffer's records
      if (!cupti_ok(r, "cuptiActivityGetNextRecord(b.data, b.valid, &rec)", __FILE__, __LINE__)) break;
      if (auto decoded = decoder->decode(*rec)) out.push_back(*decoded);
    }
    queue.return_buffer(b.data);
  }
}

void Tracer::reply_window_done() {
  windows.push_back({{"start_ns", windows_start_ns}, {"end_ns", cupti_now()}});
  writer->write_stats(stats_json());
  const std::string tmp = cfg.done + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    const std::string reply =
        nlohmann::json{{"schema", "gpusqueeze.capture-window/1"}, {"trace", cfg.file}, {"window", windows.back()}}
            .dump();
    std::fputs(reply.c_str(), f);
    std::fclose(f);
    std::rename(tmp.c_str(), cfg.done.c_str());
  }
}

std::optional<double> Tracer::read_control_file() {
  FILE* f = std::fopen(cfg.control.c_str(), "r");  // one fopen per 200 ms while idle
  if (!f) return std::nullopt;
  double secs = 0;
  const int got = std::fscanf(f, "%lf", &secs);
  std::fclose(f);
  std::remove(cfg.control.c_str());
  if (got != 1 || !(secs > 0)) return std::nullopt;
  return std::min(secs, 3600.0);
}

void Tracer::writer_loop() {
  decoder.emplace([this](std::string_view s) { return writer->intern(s); }, runtime_name, driver_name);
  std::vector<Record> out;
  auto last_stats = std::chrono::steady_clock::now();
  auto last_sweep = last_stats;
  bool capturing = false, closing = false;
  auto window_end = last_stats;
  while (true) {
    RecordQueue::Batch batch = queue.wait_for_work(std::chrono::milliseconds(200));
    decode_buffers(batch.buffers, out);
    for (auto& blk : batch.cpu_blocks) out.insert(out.end(), blk.begin(), blk.end());
    const auto now = std::chrono::steady_clock::now();
    // Partly filled per-thread blocks are swept every half second, so a killed process loses at most that much.
    if (batch.stopping || now - last_sweep > std::chrono::milliseconds(500)) {
      last_sweep = now;
      queue.sweep_thread_blocks(out);
    }
    write(out);
    if (batch.stopping) break;
    if (cfg.on_demand) {
      if (closing) {  // the window's records were flushed and written above: say so to the capture command
        closing = false;
        reply_window_done();
      } else if (capturing && now >= window_end) {
        capturing = false;
        enable_activities(false);
        GSQ_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        last_sweep = now - std::chrono::seconds(1);  // sweep the CPU blocks on the next pass too
        closing = true;
        continue;
      } else if (!capturing) {
        if (const auto secs = read_control_file()) {
          windows_start_ns = cupti_now();
          window_end = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(*secs));
          capturing = true;
          enable_activities(true);
        }
      }
    }
    if (now - last_stats > std::chrono::seconds(1)) {
      last_stats = now;
      writer->write_stats(stats_json());
      // Hand over the completed records of partly filled buffers too, so a killed process loses at most about a
      // second of GPU records (a buffer is otherwise handed over only when it is full, or at exit).
      GSQ_CUPTI_CHECK(cuptiActivityFlushAll(0));
    }
  }
}

void Tracer::enable_activities(bool on) {
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                      CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
                                      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_MARKER,
                                      CUPTI_ACTIVITY_KIND_OVERHEAD};
  auto set = [on](CUpti_ActivityKind k) {
    if (on)
      GSQ_CUPTI_CHECK(cuptiActivityEnable(k));
    else
      GSQ_CUPTI_CHECK(cuptiActivityDisable(k));
  };
  if (cfg.markers_only) {  // NVTX ranges only: CUPTI records nothing per launch, copy or sync
    set(CUPTI_ACTIVITY_KIND_MARKER);
    return;
  }
  for (auto k : kinds) set(k);
  if (cfg.cpu == CpuMode::activity)
    for (auto k : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) set(k);
  if (cfg.cpu == CpuMode::callbacks) {
    for (const auto& [d, id] : wanted_callbacks) GSQ_CUPTI_CHECK(cuptiEnableCallback(on ? 1 : 0, subscriber, d, id));
    cpu_on = on;
  }
}

void Tracer::finish(const char* why) {
  if (forked_child || finished.exchange(true)) return;
  enable_activities(false);
  GSQ_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  queue.stop();
  if (writer_thread.joinable()) writer_thread.join();
  auto s = stats_json();
  s["ended_by"] = why;
  writer->write_end(s);
  ended = true;
}

}  // namespace gsq::trace::tracer
