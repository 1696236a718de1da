#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "common/failing_worker.hpp"
#include "common/views.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/shared_rendezvous.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::runtime {
namespace {

using core::ConstView;
using core::MutableView;

using testing::cview;
using testing::mview;

TEST(ThreadsRuntime, RanksSizeAndClock) {
  std::atomic<int> rank_sum{0};
  threads::World world({.size = 5});
  world.run([&](Context& ctx) {
    EXPECT_EQ(ctx.size(), 5);
    EXPECT_EQ(ctx.runtime_name(), "threads");
    rank_sum += ctx.rank();
    const double t0 = ctx.now();
    ctx.sleep(0.01);
    EXPECT_GE(ctx.now() - t0, 0.01);
  });
  EXPECT_EQ(rank_sum.load(), 0 + 1 + 2 + 3 + 4);
}

TEST(ThreadsRuntime, SendBeforeAndAfterRecvDeliverInOrder) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 1, 0);
    if (ctx.rank() == 0) {
      std::vector<float> a{1, 2, 3}, b{4, 5, 6};
      Work wa = ctx.send(1, tag, cview(a));
      Work wb = ctx.send(1, tag, cview(b));
      wa.wait();
      wb.wait();
    } else {
      std::vector<float> x(3), y(3);
      ctx.recv(0, tag, mview(x)).wait();
      ctx.recv(0, tag, mview(y)).wait();
      EXPECT_EQ(x, (std::vector<float>{1, 2, 3}));  // FIFO per (source, tag)
      EXPECT_EQ(y, (std::vector<float>{4, 5, 6}));
    }
  });
}

TEST(ThreadsRuntime, RecvSumAddsIntoDestination) {
  threads::World world({.size = 3});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 2, 7);
    if (ctx.rank() == 0) {
      std::vector<double> acc{10.0, 20.0};
      MutableView view{std::span<double>(acc)};
      Work w1 = ctx.recv(1, tag, view, Combine::sum);
      w1.wait();
      Work w2 = ctx.recv(2, tag, view, Combine::sum);
      w2.wait();
      EXPECT_DOUBLE_EQ(acc[0], 10.0 + 1.0 + 2.0);
      EXPECT_DOUBLE_EQ(acc[1], 20.0 + 2.0 + 4.0);
    } else {
      std::vector<double> mine{1.0 * ctx.rank(), 2.0 * ctx.rank()};
      ctx.send(0, tag, ConstView(std::span<const double>(mine))).wait();
    }
  });
}

// The contract (context.hpp): the receiver fails; the send completes locally, as on every backend.
TEST(ThreadsRuntime, LengthMismatchFailsTheReceiverWithBothSizes) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 3, 0);
    std::vector<float> v(ctx.rank() == 0 ? 4 : 5);
    Work w = ctx.rank() == 0 ? ctx.send(1, tag, cview(v)) : ctx.recv(0, tag, mview(v));
    if (ctx.rank() == 0) {
      EXPECT_NO_THROW(w.wait());
      return;
    }
    try {
      w.wait();
      ADD_FAILURE() << "rank " << ctx.rank() << " did not see the mismatch";
    } catch (const core::InvalidArgument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("sent 4 x f32, receiver expects 5 x f32"), std::string::npos) << what;
    }
  });
}

TEST(ThreadsRuntime, TryRecvWouldBlockIsEmpty) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 4, 0);
    constexpr Tag go = make_tag(TagKind::user, 4, 1);
    std::vector<float> v(2);
    if (ctx.rank() == 1) {
      EXPECT_FALSE(ctx.try_recv(0, tag, mview(v)).has_value());
      ctx.send(0, go, cview(v)).wait();  // only now may rank 0 send
      std::optional<std::size_t> got;
      while (!(got = ctx.try_recv(0, tag, mview(v)))) ctx.sleep(0.001);
      EXPECT_EQ(*got, 2u);
      EXPECT_EQ(v[1], 8.f);
    } else {
      ctx.recv(1, go, mview(v)).wait();
      std::vector<float> payload{7, 8};
      ctx.send(1, tag, cview(payload)).wait();
    }
  });
}

TEST(ThreadsRuntime, RecvIntoBufferTakesAnySizeAndType) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 5, 0);
    if (ctx.rank() == 0) {
      std::vector<std::int64_t> v(1000);
      std::iota(v.begin(), v.end(), 0);
      ctx.send(1, tag, ConstView(std::span<const std::int64_t>(v))).wait();
    } else {
      core::Buffer out;
      ctx.recv(0, tag, out).wait();
      ASSERT_EQ(out.dtype(), core::DType::i64);
      ASSERT_EQ(out.numel(), 1000u);
      EXPECT_EQ(out.as<std::int64_t>()[999], 999);
      EXPECT_EQ(ctx.link_stats(0).bytes_received, 8000u);
    }
  });
}

