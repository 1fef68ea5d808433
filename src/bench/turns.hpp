// Round-robin turns between threads that share one GPU stream, for interleaved runs: exactly one participant holds
// the turn at a time; it works, then yields the turn to the next participant still taking part, or leaves for good.
// The harness gives each configuration of an interleaved run a thread and yields after every sample, so slow drift
// (clocks, temperature, power state) reaches every configuration alike instead of whichever happened to run last.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace gsq::bench {

class Turns {
 public:
  // Participants 0…n-1; participant 0 holds the first turn. Each participant calls these for itself, and yield and
  // leave only while it holds the turn.
  explicit Turns(size_t n) : taking_part_(n, true), left_(n) {}
  Turns(const Turns&) = delete;
  Turns& operator=(const Turns&) = delete;

  // Blocks until `me` holds the turn.
  void wait(size_t me) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return turn_ == me; });
  }
  // Hands the turn to the next participant after `me` still taking part (back to `me` when it is the only one), then
  // waits for it to come back. Returns the seconds spent waiting.
  double yield(size_t me) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(mu_);
      advance(me);
    }
    changed_.notify_all();
    wait(me);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // `me` is done: the turn moves on and never comes back to it.
  void leave(size_t me) {
    {
      std::lock_guard lock(mu_);
      if (taking_part_[me]) taking_part_[me] = false, --left_;
      advance(me);
    }
    changed_.notify_all();
  }

 private:
  void advance(size_t me) {
    if (left_ == 0) {
      turn_ = kNobody;
      return;
    }
    size_t k = me;
    do k = (k + 1) % taking_part_.size();
    while (!taking_part_[k]);
    turn_ = k;
  }

  static constexpr size_t kNobody = static_cast<size_t>(-1);
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<bool> taking_part_;
  size_t left_;
  size_t turn_ = 0;
};

}  // namespace gsq::bench
