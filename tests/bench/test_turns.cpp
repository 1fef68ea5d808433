// Turn taking for interleaved runs: strict round robin, participants that leave drop out, one alone never waits.
#include "bench/turns.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace gsq::bench {
namespace {

// Each participant takes steps[i] turns, recording its index on every one, then leaves.
std::vector<size_t> take_turns(const std::vector<int>& steps) {
  Turns turns(steps.size());
  std::vector<size_t> order;  // written only by the holder of the turn
  std::vector<std::thread> threads;
  for (size_t i = 0; i < steps.size(); ++i) {
    threads.emplace_back([&, i] {
      turns.wait(i);
      for (int k = 0; k < steps[i]; ++k) {
        order.push_back(i);
        if (k + 1 < steps[i]) turns.yield(i);
      }
      turns.leave(i);
    });
  }
  for (auto& t : threads) t.join();
  return order;
}

TEST(Turns, GoRoundInOrder) {
  EXPECT_EQ(take_turns({3, 3, 3}), (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(Turns, OneThatLeavesDropsOutOfTheRound) {
  EXPECT_EQ(take_turns({4, 1, 3}), (std::vector<size_t>{0, 1, 2, 0, 2, 0, 2, 0}));
  EXPECT_EQ(take_turns({0, 2, 2}), (std::vector<size_t>{1, 2, 1, 2}));
}

TEST(Turns, AloneItNeverWaitsForAnyone) {
  Turns turns(1);
  turns.wait(0);
  for (int k = 0; k < 1000; ++k) EXPECT_LT(turns.yield(0), 1.0);
  turns.leave(0);
}

}  // namespace
}  // namespace gsq::bench