TEST(ThreadsRuntime, RecvAnyTakesEveryPeerOnceAndNamesTheSource) {
  // Every rank but 0 sends its rank (as many times as its rank) to rank 0; rank 0 takes them all
  // with receives from any source, posted before and after the sends, and counts per source.
  threads::World world({.size = 5});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 7, 0);
    if (ctx.rank() != 0) {
      const std::vector<std::int64_t> me{ctx.rank()};
      for (int k = 0; k < ctx.rank(); ++k) ctx.send(0, tag, ConstView(std::span<const std::int64_t>(me))).wait();
      return;
    }
    std::vector<int> count(5, 0);
    for (int m = 0; m < 1 + 2 + 3 + 4; ++m) {
      core::Buffer out;
      int source = -7;
      ctx.recv_any(tag, out, source).wait();
      ASSERT_GE(source, 1);
      ASSERT_EQ(out.numel(), 1u);
      EXPECT_EQ(out.as<std::int64_t>()[0], source);
      ++count[static_cast<std::size_t>(source)];
    }
    EXPECT_EQ(count, (std::vector<int>{0, 1, 2, 3, 4}));
    for (int p = 1; p < 5; ++p) EXPECT_EQ(ctx.link_stats(p).messages_received, static_cast<std::uint64_t>(p));
  });
}

TEST(ThreadsRuntime, RecvAnyLeavesMessagesForASpecificReceiveFirst) {
  // A send goes to a receive posted for its own source before one posted for any source, and a
  // receive from any source takes sends in the order they were queued.
  threads::World world({.size = 3});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 8, 0);
    constexpr Tag go = make_tag(TagKind::user, 9, 0);
    std::vector<float> token(1, 0.0f);
    if (ctx.rank() == 0) {
      core::Buffer any;
      int source = -1;
      Work a = ctx.recv_any(tag, any, source);
      std::vector<float> from2(1);
      Work b = ctx.recv(2, tag, mview(from2));
      ctx.send(2, go, cview(token)).wait();  // now rank 2 sends: it must land in b, not a
      b.wait();
      EXPECT_EQ(from2[0], 2.0f);
      EXPECT_FALSE(a.is_completed());
      ctx.send(1, go, cview(token)).wait();
      a.wait();
      EXPECT_EQ(source, 1);
      EXPECT_EQ(any.as<float>()[0], 1.0f);
    } else {
      ctx.recv(0, go, mview(token)).wait();
      const std::vector<float> me{static_cast<float>(ctx.rank())};
      ctx.send(0, tag, cview(me)).wait();
    }
  });
}

TEST(ThreadsRuntime, LinkStatsCountBytesPerPeer) {
  threads::World world({.size = 3});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 6, 0);
    std::vector<float> v(100);
    if (ctx.rank() == 0) {
      ctx.send(1, tag, cview(v)).wait();
      ctx.send(2, tag, ConstView(std::span<const float>(v.data(), 10))).wait();
      std::vector<float> self(5);
      Work to_self = ctx.send(0, tag, ConstView(std::span<const float>(v.data(), 5)));
      ctx.recv(0, tag, mview(self)).wait();
      to_self.wait();
      EXPECT_EQ(ctx.link_stats(1).bytes_sent, 400u);
      EXPECT_EQ(ctx.link_stats(2).bytes_sent, 40u);
      EXPECT_EQ(ctx.bytes_sent(), 440u);  // the 20 bytes to itself cross no link
    } else {
      std::vector<float> in(ctx.rank() == 1 ? 100 : 10);
      ctx.recv(0, tag, mview(in)).wait();
    }
  });
}

TEST(ThreadsRuntime, WorkerFailureReleasesBlockedPeersAndIsRethrown) {
  fast::testing::expect_failure_releases_the_others(
      [](const WorkerFn& fn) { threads::World({.size = 3, .op_timeout_seconds = 30}).run(fn); },
      [](Context& ctx) {
        std::vector<float> v(4);
        ctx.recv(2, make_tag(TagKind::user, 7, 0), mview(v)).wait();  // never sent
      });
}

