#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "common/error_message.hpp"
#include "common/star_cluster.hpp"
#include "common/views.hpp"
#include "fast/collective/window.hpp"
#include "fast/core/page_pool.hpp"
#include "fast/runtime/sim/world.hpp"
#include "fast/runtime/tag.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/wire/requests.hpp"

namespace fast::collective {
namespace {

using core::ConstView;
using core::MutableView;
using runtime::Context;

using testing::cview;
using testing::mview;

TEST(Window, PutThenGetRoundTripsBetweenEveryPairAndCountsVersions) {
  for (int n : {1, 2, 4}) {
    runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
    world.run([n](Context& ctx) {
      Communicator comm(ctx);
      const int r = ctx.rank();
      std::vector<float> mine(8 * static_cast<std::size_t>(n), -1.0f);  // slot p written by worker p
      Window window(comm, "slots", mview(mine));
      const std::vector<float> payload(8, static_cast<float>(r) + 0.5f);
      for (int p = 0; p < n; ++p) window.put(p, cview(payload), 8 * static_cast<std::size_t>(r)).wait();
      comm.barrier();
      for (int p = 0; p < n; ++p)
        for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(mine[8 * static_cast<std::size_t>(p) + i], p + 0.5f);
      // Every worker read every peer: the same slots, version n (one put from each worker).
      for (int p = 0; p < n; ++p) {
        std::vector<float> got(8 * static_cast<std::size_t>(n));
        std::uint64_t version = 0;
        window.get(p, mview(got), 0, &version).wait();
        EXPECT_EQ(got, mine);
        EXPECT_EQ(version, static_cast<std::uint64_t>(n));
      }
      window.close();
    });
  }
}

// Two open windows of one worker under one name (or under names whose tag hash is the same) would
// share their messages' tags: the second is refused before it exchanges anything; once the first
// is closed, its name may be opened again.
TEST(Window, ASecondOpenWindowOfANameIsRefusedAndTheNameIsFreeAfterClose) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 30});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> a(4, 0.0f), b(4, 0.0f);
    Window first(comm, "w", mview(a));
    testing::expect_error<core::InvalidArgument>([&] { Window again(comm, "w", mview(b)); },
                                                 {"window 'w': this worker has a window of that name open already"});
    // FNV-1a: "glbvs" and "yacxa" hash to 0xa1bc9a4f.
    Window one(comm, "glbvs", mview(b));
    testing::expect_error<core::InvalidArgument>(
        [&] { Window other(comm, "yacxa", mview(b)); },
        {"window 'yacxa': its name's tag hash equals that of the open window 'glbvs'"});
    one.close();
    first.close();
    Window reopened(comm, "w", mview(b));  // collective as any window: every worker opens it again
    reopened.put(1 - ctx.rank(), cview(std::vector<float>{7.0f}), 0).wait();
    comm.barrier();
    EXPECT_EQ(b[0], 7.0f);
    reopened.close();
  });
}

TEST(Window, ConcurrentAccumulatesFromEveryActivityAllLand) {
  constexpr int n = 4;
  constexpr int per_activity = 200;
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<double> sum(3, 0.0);
    Window window(comm, "sum", MutableView(std::span<double>(sum)));
    auto hammer = [&](double value) {
      const std::vector<double> one(3, value);
      for (int k = 0; k < per_activity; ++k) window.accumulate(0, ConstView(std::span<const double>(one))).wait();
    };
    Work side = ctx.spawn("second", [&] { hammer(0.25); });
    hammer(1.0);
    side.wait();
    comm.barrier();
    if (ctx.rank() == 0) {
      // Closed form: n workers x per_activity x (1 + 0.25), exact in binary.
      for (double v : sum) EXPECT_EQ(v, n * per_activity * 1.25);
      EXPECT_EQ(window.local().version(), static_cast<std::uint64_t>(2 * n * per_activity));
    }
    window.close();
  });
}

TEST(Window, FetchAccumulateIsAnAtomicCounter) {
  constexpr int n = 4;
  constexpr int each = 100;
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<double> counter(1, 0.0);
    Window window(comm, "counter", MutableView(std::span<double>(counter)));
    std::vector<double> seen;
    const std::vector<double> one{1.0};
    for (int k = 0; k < each; ++k) {
      std::vector<double> before(1);
      window.fetch_accumulate(0, ConstView(std::span<const double>(one)), MutableView(std::span<double>(before)))
          .wait();
      seen.push_back(before[0]);
    }
    std::vector<double> all(static_cast<std::size_t>(n * each));
    comm.allgather(ConstView(std::span<const double>(seen)), MutableView(std::span<double>(all)));
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i)
      ASSERT_EQ(all[i], static_cast<double>(i)) << "value taken twice or skipped";
    window.close();
  });
}

