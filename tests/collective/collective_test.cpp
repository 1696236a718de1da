#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "closed_form.hpp"
#include "common/error_message.hpp"
#include "common/star_cluster.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/runtime/sim/world.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::collective {
namespace {

using runtime::Context;

using closed_form::allreduce_mismatches;

enum class Dt { f32, f64 };
using Param = std::tuple<int, std::size_t, Dt>;

class Allreduce : public ::testing::TestWithParam<Param> {};

template <typename T>
void run_allreduce(int n, std::size_t len, ReduceOp op, std::size_t chunk_bytes) {
  runtime::threads::World world({.size = n, .op_timeout_seconds = 120});
  world.run([&](Context& ctx) {
    Communicator comm(ctx);
    const std::size_t bad = allreduce_mismatches<T>(
        comm, len, {.op = op, .chunk_bytes = chunk_bytes, .algorithm = AllreduceAlgorithm::ring});
    EXPECT_EQ(bad, 0u) << "rank " << ctx.rank();
  });
}

TEST_P(Allreduce, RingSumsAndAveragesAcrossRanks) {
  const auto [n, len, dt] = GetParam();
  // Small pieces for long inputs exercise the pipeline with many messages in flight.
  const std::size_t chunk = len > 1000 ? (std::size_t{64} << 10) : 8;
  if (dt == Dt::f32) {
    run_allreduce<float>(n, len, ReduceOp::sum, chunk);
    run_allreduce<float>(n, len, ReduceOp::avg, chunk);
  } else {
    run_allreduce<double>(n, len, ReduceOp::sum, chunk);
    run_allreduce<double>(n, len, ReduceOp::avg, chunk);
  }
}

INSTANTIATE_TEST_SUITE_P(threads, Allreduce,
                         ::testing::Combine(::testing::Range(1, 9),
                                            ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{7},
                                                              std::size_t{1000}, (std::size_t{1} << 20) + 3),
                                            ::testing::Values(Dt::f32, Dt::f64)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  (std::get<2>(info.param) == Dt::f32 ? "f32" : "f64");
                         });

TEST(AllreduceErrors, IntegerDataIsRejected) {
  runtime::threads::World world({.size = 2});
  world.run([](Context& ctx) {
    std::vector<std::int32_t> v(4);
    Communicator comm(ctx);
    EXPECT_THROW(comm.allreduce(core::MutableView(std::span<std::int32_t>(v))), core::InvalidArgument);
  });
}

TEST(AllreduceErrors, MismatchedLengthsAcrossRanksFailWithBothSizes) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 10});
  EXPECT_THROW(world.run([](Context& ctx) {
    std::vector<float> v(ctx.rank() == 0 ? 10 : 12);
    Communicator(ctx).allreduce(core::MutableView(std::span<float>(v)));
  }),
               core::InvalidArgument);
}

TEST(AllreduceAsync, OverlapsWithOtherWorkAndCompletes) {
  runtime::threads::World world({.size = 4});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> a(5000, 1.0f), b(300, 2.0f);
    Work wa = comm.allreduce_async(core::MutableView(std::span<float>(a)));
    comm.allreduce(core::MutableView(std::span<float>(b)), {.op = ReduceOp::avg});
    wa.wait();
    for (float x : a) ASSERT_EQ(x, 4.0f);
    for (float x : b) ASSERT_EQ(x, 2.0f);
  });
}

TEST(Broadcast, EveryRootReachesEveryRank) {
  for (int n : {1, 2, 3, 5, 8}) {
    runtime::threads::World world({.size = n});
    world.run([n](Context& ctx) {
      Communicator comm(ctx);
      for (int root = 0; root < n; ++root) {
        std::vector<std::int64_t> v(10001, ctx.rank() == root ? root * 1000 + 7 : -1);
        comm.broadcast(core::MutableView(std::span<std::int64_t>(v)), root, 4096);
        for (auto x : v) ASSERT_EQ(x, root * 1000 + 7) << "n=" << n << " root=" << root;
      }
    });
  }
}

TEST(Allgather, ConcatenatesInRankOrder) {
  for (int n : {1, 2, 3, 4, 7}) {
    runtime::threads::World world({.size = n});
    world.run([n](Context& ctx) {
      std::vector<double> in(3);
      for (int i = 0; i < 3; ++i) in[i] = ctx.rank() * 10 + i;
      std::vector<double> out(3 * n, -1);
      Communicator(ctx).allgather(core::ConstView(std::span<const double>(in)),
                                  core::MutableView(std::span<double>(out)));
      for (int r = 0; r < n; ++r)
        for (int i = 0; i < 3; ++i) ASSERT_EQ(out[r * 3 + i], r * 10 + i);
    });
  }
}

