// gather_totals (src/training/run_totals.hpp): every member's totals reach the reader, with its
// evaluations and, in an elastic lockstep run, the steps of the ranks it saw lost (a map of any
// size, empty included), each in its own member's entry.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/runtime/threads/world.hpp"
#include "run_totals.hpp"

namespace fast::training {
namespace {

TEST(RunTotals, EachMembersLostStepsAndEvaluationsReachTheReader) {
  constexpr int kWorkers = 3;
  const std::map<int, std::map<int, std::int64_t>> lost = {{0, {{1, 7}, {2, 3}}}, {1, {}}, {2, {{1, 9}}}};
  std::optional<RunTotals> got;
  runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 60});
  world.run([&](runtime::Context& ctx) {
    collective::Communicator comm(ctx);
    WorkerTotals mine;
    mine.steps = 10 + ctx.rank();
    mine.joined_at = ctx.rank() == 2 ? 4 : 0;
    mine.bytes_to.assign(kWorkers, static_cast<std::uint64_t>(ctx.rank()));
    mine.bytes_from.assign(kWorkers, 0);
    mine.lost_steps = lost.at(ctx.rank());
    const std::vector<EvalEvent> evaluations(static_cast<std::size_t>(ctx.rank()),
                                             EvalEvent{.model_time = 1.0, .end_time = 2.0 + ctx.rank()});
    const int readers[] = {1};
    std::optional<RunTotals> out = gather_totals(comm, mine, evaluations, readers);
    EXPECT_EQ(out.has_value(), ctx.rank() == 1);
    if (out) got = std::move(out);
  });
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->by_rank.size(), 3u);
  for (int r = 0; r < kWorkers; ++r) {
    const auto& t = got->by_rank[static_cast<std::size_t>(r)];
    ASSERT_TRUE(t.has_value()) << r;
    EXPECT_EQ(t->steps, 10 + r);
    EXPECT_EQ(t->joined_at, r == 2 ? 4 : 0);
    EXPECT_EQ(t->bytes_to, std::vector<std::uint64_t>(kWorkers, static_cast<std::uint64_t>(r)));
    EXPECT_EQ(t->lost_steps, lost.at(r)) << r;
  }
  ASSERT_EQ(got->evaluations.size(), 3u);  // 0 + 1 + 2, in the order they ended
  EXPECT_EQ(got->evaluations[0].rank, 1);
  EXPECT_EQ(got->evaluations[2].rank, 2);
}

}  // namespace
}  // namespace fast::training
