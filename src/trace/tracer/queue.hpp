// What travels from the traced program's threads to the tracer's writer thread: CUPTI activity buffers from a capped
// pool, and CPU-side records in per-thread blocks. Both are bounded; what does not fit is dropped and counted, never
// waited for (the traced program must not stall on the tracer). No CUPTI: tested with plain threads.
//
// Lock order: a thread's block lock, then the queue lock (add_cpu_record); never the other way round.
#pragma once

#include "trace/format.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace gsq::trace::tracer {

class RecordQueue {
 public:
  struct Buffer {
    uint8_t* data;
    size_t valid;  // bytes CUPTI filled
  };
  struct Batch {
    std::deque<Buffer> buffers;
    std::vector<std::vector<Record>> cpu_blocks;
    bool stopping = false;
  };

  // `buffer_bytes` each, at most `max_buffers` at once; at most `max_cpu_records` CPU records waiting for the writer;
  // a thread hands its block over after `block_records` records.
  RecordQueue(size_t buffer_bytes, size_t max_buffers, size_t max_cpu_records, size_t block_records = 4096);
  ~RecordQueue();
  RecordQueue(const RecordQueue&) = delete;
  RecordQueue& operator=(const RecordQueue&) = delete;

  // CUPTI's side: a free buffer (nullptr once the pool is exhausted: CUPTI then drops and counts records), and a
  // filled one handed back.
  [[nodiscard]] uint8_t* take_buffer();
  void complete_buffer(uint8_t* data, size_t valid);
  // The writer's side: a buffer whose records were read goes back to the pool.
  void return_buffer(uint8_t* data);

  // A CPU-side record from the calling thread (appended to its own block; a full block goes to the writer).
  void add_cpu_record(const Record& r);
  // Everything queued so far, after waiting up to `wait` for something to arrive or for stop().
  [[nodiscard]] Batch wait_for_work(std::chrono::milliseconds wait);
  // Records still sitting in the threads' partly filled blocks, appended to `out`.
  void sweep_thread_blocks(std::vector<Record>& out);
  void stop();

  [[nodiscard]] uint64_t cpu_dropped() const noexcept { return cpu_dropped_.load(); }
  [[nodiscard]] uint64_t buffers_refused() const noexcept { return buffers_refused_.load(); }
  [[nodiscard]] size_t buffers_allocated() const;

 private:
  struct ThreadBlock {
    std::mutex mu;
    std::vector<Record> records;
  };
  ThreadBlock& thread_block();

  const size_t buffer_bytes_, max_buffers_, max_cpu_records_, block_records_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Buffer> buffers_;
  std::vector<std::vector<Record>> cpu_blocks_;
  std::vector<uint8_t*> free_buffers_;
  size_t buffers_allocated_ = 0;
  size_t cpu_queued_ = 0;
  bool stop_ = false;
  std::vector<std::unique_ptr<ThreadBlock>> threads_;  // one per thread that ever made a traced call
  std::atomic<uint64_t> cpu_dropped_{0}, buffers_refused_{0};
};

}  // namespace gsq::trace::tracer