// On threads and on sim (where the answer, which the runtime owns, moves into the receive posted
// before the request: Context::send_owned).
TEST(Window, FetchAverageReturnsTheOldValueAndAveragesInPlace) {
  const auto body = [](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> mine(4, 0.0f);
    if (ctx.rank() == 0) mine = {9.0f, 4.0f, 8.0f, -2.0f};
    std::vector<double> wide = ctx.rank() == 0 ? std::vector<double>{1.0, 0.1} : std::vector<double>(2, 0.0);
    Window window(comm, "avg", mview(mine));
    Window wide_window(comm, "avg64", MutableView(std::span<double>(wide)));
    if (ctx.rank() == 1) {
      const std::vector<float> src{2.0f, 0.0f, 2.0f};
      std::vector<float> before(3);
      window.fetch_average(0, cview(src), mview(before), 1).wait();
      EXPECT_EQ(before, (std::vector<float>{4.0f, 8.0f, -2.0f}));
      const std::vector<double> src64{0.0, 0.3};
      std::vector<double> before64(2);
      wide_window.fetch_average(0, ConstView(std::span<const double>(src64)), MutableView(std::span<double>(before64)))
          .wait();
      EXPECT_EQ(before64, (std::vector<double>{1.0, 0.1}));
      std::vector<float> wrong(2);
      testing::expect_error<core::InvalidArgument>([&] { window.fetch_average(0, cview(src), mview(wrong)).wait(); },
                                                   {"fetch_average", "2 x f32", "3 x f32"});
    }
    comm.barrier();
    if (ctx.rank() == 0) {
      EXPECT_EQ(mine, (std::vector<float>{9.0f, 3.0f, 4.0f, 0.0f}));  // element 0 outside the range
      EXPECT_EQ(wide[0], 0.5);
      EXPECT_EQ(wide[1], (0.1 + 0.3) * 0.5);
      EXPECT_EQ(window.local().version(), 1u);
    }
    wide_window.close();
    window.close();
  };
  runtime::threads::World({.size = 2, .op_timeout_seconds = 60}).run(body);
  runtime::sim::World({.size = 2, .cluster = testing::star_cluster(2)}).run(body);
}

// A get's reply, a block of the model's size that lives from the service's answer to its delivery,
// comes from the pool of page runs and goes back there whole (a snapshot evaluation reads every
// worker's replica in turn; from the heap, each reply's hole was split by other blocks before the
// next reply came). The only pooled block of the exchange: once the pool holds no idle run of the
// reply's length (this process may have pooled some before: another repetition of this test), the
// get leaves it exactly one more, of that length.
TEST(Window, AGetsReplyComesFromThePoolOfPageRunsAndGoesBackWhole) {
  constexpr std::size_t kCount = 300'017;  // 1.2 MB of f32, above core::kPageRunMinBytes
  runtime::sim::World({.size = 2, .cluster = testing::star_cluster(2)}).run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> mine(kCount, static_cast<float>(ctx.rank()) + 0.25f);
    Window window(comm, "replica", mview(mine));
    comm.barrier();
    if (ctx.rank() == 0) {
      const std::size_t run = core::pooled_pages_bytes(kCount * sizeof(float));
      std::vector<void*> drained;  // every idle run of that length, then one mapped anew
      for (bool idle_taken = true; idle_taken;) {
        const std::size_t idle = core::idle_pooled_bytes();
        drained.push_back(core::take_pooled_pages(run));
        idle_taken = core::idle_pooled_bytes() < idle;
      }
      const std::size_t idle_before = core::idle_pooled_bytes();
      std::vector<float> read(kCount, -1.0f);
      window.get(1, mview(read)).wait();
      EXPECT_EQ(read, std::vector<float>(kCount, 1.25f));
      EXPECT_EQ(core::idle_pooled_bytes() - idle_before, run);
      for (void* p : drained) core::give_pooled_pages(p, run);
    }
    comm.barrier();
    window.close();
  });
}