// interrupt_launches (a user's Ctrl-C in the Python binding): every wait of a world under way
// ends with RemoteError naming the message; so does the launch.
TEST(ThreadsRuntime, InterruptLaunchesEndsEveryWaitWithItsMessage) {
  constexpr const char* kWhy = "interrupted by the test";
  std::atomic<int> waiting{0};
  std::atomic<bool> ended{false};
  std::thread interrupter([&] {
    while (waiting.load() < 2 && !ended.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // both inside their waits, most likely
    interrupt_launches(kWhy);
  });
  std::vector<std::string> errors(2);
  try {  // without the interrupt: TimeoutError after op_timeout
    launch({.runtime = "threads", .workers = 2, .op_timeout_seconds = 30}, [&](Context& ctx) {
      std::vector<float> in(4);
      ++waiting;
      try {
        ctx.recv(1 - ctx.rank(), make_tag(TagKind::user, 9, 0), mview(in)).wait();  // never sent
      } catch (const core::RemoteError& e) {
        errors[static_cast<std::size_t>(ctx.rank())] = e.what();
        throw;
      }
    });
    ADD_FAILURE() << "launch returned normally";
  } catch (const core::RemoteError& e) {
    EXPECT_NE(std::string(e.what()).find(kWhy), std::string::npos) << e.what();
  }
  ended = true;
  interrupter.join();
  for (const std::string& e : errors) EXPECT_NE(e.find(kWhy), std::string::npos) << e;
}

TEST(ThreadsRuntime, UnmatchedRecvTimesOut) {
  threads::World world({.size = 2, .op_timeout_seconds = 0.2});
  EXPECT_THROW(world.run([](Context& ctx) {
    std::vector<float> v(1);
    if (ctx.rank() == 0) ctx.recv(1, make_tag(TagKind::user, 8, 0), mview(v)).wait();
  }),
               core::TimeoutError);
}

// A collective among the workers of the process that one worker never joins: the time limit
// names the worker, its collective and what it waited for, as the user meets them.
TEST(ThreadsRuntime, SharedCollectiveTimeoutNamesTheWorkerAndWhatItWaitedFor) {
  threads::World world({.size = 2, .op_timeout_seconds = 0.2});
  try {
    world.run([](Context& ctx) {
      if (ctx.rank() != 1) return;
      SharedRendezvous* board = ctx.shared_rendezvous();
      ASSERT_NE(board, nullptr);
      int mine = 0;
      board->meet(board->reserve(), &mine);
    });
    ADD_FAILURE() << "the collective that worker 0 never joined did not time out";
  } catch (const core::TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "worker 1's collective 0 (waiting for every worker to arrive) did not complete within 0.2 s"),
              std::string::npos)
        << e.what();
  }
}

TEST(ThreadsRuntime, ExplicitWaitTimeoutReturnsFalseThenCompletes) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 9, 0);
    constexpr Tag go = make_tag(TagKind::user, 9, 1);
    std::vector<float> v(1);
    if (ctx.rank() == 0) {
      Work w = ctx.recv(1, tag, mview(v));
      EXPECT_FALSE(w.wait(0.01));
      EXPECT_FALSE(w.is_completed());
      ctx.send(1, go, cview(v)).wait();
      w.wait();
      EXPECT_EQ(v[0], 42.f);
    } else {
      std::vector<float> g(1);
      ctx.recv(0, go, mview(g)).wait();
      std::vector<float> x{42.f};
      ctx.send(0, tag, cview(x)).wait();
    }
  });
}

TEST(ThreadsRuntime, DroppingAnUnstartedWorkCancelsIt) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 10, 0);
    constexpr Tag go = make_tag(TagKind::user, 10, 1);
    std::vector<float> v(1);
    if (ctx.rank() == 0) {
      {
        std::vector<float> gone{1.f};
        Work dropped = ctx.send(1, tag, cview(gone));
      }  // cancelled: rank 1 must not receive from freed memory
      std::vector<float> kept{2.f};
      Work w = ctx.send(1, tag, cview(kept));
      ctx.send(1, go, cview(v)).wait();
      w.wait();
    } else {
      ctx.recv(0, go, mview(v)).wait();
      ctx.recv(0, tag, mview(v)).wait();
      EXPECT_EQ(v[0], 2.f);
    }
  });
}

TEST(ThreadsRuntime, SpawnedActivityRunsConcurrentlyAndReportsErrors) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 11, 0);
    const int peer = 1 - ctx.rank();
    std::vector<float> in(1), out{static_cast<float>(ctx.rank())};
    // Both ranks receive in an activity while the main activity sends: no deadlock.
    Work recv = ctx.spawn("receiver", [&] { ctx.recv(peer, tag, mview(in)).wait(); });
    ctx.send(peer, tag, cview(out)).wait();
    recv.wait();
    EXPECT_EQ(in[0], static_cast<float>(peer));
    Work bad = ctx.spawn("bad", [] { throw core::InvalidUsage("bad activity"); });
    EXPECT_THROW(bad.wait(), core::InvalidUsage);
  });
}

TEST(ThreadsRuntime, BadPeerIsInvalidArgument) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    std::vector<float> v(1);
    EXPECT_THROW(ctx.send(2, 0, cview(v)), core::InvalidArgument);
    EXPECT_THROW(ctx.recv(-1, 0, mview(v)), core::InvalidArgument);
  });
}

TEST(Launcher, UnknownRuntimeListsAllowedNames) {
  try {
    launch({.runtime = "carrier-pigeon", .workers = 2}, [](Context&) {});
    FAIL() << "no throw";
  } catch (const core::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of: threads"), std::string::npos) << e.what();
  }
  EXPECT_THROW(launch({.runtime = "threads", .workers = 0}, [](Context&) {}), core::InvalidArgument);
}

}  // namespace
}  // namespace fast::runtime