// Block i of member r's input is r * 100 + i (two values each): member r receives i * 100 + r.
TEST(Alltoall, BlockIOfEveryMemberReachesMemberI) {
  for (int n : {1, 2, 3, 4, 7}) {
    runtime::threads::World world({.size = n});
    world.run([n](Context& ctx) {
      const int r = ctx.rank();
      std::vector<float> in(2 * n), out(2 * n, -1);
      for (int i = 0; i < n; ++i) in[2 * i] = in[2 * i + 1] = static_cast<float>(r * 100 + i);
      Communicator(ctx).alltoall(core::ConstView(std::span<const float>(in)), core::MutableView(std::span<float>(out)));
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(out[2 * i], static_cast<float>(i * 100 + r)) << "n=" << n << " r=" << r << " from " << i;
        ASSERT_EQ(out[2 * i + 1], static_cast<float>(i * 100 + r));
      }
    });
  }
}

// Member r sends r + 1 values r * 10 + i (lengths differ): the root gets each member's list in
// member order, its own included; the other members get nothing. Every root in turn.
TEST(Gather, EveryMembersInputOfItsOwnLengthReachesTheRootOnly) {
  for (int n : {1, 2, 3, 5}) {
    runtime::threads::World world({.size = n});
    world.run([n](Context& ctx) {
      Communicator comm(ctx);
      const int r = ctx.rank();
      std::vector<std::int64_t> in(static_cast<std::size_t>(r + 1));
      for (int i = 0; i <= r; ++i) in[static_cast<std::size_t>(i)] = r * 10 + i;
      for (int root = 0; root < n; ++root) {
        const std::vector<core::Buffer> got = comm.gather(core::ConstView(std::span<const std::int64_t>(in)), root);
        if (r != root) {
          EXPECT_TRUE(got.empty());
          continue;
        }
        ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
        for (int m = 0; m < n; ++m) {
          const std::span<const std::int64_t> list = got[static_cast<std::size_t>(m)].as<std::int64_t>();
          ASSERT_EQ(list.size(), static_cast<std::size_t>(m + 1)) << "n=" << n << " root=" << root << " from " << m;
          for (int i = 0; i <= m; ++i) EXPECT_EQ(list[static_cast<std::size_t>(i)], m * 10 + i);
        }
      }
    });
  }
}

// A part of zero elements would be a message of zero elements, which no runtime carries: refused
// on the member that passes it, naming its rank (here every member, so none waits for another).
TEST(Gather, APartOfZeroElementsIsRefusedNamingTheMember) {
  runtime::threads::World world({.size = 3});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    const std::vector<float> none;
    fast::testing::expect_error<core::InvalidArgument>(
        [&] { comm.gather(core::ConstView(std::span<const float>(none)), 0); },
        {"gather: this member's part is empty (rank " + std::to_string(ctx.rank()) + ")"});
  });
}

TEST(Barrier, NoRankLeavesBeforeAllEntered) {
  for (int n : {1, 2, 3, 6, 8}) {
    std::atomic<int> entered{0};
    runtime::threads::World world({.size = n});
    world.run([&](Context& ctx) {
      Communicator comm(ctx);
      for (int round = 1; round <= 20; ++round) {
        if (ctx.rank() == round % n) ctx.sleep(0.001);  // a late arrival each round
        ++entered;
        comm.barrier();
        EXPECT_GE(entered.load(), round * n);
        comm.barrier();  // nobody enters the next round before all checked this one
      }
    });
  }
}

}  // namespace
}  // namespace fast::collective

namespace fast::collective {
namespace {

// Ring of n with weights 1/2 self, 1/4 each side: x_i <- x_i/2 + (x_{i-1} + x_{i+1})/4, computed
// here directly for comparison.
TEST(NeighborAverage, RingWeightsGiveTheClosedForm) {
  for (int n : {3, 4, 7}) {
    std::vector<std::vector<float>> out(n);
    runtime::threads::World world({.size = n});
    world.run([&](Context& ctx) {
      const int r = ctx.rank();
      std::vector<float> x(1001);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(r * 1000 + i);
      const std::vector<int> nb{(r + n - 1) % n, (r + 1) % n};
      const std::vector<double> w{0.25, 0.25};
      Communicator comm(ctx);
      comm.neighbor_average(core::MutableView(std::span<float>(x)), nb, w, nb, 0.5);
      comm.neighbor_average(core::MutableView(std::span<float>(x)), nb, w, nb, 0.5);  // scratch reused
      out[r] = x;
    });
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < 1001; i += 100) {
        auto v0 = [&](int k) { return static_cast<double>(((k % n) + n) % n * 1000 + i); };
        auto v1 = [&](int k) { return 0.5 * v0(k) + 0.25 * (v0(k - 1) + v0(k + 1)); };
        const double v2 = 0.5 * v1(r) + 0.25 * (v1(r - 1) + v1(r + 1));
        EXPECT_NEAR(out[r][i], v2, 1e-3) << "n=" << n << " r=" << r << " i=" << i;
      }
    }
  }
}

