// Communicator's joining mode (a worker that takes a lost worker's rank back in a run under way):
// set-up collectives it stands in for take their sequence numbers without any message, so its later
// collectives meet the others'; every other collective is refused while it joins.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "common/error_message.hpp"
#include "common/forwarding_context.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/collective/window.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::collective {
namespace {

using runtime::Context;

// A worker's Context, reporting that it joins a run under way (as the zmq runtime does for a
// process that took a rank back); everything else is the wrapped context's.
class JoiningContext final : public test::ForwardingContext {
 public:
  using ForwardingContext::ForwardingContext;
  bool joins_run_under_way() const override { return true; }
};

TEST(Joining, SkippedSetUpCollectivesKeepTheLaterOnesMatched) {
  constexpr int n = 4;
  constexpr int newcomer = 2;
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    const int r = ctx.rank();
    // The set-up of the run: two all-gathers. Worker 2's first incarnation takes part in them.
    Communicator first(ctx);
    for (int k = 0; k < 2; ++k) {
      const std::vector<double> mine{static_cast<double>(r + 10 * k)};
      std::vector<double> all(n);
      first.allgather(core::ConstView(std::span<const double>(mine)), core::MutableView(std::span<double>(all)));
      for (int p = 0; p < n; ++p) EXPECT_EQ(all[static_cast<std::size_t>(p)], p + 10 * k);
    }
    Communicator* comm = &first;
    JoiningContext joining(ctx);
    std::optional<Communicator> second;
    if (r == newcomer) {
      // Its second incarnation joins: it stands in for both all-gathers without a message, and may
      // run no collective meanwhile.
      second.emplace(joining);
      comm = &*second;
      EXPECT_TRUE(comm->joining());
      std::vector<double> one{1.0};
      fast::testing::expect_error<core::InvalidUsage>(
          [&] { comm->allreduce(core::MutableView(std::span<double>(one))); },
          {"worker 2 joins a run under way", "end_join()"});
      comm->skip_collective();
      comm->skip_collective();
      comm->end_join();
      EXPECT_FALSE(comm->joining());
    } else {
      EXPECT_FALSE(first.joining());
    }
    // The first collective after the set-up meets every worker's: sum of ranks, then a barrier.
    std::vector<double> sum{static_cast<double>(r + 1)};
    comm->allreduce(core::MutableView(std::span<double>(sum)));
    EXPECT_EQ(sum[0], n * (n + 1) / 2.0);
    comm->barrier();
  });
}

// A window whose lengths differ between workers (only worker 0 exposes a tensor, as easgd's
// centre with a codec): a joining worker cannot all-gather the lengths; joining_numel gives them, and its
// requests are validated against them as the others' are.
TEST(Joining, AWindowOfUnequalLengthsTakesThemFromJoiningNumel) {
  constexpr int n = 3;
  constexpr int newcomer = 2;
  constexpr std::size_t len = 5;
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    const int r = ctx.rank();
    Communicator first(ctx);
    std::vector<float> centre(r == 0 ? len : 0, 0.0f);
    for (std::size_t i = 0; i < centre.size(); ++i) centre[i] = 1.5f + static_cast<float>(i);
    WindowOptions options;
    options.joining_numel = [](int owner) { return owner == 0 ? len : std::size_t{0}; };
    std::optional<Window> window;
    window.emplace(first, "centre", core::MutableView(std::span<float>(centre)), options);
    JoiningContext joining(ctx);
    std::optional<Communicator> second;
    Communicator* comm = &first;
    if (r == newcomer) {
      window.reset();  // the first incarnation's window is gone with it
      second.emplace(joining);
      comm = &*second;
      // Without joining_numel, worker 0's length is taken to be this worker's, 0 (on a communicator
      // of its own, so that the real one's sequence stays matched).
      Communicator probe(joining);
      std::optional<Window> guessed;
      guessed.emplace(probe, "centre", core::MutableView(std::span<float>(centre)));
      std::vector<float> read(len);
      fast::testing::expect_error<core::InvalidArgument>(
          [&] { guessed->get(0, core::MutableView(std::span<float>(read))).wait(); }, {"exposes 0 elements"});
      guessed.reset();
      window.emplace(*comm, "centre", core::MutableView(std::span<float>(centre)), options);
      window->get(0, core::MutableView(std::span<float>(read))).wait();
      EXPECT_EQ(read, (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
      comm->end_join();
    }
    comm->barrier();  // everyone's reads done before worker 0's window goes
    window->close();
  });
}

// Communicator::after_next_send, the fault injection of an elastic group (exit-while-agreeing):
// the hook runs once, in the first send of the next collective, after that message left (here: its
// receiver has it), and the collective goes on; groups that are not elastic refuse it.
TEST(Joining, AfterNextSendRunsOnceInTheNextCollectivesFirstSend) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    const int r = ctx.rank();
    fast::testing::expect_error<core::InvalidUsage>([&] { Communicator(ctx).after_next_send([] {}); },
                                                    {"after_next_send", "elastic group"});
    Communicator comm(ctx, {.elastic = true});
    int calls = 0;
    if (r == 0) comm.after_next_send([&] { ++calls; });
    for (int k = 0; k < 2; ++k) {
      const std::vector<double> mine{static_cast<double>(r + 10 * k)};
      std::vector<double> all(2);
      comm.allgather(core::ConstView(std::span<const double>(mine)), core::MutableView(std::span<double>(all)));
      EXPECT_EQ(all, (std::vector<double>{10.0 * k, 1 + 10.0 * k}));
      EXPECT_EQ(calls, r == 0 ? 1 : 0) << "after collective " << k;
    }
  });
}

TEST(Joining, ContextsOfEveryRuntimeButARejoinDoNotJoin) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    EXPECT_FALSE(ctx.joins_run_under_way());
    EXPECT_TRUE(ctx.membership_events().empty());
    EXPECT_FALSE(Communicator(ctx).joining());
  });
}

}  // namespace
}  // namespace fast::collective
