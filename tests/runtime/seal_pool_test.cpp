// SealPool (src/runtime/zmq/seal_pool.hpp): every job runs once, on a slot no other job holds
// meanwhile; the waiting thread runs its group's queued jobs; a job's error reaches wait().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "seal_pool.hpp"

namespace fast::runtime::zmq {
namespace {

TEST(SealPool, EveryJobRunsOnceOnASlotNoOtherJobHoldsMeanwhile) {
  for (unsigned helpers : {0u, 1u, 3u}) {
    SealPool pool(helpers);
    constexpr int kJobs = 400;
    std::vector<std::atomic<int>> runs(kJobs);
    std::vector<std::atomic<int>> busy(pool.slots());
    std::atomic<bool> overlap{false}, bad_slot{false};
    SealPool::Group group(pool);
    for (int round = 0; round < 4; ++round) {  // a group is used again after each wait
      for (int i = 0; i < kJobs / 4; ++i)
        group.add([&, i = round * (kJobs / 4) + i](unsigned slot) {
          if (slot >= pool.slots()) {
            bad_slot = true;
            return;
          }
          if (busy[slot].fetch_add(1) != 0) overlap = true;
          std::this_thread::sleep_for(std::chrono::microseconds(50));
          ++runs[static_cast<std::size_t>(i)];
          busy[slot].fetch_sub(1);
        });
      group.wait();
      EXPECT_TRUE(group.idle());
    }
    for (int i = 0; i < kJobs; ++i) EXPECT_EQ(runs[static_cast<std::size_t>(i)].load(), 1) << "job " << i;
    EXPECT_FALSE(overlap) << helpers << " helpers";
    EXPECT_FALSE(bad_slot) << helpers << " helpers";
  }
}

// With no helpers the caller runs each job as it adds it, as slot 0.
TEST(SealPool, WithoutHelpersTheCallerRunsEachJobAtOnce) {
  SealPool pool(0);
  SealPool::Group group(pool);
  std::vector<unsigned> slots;
  for (int i = 0; i < 3; ++i) {
    group.add([&](unsigned slot) { slots.push_back(slot); });
    EXPECT_EQ(slots.size(), static_cast<std::size_t>(i + 1));
  }
  EXPECT_EQ(slots, (std::vector<unsigned>{0, 0, 0}));
}

// FAST_SEAL_THREADS=-1: each worker keeps two cores of its share; the rest helps, at most 2.
TEST(SealPool, AutomaticHelpersAreTheShareBeyondTwoCoresAtMostTwo) {
  EXPECT_EQ(SealPool::automatic_helpers(16, 2), 2u);  // 8 cores per worker
  EXPECT_EQ(SealPool::automatic_helpers(16, 4), 2u);  // 4
  EXPECT_EQ(SealPool::automatic_helpers(12, 4), 1u);  // 3
  EXPECT_EQ(SealPool::automatic_helpers(16, 8), 0u);  // 2
  EXPECT_EQ(SealPool::automatic_helpers(2, 2), 0u);   // 1
  EXPECT_EQ(SealPool::automatic_helpers(2, 4), 0u);   // fewer cores than workers
  EXPECT_EQ(SealPool::automatic_helpers(64, 0), 2u);  // no count: as if one worker
  EXPECT_EQ(SealPool::automatic_helpers(3, 1), 1u);
}

// Two groups of one pool, waited for by two threads, each get their own jobs done.
TEST(SealPool, GroupsOfOnePoolOnSeveralThreadsDoNotMix) {
  SealPool pool(2);
  std::atomic<int> sums[2] = {0, 0};
  std::vector<std::thread> owners;
  for (int g = 0; g < 2; ++g)
    owners.emplace_back([&, g] {
      SealPool::Group group(pool);
      for (int i = 1; i <= 200; ++i) group.add([&, g, i](unsigned) { sums[g] += i * (g + 1); });
      group.wait();
      EXPECT_EQ(sums[g].load(), 20100 * (g + 1));
    });
  for (std::thread& t : owners) t.join();
}

TEST(SealPool, AJobsErrorReachesWaitAndTheOtherJobsStillRun) {
  SealPool pool(2);
  SealPool::Group group(pool);
  std::atomic<int> ran{0};
  for (int i = 0; i < 20; ++i)
    group.add([&, i](unsigned) {
      ++ran;
      if (i == 7) throw std::runtime_error("job 7 failed");
    });
  EXPECT_THROW(
      {
        try {
          group.wait();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "job 7 failed");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_EQ(ran.load(), 20);
  group.wait();  // the error was reported once
}

}  // namespace
}  // namespace fast::runtime::zmq
