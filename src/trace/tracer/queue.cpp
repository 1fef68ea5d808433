// The tracer's bounded hand-over from traced threads to the writer (see queue.hpp).
#include "trace/tracer/queue.hpp"

#include <cstdlib>

namespace gsq::trace::tracer {

RecordQueue::RecordQueue(size_t buffer_bytes, size_t max_buffers, size_t max_cpu_records, size_t block_records)
    : buffer_bytes_(buffer_bytes),
      max_buffers_(max_buffers),
      max_cpu_records_(max_cpu_records),
      block_records_(block_records) {}

RecordQueue::~RecordQueue() {
  // Only buffers back in the pool are freed: one still with CUPTI or the writer may yet be touched.
  for (uint8_t* b : free_buffers_) std::free(b);
}

uint8_t* RecordQueue::take_buffer() {
  std::lock_guard lk(mu_);
  if (!free_buffers_.empty()) {
    uint8_t* b = free_buffers_.back();
    free_buffers_.pop_back();
    return b;
  }
  if (buffers_allocated_ >= max_buffers_) {
    ++buffers_refused_;
    return nullptr;
  }
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes_));
  if (!b) {
    ++buffers_refused_;
    return nullptr;
  }
  ++buffers_allocated_;
  return b;
}

void RecordQueue::complete_buffer(uint8_t* data, size_t valid) {
  {
    std::lock_guard lk(mu_);
    buffers_.push_back({data, valid});
  }
  cv_.notify_one();
}

void RecordQueue::return_buffer(uint8_t* data) {
  std::lock_guard lk(mu_);
  free_buffers_.push_back(data);
}

RecordQueue::ThreadBlock& RecordQueue::thread_block() {
  // One queue per process in practice; a thread that meets a second queue (tests) gets a block in each.
  thread_local std::vector<std::pair<const RecordQueue*, ThreadBlock*>> mine;
  for (const auto& [q, b] : mine)
    if (q == this) return *b;
  auto b = std::make_unique<ThreadBlock>();
  b->records.reserve(block_records_);
  ThreadBlock* raw = b.get();
  {
    std::lock_guard lk(mu_);
    threads_.push_back(std::move(b));
  }
  mine.emplace_back(this, raw);
  return *raw;
}

void RecordQueue::add_cpu_record(const Record& r) {
  ThreadBlock& b = thread_block();
  std::unique_lock lk(b.mu);
  b.records.push_back(r);
  if (b.records.size() < block_records_) return;
  std::vector<Record> full;
  full.reserve(block_records_);
  full.swap(b.records);
  lk.unlock();
  std::lock_guard g(mu_);
  if (cpu_queued_ + full.size() > max_cpu_records_) {
    cpu_dropped_ += full.size();  // the writer is behind by more than the cap: drop this block, count it
    return;
  }
  cpu_queued_ += full.size();
  cpu_blocks_.push_back(std::move(full));
  cv_.notify_one();
}

RecordQueue::Batch RecordQueue::wait_for_work(std::chrono::milliseconds wait) {
  Batch batch;
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, wait, [&] { return stop_ || !buffers_.empty() || !cpu_blocks_.empty(); });
  batch.buffers.swap(buffers_);
  batch.cpu_blocks.swap(cpu_blocks_);
  cpu_queued_ = 0;
  batch.stopping = stop_;
  return batch;
}

void RecordQueue::sweep_thread_blocks(std::vector<Record>& out) {
  std::vector<ThreadBlock*> blocks;
  {
    std::lock_guard lk(mu_);
    for (auto& t : threads_) blocks.push_back(t.get());
  }
  for (ThreadBlock* t : blocks) {
    std::lock_guard lk(t->mu);
    out.insert(out.end(), t->records.begin(), t->records.end());
    t->records.clear();
  }
}

void RecordQueue::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
}

size_t RecordQueue::buffers_allocated() const {
  std::lock_guard lk(mu_);
  return buffers_allocated_;
}

}  // namespace gsq::trace::tracer
