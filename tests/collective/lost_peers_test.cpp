// Lost workers under the sim runtime (docs/simulation.md, "Failures"): with tolerate_lost, a
// worker lost with its host stops at the failure's time (its computation is cut short), the
// others see it through Context::alive and, after Communicator::exclude_lost(), run collectives
// among themselves; the run returns normally. Without tolerate_lost the loss ends the run.
// Communicator::watch_members makes any member's loss fail every wait of a collective.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/star_cluster.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/collective/membership.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/sim/world.hpp"

namespace fast::collective {
namespace {

runtime::Cluster star(int hosts) { return fast::testing::star_cluster(hosts); }

TEST(LostPeers, SurvivorsRunCollectivesAmongThemselves) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 1, .off = 2.0});
  std::vector<double> lost_at(4, -1);
  std::vector<std::vector<double>> sums(4), gathered(4);
  std::vector<double> from_three(4, -1);
  std::vector<std::vector<int>> members(4);
  runtime::sim::World world({.size = 4, .cluster = cluster, .tolerate_lost = true});
  world.run([&](runtime::Context& ctx) {
    const auto r = static_cast<std::size_t>(ctx.rank());
    Communicator comm(ctx);
    if (ctx.rank() == 1) {
      try {
        ctx.compute(10e9);  // 10 s of work at 1 Gflop/s: cut at 2 s
      } catch (const core::PeerLost&) {
        lost_at[r] = ctx.now();
        throw;
      }
      return;
    }
    ctx.sleep(3.0);
    EXPECT_FALSE(ctx.alive(1));
    EXPECT_TRUE(ctx.alive(3));
    EXPECT_THROW(ctx.ensure_alive(1), core::PeerLost);
    comm.exclude_lost();
    members[r] = comm.members();
    std::vector<double> v{static_cast<double>(ctx.rank() + 1)};
    comm.allreduce(core::MutableView(std::span<double>(v)));
    sums[r] = v;
    double x = ctx.rank() == 3 ? 7.5 : 0.0;
    comm.broadcast(core::MutableView(&x, 1, core::DType::f64), 3);
    from_three[r] = x;
    const double mine = ctx.rank();
    gathered[r].assign(3, -1);
    comm.allgather(core::ConstView(&mine, 1, core::DType::f64), core::MutableView(std::span<double>(gathered[r])));
    comm.barrier();
  });
  EXPECT_NEAR(lost_at[1], 2.0, 1e-9);
  for (std::size_t r : {0u, 2u, 3u}) {
    EXPECT_EQ(members[r], (std::vector<int>{0, 2, 3}));
    EXPECT_EQ(sums[r], std::vector<double>{1.0 + 3.0 + 4.0});  // ranks 0, 2, 3 contribute r + 1
    EXPECT_EQ(from_three[r], 7.5);
    EXPECT_EQ(gathered[r], (std::vector<double>{0.0, 2.0, 3.0}));
  }
}

// Communicator::watch_members (the end of an asynchronous run): from then on a wait fails as soon
// as any member is lost, not only the peer it waits for. Worker 3 is lost at 2 s while workers 0
// and 1 wait in a barrier that worker 2 enters late (at 5 s): they leave it within a watch slice
// of the loss instead of waiting for worker 2; then the survivors agree on the group (0, 1, 2) and
// a barrier among them completes.
TEST(LostPeers, WatchedMembersFailAWaitOnAnyLossAndTheSurvivorsAgree) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 3, .off = 2.0});
  std::vector<double> failed_at(4, -1);
  std::vector<std::vector<int>> agreed(4);
  std::vector<bool> watched(4, false);
  runtime::sim::World world({.size = 4, .cluster = cluster, .tolerate_lost = true});
  world.run([&](runtime::Context& ctx) {
    const auto r = static_cast<std::size_t>(ctx.rank());
    Communicator comm(ctx);
    comm.watch_members();
    comm.watch_members();  // idempotent
    watched[r] = comm.elastic();
    if (ctx.rank() == 3) {
      ctx.compute(10e9);  // cut at 2 s: PeerLost ends this worker
      return;
    }
    if (ctx.rank() == 2) ctx.sleep(5.0);
    try {
      comm.barrier();
    } catch (const core::PeerLost&) {
      failed_at[r] = ctx.now();
    }
    std::uint32_t rounds = 0;
    const SurvivorAgreement a = agree_on_survivors(comm, ctx.rank(), rounds);
    comm.regroup(a.members, a.next_sequence);
    agreed[r] = a.members;
    comm.barrier();
  });
  for (std::size_t r : {0u, 1u, 2u}) {
    EXPECT_TRUE(watched[r]);
    EXPECT_EQ(agreed[r], (std::vector<int>{0, 1, 2})) << "worker " << r;
  }
  for (std::size_t r : {0u, 1u}) {
    EXPECT_GE(failed_at[r], 2.0) << "worker " << r;
    EXPECT_LT(failed_at[r], 2.0 + 2 * 0.02 + 0.01) << "worker " << r << " waited for worker 2, not for the watch";
  }
  EXPECT_GE(failed_at[2], 5.0);  // it entered the barrier after the loss: the watch fails it at once
  EXPECT_LT(failed_at[2], 5.0 + 0.02 + 0.01);
}

TEST(LostPeers, WithoutToleranceTheLossEndsTheRun) {
  runtime::Cluster cluster = star(2);
  cluster.failures.push_back({.host = 1, .off = 1.0});
  runtime::sim::World world({.size = 2, .cluster = cluster});
  try {
    world.run([&](runtime::Context& ctx) {
      ctx.sleep(5.0);  // both sleep through the failure: worker 0 is released by it
    });
    FAIL() << "expected PeerLost";
  } catch (const core::PeerLost& e) {
    EXPECT_NE(std::string(e.what()).find("worker 1 (host host-1) was lost at 1 s"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fast::collective