// Under sim, a worker whose out-neighbour has not received its model yet when it writes its new
// one lends its sum's buffer (Context::finish_sends_then_write): worker 1 receives worker 2 first,
// which starts 1 s late, so worker 0 finishes long before worker 1 reads its model. Every result
// is the float arithmetic of the averaging in its order (the first receive copied, the others
// added, then self * x + w * sum; or self * x plus each weighted neighbour), bit for bit, with one
// weight and with several at worker 0. 80 KB per model: delivered on the compute threads. The
// same with a scratch lent by the caller (its contents NaN before): nothing to lend then, so the
// message that still needs worker 0's model keeps a copy, and the bits are the same.
TEST(NeighborAverage, UnderSimALenderGetsTheSameBitsAsTheFormula) {
  constexpr std::size_t len = 20000;
  constexpr int n = 4;
  struct Row {
    std::vector<int> in;
    std::vector<double> w;
    double self;
  };
  for (const auto& [one_weight, lent] : {std::pair{true, false}, {false, false}, {true, true}, {false, true}}) {
    const std::vector<Row> rows{
        {{1, 3}, one_weight ? std::vector<double>{0.25, 0.25} : std::vector<double>{0.2, 0.3}, 0.5},
        {{2, 0}, {0.25, 0.25}, 0.5},
        {{1}, {0.5}, 0.5},
        {{0}, {0.4}, 0.6}};
    std::vector<std::vector<float>> start(n, std::vector<float>(len)), out(n);
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < len; ++i)
        start[r][i] = 0.37f * static_cast<float>(r + 1) + 0.001f * static_cast<float>(i);
    runtime::sim::World world({.size = n, .cluster = testing::star_cluster(n)});
    world.run([&](Context& ctx) {
      const int r = ctx.rank();
      const Row& row = rows[static_cast<std::size_t>(r)];
      std::vector<float> x = start[static_cast<std::size_t>(r)];
      Communicator comm(ctx);
      if (r == 2) ctx.sleep(1.0);
      std::vector<float> scratch(lent ? len : 0, std::numeric_limits<float>::quiet_NaN());
      comm.neighbor_average(core::MutableView(std::span<float>(x)), row.in, row.w, row.in, row.self, scratch);
      out[static_cast<std::size_t>(r)] = x;
    });
    for (int r = 0; r < n; ++r) {
      const Row& row = rows[static_cast<std::size_t>(r)];
      const auto self = static_cast<float>(row.self);
      const bool same = std::adjacent_find(row.w.begin(), row.w.end(), std::not_equal_to<>()) == row.w.end();
      std::vector<float> expected(len);
      for (std::size_t i = 0; i < len; ++i) {
        const float xi = start[static_cast<std::size_t>(r)][i];
        if (same) {
          float sum = start[static_cast<std::size_t>(row.in[0])][i];
          for (std::size_t k = 1; k < row.in.size(); ++k) sum += start[static_cast<std::size_t>(row.in[k])][i];
          expected[i] = self * xi + static_cast<float>(row.w[0]) * sum;
        } else {
          float sum = self * xi;
          for (std::size_t k = 0; k < row.in.size(); ++k)
            sum += static_cast<float>(row.w[k]) * start[static_cast<std::size_t>(row.in[k])][i];
          expected[i] = sum;
        }
      }
      EXPECT_EQ(out[static_cast<std::size_t>(r)], expected)
          << "worker " << r << (one_weight ? ", one weight" : "") << (lent ? ", scratch lent" : "");
    }
  }
}

TEST(NeighborAverage, MismatchedWeightsAreRejected) {
  runtime::threads::World world({.size = 2});
  world.run([](Context& ctx) {
    std::vector<float> x(3);
    const std::vector<int> nb{1 - ctx.rank()};
    const std::vector<double> w{0.5, 0.5};
    EXPECT_THROW(Communicator(ctx).neighbor_average(core::MutableView(std::span<float>(x)), nb, w, nb, 0.5),
                 core::InvalidArgument);
  });
}

// A scratch lent must be data's length and apart from it: checked before any message.
TEST(NeighborAverage, AScratchOfAnotherLengthOrOverlappingTheDataIsRejected) {
  runtime::threads::World world({.size = 2});
  world.run([](Context& ctx) {
    std::vector<float> both(8, 1.0f);
    const std::span<float> all(both);
    const std::vector<int> nb{1 - ctx.rank()};
    const std::vector<double> w{0.5};
    Communicator comm(ctx);
    testing::expect_error<core::InvalidArgument>(
        [&] { comm.neighbor_average(core::MutableView(all.subspan(0, 4)), nb, w, nb, 0.5, all.subspan(4, 3)); },
        {"neighbor_average", "4 elements", "got 3"});
    testing::expect_error<core::InvalidArgument>(
        [&] { comm.neighbor_average(core::MutableView(all.subspan(0, 4)), nb, w, nb, 0.5, all.subspan(2, 4)); },
        {"neighbor_average", "not overlap"});
    // Lent correctly: x <- x/2 + other/2, and the scratch holds the sum of the in-neighbours.
    const auto mine = static_cast<float>(ctx.rank() + 1), other = static_cast<float>(2 - ctx.rank());
    std::fill(both.begin(), both.begin() + 4, mine);
    comm.neighbor_average(core::MutableView(all.subspan(0, 4)), nb, w, nb, 0.5, all.subspan(4, 4));
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(both[static_cast<std::size_t>(i)], 0.5f * mine + 0.5f * other);
      EXPECT_EQ(both[static_cast<std::size_t>(4 + i)], other);
    }
  });
}

}  // namespace
}  // namespace fast::collective
