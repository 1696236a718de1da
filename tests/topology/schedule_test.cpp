#include "fast/topology/schedule.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"
#include "fast/topology/builders.hpp"

namespace fast::topology {
namespace {

using Edges = std::vector<std::pair<int, int>>;
using fast::testing::expect_error;

Edges edges_at(const TopologySchedule& s, std::int64_t round) { return s.graph_at(round)->edges(); }

// Number of k >= 0 with 2^k < n.
int ceil_log2(int n) {
  int m = 0;
  while ((1 << m) < n) ++m;
  return m;
}

TEST(Schedule, StaticSpecEqualsMakeTopologyAtEveryRound) {
  for (const std::string spec : {"ring", "torus2d", "torus2d:2x4", "star:3", "complete", "tree", "hypercube",
                                 "exponential", "random-regular:3"}) {
    const TopologySchedule s = make_schedule(spec, 8, /*seed=*/5);
    const Graph expected = make_topology(spec, 8, 5);
    EXPECT_EQ(s.spec(), spec);
    EXPECT_EQ(s.size(), 8);
    EXPECT_EQ(s.period(), 1) << spec;
    EXPECT_FALSE(s.time_varying()) << spec;
    EXPECT_EQ(s.symmetric(), expected.is_symmetric()) << spec;
    for (std::int64_t r : std::initializer_list<std::int64_t>{0, 1, 2, 7, 1000, 1000000000000}) {
      EXPECT_EQ(edges_at(s, r), expected.edges()) << spec << " round " << r;
    }
    EXPECT_EQ(s.out_neighbors(5, 3), expected.neighbors_out(5)) << spec;
    EXPECT_EQ(s.in_neighbors(5, 3), expected.neighbors_in(5)) << spec;
  }
}

TEST(Schedule, ExponentialPeerSendsToThePowerOfTwoOffsetOfTheRound) {
  for (int n = 2; n <= 17; ++n) {
    const TopologySchedule s = make_schedule("exponential-peer", n);
    const int m = ceil_log2(n);
    EXPECT_EQ(s.period(), m) << "n = " << n;
    EXPECT_EQ(s.time_varying(), m > 1) << "n = " << n;
    EXPECT_EQ(s.symmetric(), n <= 2) << "n = " << n;
    for (std::int64_t r = 0; r < 3 * m; ++r) {
      const int step = 1 << (r % m);
      EXPECT_EQ(s.graph_at(r)->num_edges(), static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(s.out_neighbors(i, r), std::vector<int>{(i + step) % n}) << "n = " << n << " r = " << r;
        EXPECT_EQ(s.in_neighbors(i, r), std::vector<int>{(i - step + n) % n}) << "n = " << n << " r = " << r;
      }
    }
    // Any m consecutive rounds together are the static exponential graph.
    EXPECT_EQ(union_of_rounds(s, 0, m).edges(), exponential(n).edges()) << "n = " << n;
    EXPECT_EQ(union_of_rounds(s, 5, 5 + m).edges(), exponential(n).edges()) << "n = " << n;
  }
  const TopologySchedule one = make_schedule("exponential-peer", 1);
  EXPECT_EQ(one.period(), 1);
  EXPECT_EQ(one.graph_at(4)->num_edges(), 0u);
}

TEST(Schedule, RandomMatchingPairsFloorHalfOfTheNodesEachRound) {
  for (int n : {1, 2, 3, 5, 8, 9, 16}) {
    const TopologySchedule s = make_schedule("random-matching", n, /*seed=*/3);
    EXPECT_EQ(s.period(), 0);
    EXPECT_TRUE(s.time_varying());
    EXPECT_TRUE(s.symmetric());
    for (std::int64_t r = 0; r < 40; ++r) {
      const auto g = s.graph_at(r);
      EXPECT_TRUE(g->is_symmetric()) << "n = " << n << " r = " << r;
      EXPECT_EQ(g->num_edges(), static_cast<std::size_t>(2 * (n / 2))) << "n = " << n << " r = " << r;
      int idle = 0;
      for (int i = 0; i < n; ++i) {
        EXPECT_LE(g->degree(i), 1) << "n = " << n << " r = " << r << " node " << i;
        idle += g->degree(i) == 0;
      }
      EXPECT_EQ(idle, n % 2) << "n = " << n << " r = " << r;
    }
  }
}

TEST(Schedule, RandomKindsAreDeterministicPerSeedAndDifferAcrossSeedsAndRounds) {
  for (const std::string spec : {"random-matching", "random-peer"}) {
    // Another worker with the same inputs, asked in reverse order: the answer may not depend on
    // the call history.
    const TopologySchedule b = make_schedule(spec, 8, 1);
    std::vector<Edges> from_b(10);
    for (std::int64_t r = 9; r >= 0; --r) from_b[r] = edges_at(b, r);
    const TopologySchedule a = build_schedule(spec, 8, 1);  // not b's: make_schedule would share it
    const TopologySchedule other = make_schedule(spec, 8, 2);
    int differ_by_seed = 0;
    int differ_by_round = 0;
    for (std::int64_t r = 0; r < 10; ++r) {
      EXPECT_EQ(edges_at(a, r), from_b[r]) << spec << " round " << r;
      differ_by_seed += edges_at(a, r) != edges_at(other, r);
      differ_by_round += edges_at(a, r) != edges_at(a, r + 1);
    }
    EXPECT_GE(differ_by_seed, 5) << spec;
    EXPECT_GE(differ_by_round, 5) << spec;
  }
  // The two kinds with the same seed are unrelated: random-peer is not a matching's orientation.
  EXPECT_NE(edges_at(make_schedule("random-peer", 8, 1), 0), edges_at(make_schedule("random-matching", 8, 1), 0));
}

// Every worker of a process asks for the same schedule: while one lives, make_schedule returns
// copies of it (the same graph objects, not n graphs of n nodes each), and builds anew for other
// inputs and once every copy is gone.
TEST(Schedule, WorkersOfOneProcessShareOneScheduleWhileItLives) {
  for (const std::string spec : {"torus2d:4x4", "exponential-peer", "random-peer"}) {
    std::shared_ptr<const Graph> first;
    {
      const TopologySchedule a = make_schedule(spec, 16, 3);
      const TopologySchedule b = make_schedule(spec, 16, 3);
      first = a.graph_at(0);
      EXPECT_EQ(b.graph_at(0).get(), first.get()) << spec;
      EXPECT_NE(make_schedule(spec, 16, 4).graph_at(0).get(), first.get()) << spec;
      EXPECT_NE(build_schedule(spec, 16, 3).graph_at(0).get(), first.get()) << spec;
      EXPECT_EQ(build_schedule(spec, 16, 3).graph_at(5)->edges(), a.graph_at(5)->edges()) << spec;
    }
    const TopologySchedule later = make_schedule(spec, 16, 3);  // every copy was gone: built anew
    EXPECT_NE(later.graph_at(0).get(), first.get()) << spec;
    EXPECT_EQ(later.graph_at(0)->edges(), first->edges()) << spec;
  }
}

TEST(Schedule, RandomMatchingOverFiftyRoundsIsConnected) {
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const TopologySchedule s = make_schedule("random-matching", 8, seed);
    EXPECT_TRUE(union_of_rounds(s, 0, 50).is_connected()) << "seed " << seed;
    EXPECT_NO_THROW(check_connected_over(s, 50)) << "seed " << seed;
  }
}

TEST(Schedule, RandomPeerSendsToExactlyOneOtherNode) {
  for (int n : {2, 3, 8, 13}) {
    const TopologySchedule s = make_schedule("random-peer", n, 7);
    EXPECT_EQ(s.period(), 0);
    EXPECT_EQ(s.symmetric(), n == 2);
    for (std::int64_t r = 0; r < 40; ++r) {
      const auto g = s.graph_at(r);
      EXPECT_EQ(g->num_edges(), static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(g->degree(i), 1) << "n = " << n << " r = " << r << " node " << i;
        EXPECT_NE(g->neighbors_out(i)[0], i);
      }
    }
  }
  EXPECT_EQ(make_schedule("random-peer", 1).graph_at(0)->num_edges(), 0u);
}

TEST(Schedule, RandomPeerDrawsEveryOtherNodeAboutEquallyOften) {
  const int n = 5;
  const int rounds = 2000;
  const TopologySchedule s = make_schedule("random-peer", n, 11);
  std::vector<std::vector<int>> count(n, std::vector<int>(n, 0));
  for (std::int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < n; ++i) ++count[i][s.out_neighbors(i, r)[0]];
  }
  // Expected rounds / (n - 1) = 500 each; the standard deviation is about 19.
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      EXPECT_GT(count[i][j], 400) << i << " -> " << j;
      EXPECT_LT(count[i][j], 600) << i << " -> " << j;
    }
  }
}