// Atomicity: every requester averages 0 into worker 0's 2^40, so each operation halves it. If two
// operations ever read the same value (a get and an accumulate that interleave), a power of two
// would be seen twice and another never.
TEST(Window, FetchAverageIsAtomicUnderConcurrentRequesters) {
  constexpr int n = 4;
  constexpr int each = 10;
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<double> value(1, ctx.rank() == 0 ? std::ldexp(1.0, 40) : 0.0);
    Window window(comm, "halving", MutableView(std::span<double>(value)));
    std::vector<double> seen;
    const std::vector<double> zero{0.0};
    for (int k = 0; k < each; ++k) {
      std::vector<double> before(1);
      window.fetch_average(0, ConstView(std::span<const double>(zero)), MutableView(std::span<double>(before))).wait();
      seen.push_back(before[0]);
    }
    std::vector<double> all(static_cast<std::size_t>(n * each));
    comm.allgather(ConstView(std::span<const double>(seen)), MutableView(std::span<double>(all)));
    std::sort(all.begin(), all.end(), std::greater<>());
    for (std::size_t i = 0; i < all.size(); ++i)
      ASSERT_EQ(all[i], std::ldexp(1.0, 40 - static_cast<int>(i))) << "value read twice or skipped";
    window.close();
  });
}

TEST(Window, BadRequestsAreRejectedBeforeAnythingIsSent) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> mine(ctx.rank() == 0 ? 10 : 4, 0.0f);
    Window window(comm, "params", mview(mine));
    if (ctx.rank() == 1) {
      const std::vector<float> five(5, 1.0f);
      testing::expect_error<core::InvalidArgument>([&] { window.put(0, cview(five), 6).wait(); },
                                                   {"window 'params'", "put", "[6, 11)", "worker 0", "10 elements"});
      const std::vector<double> d(2, 1.0);
      testing::expect_error<core::InvalidArgument>(
          [&] { window.accumulate(0, ConstView(std::span<const double>(d))).wait(); }, {"f64", "worker 0", "f32"});
      testing::expect_error<core::InvalidArgument>([&] { window.get(7, mview(mine)).wait(); }, {"7"});
    } else {  // each worker's own length: worker 1 exposes 4
      const std::vector<float> five(5, 1.0f);
      testing::expect_error<core::InvalidArgument>([&] { window.put(1, cview(five), 0).wait(); },
                                                   {"window 'params'", "put", "[0, 5)", "worker 1", "4 elements"});
    }
    comm.barrier();
    if (ctx.rank() == 0) {
      EXPECT_EQ(window.local().version(), 0u);  // nothing reached the owner
      EXPECT_EQ(mine, std::vector<float>(10, 0.0f));
    }
    window.close();
    testing::expect_error<core::InvalidArgument>([&] { window.get(0, mview(mine)).wait(); }, {"after close()"});
  });
}

// A request header that bypasses Window (a peer's garbage) is refused by the owner's service
// before it touches the exposed tensor; the service ends with the error, which close() reports at
// once (not after the operation time limit).
TEST(Window, AForgedRequestIsRefusedBeforeItTouchesTheTensor) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> mine(4, 1.0f);
    Window window(comm, "forged", mview(mine));
    if (ctx.rank() == 1) {
      std::uint32_t id = 2166136261u;  // window.hpp: the id is the FNV-1a hash of the name
      for (unsigned char c : std::string("forged")) id = (id ^ c) * 16777619u;
      auto words = wire::WindowRequest{.op = wire::WindowRequest::Op::put, .count = 4}.to_words();
      words[2] = -4;  // a negative count
      const runtime::Tag tag = runtime::make_tag(runtime::TagKind::window, id, 0xFFFFFF);
      ctx.send(0, tag, ConstView(std::span<const std::int64_t>(words))).wait();
    }
    if (ctx.rank() == 0) {
      testing::expect_error<core::InvalidArgument>([&] { window.close(); },
                                                   {"window request: offset and count: expected >= 0, got 0 and -4"});
      EXPECT_EQ(mine, std::vector<float>(4, 1.0f));
      EXPECT_EQ(window.local().version(), 0u);
    } else {
      window.close();
    }
  });
}

TEST(Window, RemoteOperationsWaitForTheOwnersLocalGuard) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> mine(4, 0.0f);
    Window window(comm, "guarded", mview(mine));
    if (ctx.rank() == 0) {
      {
        Window::Local local = window.local();
        comm.barrier();  // rank 1 now puts
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_EQ(mine, std::vector<float>(4, 0.0f)) << "a remote put entered while the owner held the lock";
        local.bump();
      }
      comm.barrier();
      EXPECT_EQ(mine, std::vector<float>(4, 3.0f));
      EXPECT_EQ(window.local().version(), 2u);  // the owner's bump and the put
    } else {
      comm.barrier();
      const std::vector<float> three(4, 3.0f);
      window.put(0, cview(three)).wait();
      comm.barrier();
    }
    window.close();
  });
}

}  // namespace
}  // namespace fast::collective