TEST(Schedule, GraphsOutliveCacheEvictionAndConcurrentCallersAgree) {
  const TopologySchedule s = make_schedule("random-matching", 16, 9);
  const auto held = s.graph_at(3);
  const Edges first = held->edges();
  for (int k = 1; k <= 4; ++k) s.graph_at(3 + k * TopologySchedule::kCacheSlots);  // evict round 3
  EXPECT_EQ(held->edges(), first);
  EXPECT_EQ(edges_at(s, 3), first);

  // Reference answers from an independent schedule, then 4 threads sharing copies of one schedule.
  const TopologySchedule reference = make_schedule("random-matching", 16, 9);
  const int rounds = 300;
  std::vector<Edges> expected;
  for (int r = 0; r < rounds; ++r) expected.push_back(edges_at(reference, r));
  const TopologySchedule shared = make_schedule("random-matching", 16, 9);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t, copy = shared] {
      for (int k = 0; k < rounds; ++k) {
        const int r = (k * (2 * t + 1) + 17 * t) % rounds;  // a different order per thread
        mismatches[t] += edges_at(copy, r) != expected[r];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(Schedule, CycleUsesTheListedSpecsInTurn) {
  const TopologySchedule s = make_schedule("cycle:ring;star:2;random-regular:3;random-regular:3", 6, 4);
  EXPECT_EQ(s.period(), 4);
  EXPECT_TRUE(s.time_varying());
  EXPECT_TRUE(s.symmetric());
  const std::vector<Graph> expected{ring(6), star(6, 2), random_regular(6, 3, 6), random_regular(6, 3, 7)};
  for (std::int64_t r = 0; r < 12; ++r) EXPECT_EQ(edges_at(s, r), expected[r % 4].edges()) << "round " << r;
  EXPECT_NE(expected[2].edges(), expected[3].edges());  // item j uses seed + j
  EXPECT_FALSE(make_schedule("cycle:ring;exponential", 6).symmetric());
}

TEST(Schedule, PeriodicConstructorChecksItsGraphs) {
  const TopologySchedule s("two", {ring(4), complete(4)});
  EXPECT_EQ(s.period(), 2);
  EXPECT_EQ(edges_at(s, 5), complete(4).edges());
  expect_error<InvalidArgument>([] { TopologySchedule("empty", {}); }, {"empty", "at least one graph"});
  expect_error<InvalidArgument>(
      [] {
        TopologySchedule("mixed", {ring(4), ring(5)});
      },
      {"mixed", "graph 1 has 5 nodes"});
}

TEST(Schedule, BadSpecsThrowNamingTheSpec) {
  expect_error<InvalidArgument>([] { make_schedule("moebius", 4); },
                                {"schedule 'moebius'", "unknown kind 'moebius'", "ring", "file", "exponential-peer",
                                 "random-matching", "random-peer", "cycle"});
  expect_error<InvalidArgument>([] { make_schedule("exponental-peer", 4); },
                                {"unknown kind 'exponental-peer' (did you mean 'exponential-peer'?), expected"});
  expect_error<InvalidArgument>([] { make_schedule("random-peer:3", 4); },
                                {"schedule spec 'random-peer:3'", "random-peer takes no parameters, got '3'"});
  expect_error<InvalidArgument>([] { make_schedule("exponential-peer:2", 4); },
                                {"schedule spec 'exponential-peer:2'", "takes no parameters"});
  expect_error<InvalidArgument>([] { make_schedule("hypercube", 6); },
                                {"schedule 'hypercube'", "power of two", "n = 6"});
  expect_error<InvalidArgument>([] { make_schedule("ring", 0); }, {"schedule 'ring'", "n must be >= 1"});
  expect_error<InvalidArgument>([] { make_schedule("cycle", 4); },
                                {"schedule spec 'cycle'", "cycle needs items (cycle:ITEMS)"});
  expect_error<InvalidArgument>([] { make_schedule("cycle:ring;;star", 4); },
                                {"schedule 'cycle:ring;;star'", "cycle item 1 is empty"});
  expect_error<InvalidArgument>([] { make_schedule("cycle:ring;random-peer", 4); },
                                {"schedule 'cycle:ring;random-peer'", "item 1 'random-peer'", "not a static"});
  expect_error<InvalidArgument>([] { make_schedule("cycle:ring;torus2d:3x3", 4); },
                                {"schedule 'cycle:ring;torus2d:3x3'", "rows * cols must equal n"});
  expect_error<IoError>(
      [] { make_schedule("file:/nonexistent/fast_edges.txt", 4); },
      {"schedule 'file:/nonexistent/fast_edges.txt'", "edge list '/nonexistent/fast_edges.txt': does not exist"});
  expect_error<InvalidArgument>([] { make_schedule("random-matching", 4).graph_at(-1); },
                                {"schedule 'random-matching'", "round must be >= 0, got -1"});
  expect_error<InvalidArgument>([] { make_schedule("ring", 4).out_neighbors(4, 0); }, {"4", "n = 4"});
}

TEST(Schedule, CheckConnectedOverRejectsADisconnectedUnion) {
  // Two components {0, 1} and {2, 3}: disconnected over every window.
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("fast_schedule_two_components_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".txt"))
          .string();
  std::ofstream(path) << "0 1\n2 3\n";
  const TopologySchedule two = make_schedule("file:" + path, 4);
  std::filesystem::remove(path);
  expect_error<InvalidArgument>([&] { check_connected_over(two, 10); },
                                {"schedule 'file:" + path + "'", "rounds [0, 10)", "not", "connected"});

  // exponential-peer on 4 nodes: round 0 is the directed ring (strongly connected alone), round 1
  // two 2-cycles; a schedule of round 1 only is disconnected over every window.
  const TopologySchedule peer4 = make_schedule("exponential-peer", 4);
  EXPECT_NO_THROW(check_connected_over(peer4, 1));
  const TopologySchedule odd("round1-only", {exponential_peer(4, 1)});
  expect_error<InvalidArgument>([&] { check_connected_over(odd, 1); },
                                {"schedule 'round1-only' (n = 4)", "rounds [0, 1)", "not strongly connected"});
  EXPECT_NO_THROW(check_connected_over(peer4, 2));

  // Any one round of a random matching has at most one edge per node: never connected for n > 2.
  expect_error<InvalidArgument>([] { check_connected_over(make_schedule("random-matching", 8), 1); },
                                {"schedule 'random-matching' (n = 8)", "rounds [0, 1)"});
  for (int n : {5, 8, 16}) {
    const TopologySchedule s = make_schedule("exponential-peer", n);
    EXPECT_NO_THROW(check_connected_over(s, ceil_log2(n))) << "n = " << n;
  }
  expect_error<InvalidArgument>([&] { check_connected_over(peer4, 0); }, {"window must be >= 1, got 0"});
}

}  // namespace
}  // namespace fast::topology
