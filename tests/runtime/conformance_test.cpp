// The runtime contract (include/fast/runtime/context.hpp), one suite for every backend: threads
// and sim in this process, zmq as 2 to 4 processes over ipc:// and tcp:// on loopback, mpi as 2
// to 4 ranks under mpirun. Each test is one worker function run by testing::run_world
// (tests/common/world_runner.hpp). The optional parts: conformance_optional_test.cpp; the end of a
// run that a worker's error ended: conformance_errors_test.cpp.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

#include "conformance.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/launcher.hpp"

namespace fast::runtime::conformance {
namespace {

TEST_P(Conformance, RanksSizeAndLocalWorkers) {
  const WorldCase c = GetParam();
  run([&](Context& ctx) {
    EXPECT_EQ(ctx.size(), c.workers);
    EXPECT_GE(ctx.rank(), 0);
    EXPECT_LT(ctx.rank(), c.workers);
    EXPECT_EQ(ctx.runtime_name(), c.runtime);
    EXPECT_EQ(ctx.local_size(), c.runtime == "zmq" ? c.workers_per_process : c.runtime == "mpi" ? 1 : c.workers);
    EXPECT_GE(ctx.now(), 0.0);
    for (int p = 0; p < ctx.size(); ++p) EXPECT_TRUE(ctx.alive(p));
    // Nobody leaves before everyone checked (a process that ended is no longer alive): every
    // worker hears from every other one after that one's checks.
    std::vector<float> out(1), in(1);  // distinct: a send may read its buffer until its Work completes
    std::vector<Work> sends;
    for (int p = 0; p < ctx.size(); ++p)
      if (p != ctx.rank()) sends.push_back(ctx.send(p, user_tag(0), cview(out)));
    for (int p = 0; p < ctx.size(); ++p)
      if (p != ctx.rank()) ctx.recv(p, user_tag(0), mview(in)).wait();
    core::wait_all(sends);
  });
}

// Every rank sends three messages under one tag and two under another to the next rank; they
// arrive in order per (peer, tag), whatever the order the receiver posts its receives in.
TEST_P(Conformance, MessagesOfOnePeerAndTagArriveInOrder) {
  run([](Context& ctx) {
    const int next = (ctx.rank() + 1) % ctx.size(), prev = (ctx.rank() + ctx.size() - 1) % ctx.size();
    // 4000 and 8000 bytes: under zmq the larger ones go through shared memory, the others not.
    const auto length = [](int i) { return static_cast<std::size_t>(1000 + 1000 * (i % 2)); };
    std::vector<std::vector<float>> out;
    for (int i = 0; i < 5; ++i) out.push_back(std::vector<float>(length(i), static_cast<float>(ctx.rank() * 100 + i)));
    std::vector<Work> sends;
    for (int i = 0; i < 5; ++i)
      sends.push_back(ctx.send(next, user_tag(i < 3 ? 1 : 2), cview(out[static_cast<std::size_t>(i)])));
    std::vector<std::vector<float>> in;
    for (int i = 0; i < 5; ++i) in.push_back(std::vector<float>(length(i)));
    ctx.recv(prev, user_tag(2), mview(in[3])).wait();  // the other tag first
    for (int i : {0, 1, 2}) ctx.recv(prev, user_tag(1), mview(in[static_cast<std::size_t>(i)])).wait();
    ctx.recv(prev, user_tag(2), mview(in[4])).wait();
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(in[static_cast<std::size_t>(i)][length(i) - 1], static_cast<float>(prev * 100 + i)) << i;
    core::wait_all(sends);
  });
}

// Every rank sends its data (64 KiB: large under every runtime) to every other rank and replaces
// it with new values through finish_sends_then_write, its receives posted but not waited for
// (a send may complete only once matched): every receiver gets the values sent and the sender
// ends with the new ones (Context::finish_sends_then_write; sim_payload_test covers receives
// posted after it).
TEST_P(Conformance, FinishSendsThenWriteKeepsTheValuesSentAndWritesTheNewOnes) {
  run([](Context& ctx) {
    constexpr std::size_t n = 16384;
    const auto sent_value = [](int rank, std::size_t i) { return static_cast<float>(rank * 100000 + i); };
    std::vector<float> data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = sent_value(ctx.rank(), i);
    // The new contents -x, written as x + 2 s with s = -x (from the old contents and the scratch).
    core::Buffer scratch(n, core::DType::f32);
    for (std::size_t i = 0; i < n; ++i) scratch.as<float>()[i] = -sent_value(ctx.rank(), i);
    std::vector<std::vector<float>> in(static_cast<std::size_t>(ctx.size()), std::vector<float>(n));
    std::vector<Work> recvs;
    for (int p = 0; p < ctx.size(); ++p)
      if (p != ctx.rank()) recvs.push_back(ctx.recv(p, user_tag(9), mview(in[static_cast<std::size_t>(p)])));
    std::vector<Work> sends;
    for (int p = 0; p < ctx.size(); ++p)
      if (p != ctx.rank()) sends.push_back(ctx.send(p, user_tag(9), cview(data)));
    const std::span<const float> old(data), s = scratch.as<float>();
    ctx.finish_sends_then_write(sends, mview(data), scratch, [old, s](core::MutableView out_view) {
      const std::span<float> out = out_view.as<float>();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = old[i] + 2.0f * s[i];
    });
    core::wait_all(recvs);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(data[i], -sent_value(ctx.rank(), i)) << i;
    for (int p = 0; p < ctx.size(); ++p) {
      if (p == ctx.rank()) continue;
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(in[static_cast<std::size_t>(p)][i], sent_value(p, i)) << "from " << p << " at " << i;
    }
  });
}

// recv_each_then: each rank sends A (its values) to the next rank and B = -A to the one after,
// then receives from the previous two ranks at once (with 2 ranks, B goes to the sender itself,
// and the peers are the other rank and itself). reduce sees, in peers order, exactly what was sent, of 1.2 MB each
// (past sim's threshold for reading on a compute thread). (A sender that changes its memory before
// the receive: sim_payload_test.)
TEST_P(Conformance, RecvEachThenHandsEveryMessageInPeersOrder) {
  run([](Context& ctx) {
    constexpr std::size_t n = 300001;
    const int r = ctx.rank(), size = ctx.size();
    const auto value = [](int rank, std::size_t i) { return static_cast<float>(rank * 1000003 + i) + 0.5f; };
    std::vector<float> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = value(r, i);
      b[i] = -value(r, i);
    }
    std::vector<Work> sends;
    sends.push_back(ctx.send((r + 1) % size, user_tag(12), cview(a)));
    sends.push_back(ctx.send((r + 2) % size, user_tag(12), cview(b)));
    const int peers[] = {(r - 1 + size) % size, (r - 2 + 2 * size) % size};
    int calls = 0;
    ctx.recv_each_then(peers, user_tag(12), core::DType::f32, n, [&](std::span<const core::ConstView> in) {
      ++calls;
      ASSERT_EQ(in.size(), 2u);
      for (std::size_t k = 0; k < 2; ++k) {
        ASSERT_EQ(in[k].dtype(), core::DType::f32);
        ASSERT_EQ(in[k].numel(), n);
      }
      const std::span<const float> from_a = in[0].as<float>(), from_b = in[1].as<float>();
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(from_a[i], value(peers[0], i)) << i;
        ASSERT_EQ(from_b[i], -value(peers[1], i)) << i;
      }
    });
    EXPECT_EQ(calls, 1);
    core::wait_all(sends);
  });
}

// A message of another length fails recv_each_then naming the sender and both lengths, and
// reduce is not called.
TEST_P(Conformance, RecvEachThenRefusesAMessageOfAnotherLengthNamingItsSender) {
  run([](Context& ctx) {
    if (ctx.rank() == 0) {
      std::vector<float> v(3, 1.f);
      ctx.send(1, user_tag(13), cview(v)).wait();
    } else if (ctx.rank() == 1) {
      const int peers[] = {0};
      bool called = false;
      try {
        ctx.recv_each_then(peers, user_tag(13), core::DType::f32, 4,
                           [&](std::span<const core::ConstView>) { called = true; });
        ADD_FAILURE() << "recv_each_then did not fail";
      } catch (const core::InvalidArgument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("from rank 0"), std::string::npos) << what;
        EXPECT_NE(what.find("3 x f32"), std::string::npos) << what;
        EXPECT_NE(what.find("4 x f32"), std::string::npos) << what;
      }
      EXPECT_FALSE(called);
    }
  });
}

// 48 messages of 64 KiB to the next rank before it receives any, three times: 3 MiB each time.
// Under zmq a 1 MiB ring fills (the rest waits for room), is released as the receives take
// the payloads and wraps around; every payload arrives intact and in order.
TEST_P(Conformance, ManyLargeMessagesBeforeAnyReceiveArriveIntactAndInOrder) {
  run([](Context& ctx) {
    const int next = (ctx.rank() + 1) % ctx.size(), prev = (ctx.rank() + ctx.size() - 1) % ctx.size();
    constexpr int kMessages = 48;
    constexpr std::size_t kLength = 16384;  // floats: 64 KiB
    const auto value = [](int rank, int round, int i, std::size_t k) {
      return static_cast<float>(rank * 100000 + round * 1000 + i) + static_cast<float>(k % 7) * 0.125f;
    };
    for (int round = 0; round < 3; ++round) {
      std::vector<std::vector<float>> out(kMessages, std::vector<float>(kLength));
      for (int i = 0; i < kMessages; ++i)
        for (std::size_t k = 0; k < kLength; ++k) out[static_cast<std::size_t>(i)][k] = value(ctx.rank(), round, i, k);
      std::vector<Work> sends;
      for (int i = 0; i < kMessages; ++i)
        sends.push_back(ctx.send(next, user_tag(20), cview(out[static_cast<std::size_t>(i)])));
      std::vector<float> in(kLength);
      for (int i = 0; i < kMessages; ++i) {
        ctx.recv(prev, user_tag(20), mview(in)).wait();
        for (std::size_t k : {std::size_t{0}, std::size_t{1}, kLength / 2 + 3, kLength - 1})
          ASSERT_EQ(in[k], value(prev, round, i, k)) << "round " << round << ", message " << i << ", element " << k;
      }
      core::wait_all(sends);
    }
  });
}

// Under one tag, small messages around ones larger than the zmq suite's 1 MiB rings: there the
// small ones go through shared memory as one record each and the large ones in parts of a quarter
// of the ring; every message still arrives in the order sent, so each exact-size receive posted in
// that order matches (a message out of order would fail one with a size mismatch).
TEST_P(Conformance, AMessageTooLargeForSharedMemoryKeepsItsPlaceAmongSmallOnes) {
  run([](Context& ctx) {
    const int next = (ctx.rank() + 1) % ctx.size(), prev = (ctx.rank() + ctx.size() - 1) % ctx.size();
    const std::vector<std::size_t> lengths = {1000, 2000, 512 * 1024, 3000, 1500, 768 * 1024, 10};  // floats
    for (int round = 0; round < 2; ++round) {
      std::vector<std::vector<float>> out;
      for (std::size_t i = 0; i < lengths.size(); ++i)
        out.push_back(
            std::vector<float>(lengths[i], static_cast<float>(ctx.rank() * 1000 + round * 100 + static_cast<int>(i))));
      std::vector<Work> sends;
      for (const auto& v : out) sends.push_back(ctx.send(next, user_tag(30), cview(v)));
      for (std::size_t i = 0; i < lengths.size(); ++i) {
        std::vector<float> in(lengths[i]);
        ctx.recv(prev, user_tag(30), mview(in)).wait();
        EXPECT_EQ(in.front(), static_cast<float>(prev * 1000 + round * 100 + static_cast<int>(i))) << round << " " << i;
        EXPECT_EQ(in.back(), in.front()) << round << " " << i;
      }
      core::wait_all(sends);
    }
  });
}

// A large message (4 MiB: the zero-copy path of zmq) and Combine::sum: rank 0 receives every
// other rank's vector added into its own.
TEST_P(Conformance, RecvSumAddsLargeMessagesIntoTheDestination) {
  run([](Context& ctx) {
    constexpr std::size_t n = 1 << 20;
    if (ctx.rank() != 0) {
      std::vector<float> mine(n, static_cast<float>(ctx.rank()));
      ctx.send(0, user_tag(3), cview(mine)).wait();
      return;
    }
    std::vector<float> acc(n, 0.5f);
    for (int p = 1; p < ctx.size(); ++p) ctx.recv(p, user_tag(3), mview(acc), Combine::sum).wait();
    const float expected = 0.5f + static_cast<float>(ctx.size() * (ctx.size() - 1) / 2);
    EXPECT_EQ(acc[0], expected);
    EXPECT_EQ(acc[n - 1], expected);
  });
}

// Messages whose every element differs, of odd lengths around the zmq suite's 1 MiB rings (sent
// there in parts of 256 KiB, the last one shorter), copied and added: every element arrives in
// its place, twice over, with messages of other ranks interleaved at rank 0.
TEST_P(Conformance, LargeMessagesArriveWholeElementByElement) {
  run([](Context& ctx) {
    const std::vector<std::size_t> lengths = {65537, 262145, 1000003};  // doubles: 0.5, 2 and 8 MB
    for (std::size_t n : lengths) {
      const auto value = [](int rank, std::size_t i) { return static_cast<double>(i) * 0.25 + rank * 1e7; };
      if (ctx.rank() != 0) {
        std::vector<double> mine(n);
        for (std::size_t i = 0; i < n; ++i) mine[i] = value(ctx.rank(), i);
        Work copy = ctx.send(0, user_tag(40), core::ConstView(std::span<const double>(mine)));
        Work sum = ctx.send(0, user_tag(41), core::ConstView(std::span<const double>(mine)));
        copy.wait();
        sum.wait();
        continue;
      }
      std::vector<double> acc(n, 1.0);
      for (int p = 1; p < ctx.size(); ++p) {
        std::vector<double> got(n);
        ctx.recv(p, user_tag(40), core::MutableView(std::span<double>(got))).wait();
        ctx.recv(p, user_tag(41), core::MutableView(std::span<double>(acc)), Combine::sum).wait();
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += got[i] != value(p, i);
        EXPECT_EQ(wrong, 0u) << n << " doubles from rank " << p;
      }
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i) {
        double want = 1.0;
        for (int p = 1; p < ctx.size(); ++p) want += value(p, i);
        wrong += acc[i] != want;
      }
      EXPECT_EQ(wrong, 0u) << n << " doubles, summed";
    }
  });
}

TEST_P(Conformance, ReceiveOfAnySizeTakesTheMessagesDtypeAndLength) {
  run([](Context& ctx) {
    const int next = (ctx.rank() + 1) % ctx.size(), prev = (ctx.rank() + ctx.size() - 1) % ctx.size();
    std::vector<double> out(static_cast<std::size_t>(ctx.rank() + 3));
    std::iota(out.begin(), out.end(), 0.25);
    Work s = ctx.send(next, user_tag(4), core::ConstView(std::span<const double>(out)));
    core::Buffer in;
    ctx.recv(prev, user_tag(4), in).wait();
    EXPECT_EQ(in.dtype(), core::DType::f64);
    ASSERT_EQ(in.numel(), static_cast<std::size_t>(prev + 3));
    EXPECT_EQ(in.as<double>()[static_cast<std::size_t>(prev + 2)], prev + 2.25);
    s.wait();
  });
}

TEST_P(Conformance, RecvAnyTakesEverySenderAndNamesIt) {
  run([](Context& ctx) {
    if (ctx.rank() != 0) {
      std::vector<float> v{static_cast<float>(ctx.rank())};
      ctx.send(0, user_tag(5), cview(v)).wait();
      return;
    }
    std::set<int> sources;
    for (int i = 1; i < ctx.size(); ++i) {
      core::Buffer out;
      int source = -1;
      ctx.recv_any(user_tag(5), out, source).wait();
      EXPECT_EQ(out.as<float>()[0], static_cast<float>(source));
      sources.insert(source);
    }
    EXPECT_EQ(static_cast<int>(sources.size()), ctx.size() - 1);
  });
}

// try_recv: "would block" before the message is sent, the message once it arrived.
TEST_P(Conformance, TryRecvWouldBlockThenReceives) {
  run([](Context& ctx) {
    if (ctx.rank() == 1) {
      std::vector<float> go(1);
      ctx.recv(0, user_tag(6, 1), mview(go)).wait();  // rank 0 tried first
      std::vector<float> v{42.f, 43.f};
      ctx.send(0, user_tag(6), cview(v)).wait();
    } else if (ctx.rank() == 0) {
      std::vector<float> v(2);
      EXPECT_FALSE(ctx.try_recv(1, user_tag(6), mview(v)).has_value());
      std::vector<float> go{1.f};
      ctx.send(1, user_tag(6, 1), cview(go)).wait();
      std::optional<std::size_t> got;
      for (int i = 0; i < 20000 && !got; ++i) {
        got = ctx.try_recv(1, user_tag(6), mview(v));
        if (!got) ctx.sleep(0.001);
      }
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(*got, 2u);
      EXPECT_EQ(v, (std::vector<float>{42.f, 43.f}));
    }
  });
}

// A mismatch of length or dtype fails the receiver with InvalidArgument naming both; its
// destination is unchanged.
TEST_P(Conformance, MismatchFailsTheReceiverNamingBothSizes) {
  run([](Context& ctx) {
    if (ctx.rank() == 0) {
      std::vector<float> v(3, 1.f);
      try {
        ctx.send(1, user_tag(7), cview(v)).wait();
      } catch (const core::InvalidArgument&) {  // the threads runtime also fails the sender
      }
    } else if (ctx.rank() == 1) {
      std::vector<float> v(4, 9.f);
      try {
        ctx.recv(0, user_tag(7), mview(v)).wait();
        ADD_FAILURE() << "the receive did not fail";
      } catch (const core::InvalidArgument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find('3'), std::string::npos) << what;
        EXPECT_NE(what.find('4'), std::string::npos) << what;
      }
      EXPECT_EQ(v, std::vector<float>(4, 9.f));
    }
  });
}

// send_owned: each rank sends the next rank an owned buffer (400 KB, large under every runtime) and
// drops its own pointer at once, twice: into a receive the receiver posted before the send (it
// tells the sender so), with Combine::sum, and into one posted after the sender said it sent.
// A third buffer of another length fails the receiver's posted receive with InvalidArgument,
// its destination unchanged.
TEST_P(Conformance, SendOwnedDeliversABufferItsSenderLetGoOf) {
  run([](Context& ctx) {
    constexpr std::size_t n = 100000;
    const int next = (ctx.rank() + 1) % ctx.size(), prev = (ctx.rank() + ctx.size() - 1) % ctx.size();
    const auto value = [](int rank, std::size_t i) { return static_cast<float>(i % 4096) + 0.25f * rank; };
    const auto owned = [&](std::size_t length) {
      auto b = std::make_shared<core::Buffer>(length, core::DType::f32);
      for (std::size_t i = 0; i < length; ++i) b->as<float>()[i] = value(ctx.rank(), i);
      return std::shared_ptr<const core::Buffer>(std::move(b));
    };
    std::vector<float> token(1, 1.0f), heard(1);
    // 1. Posted first, adding into 0.5.
    std::vector<float> first(n, 0.5f);
    Work posted = ctx.recv(prev, user_tag(50), mview(first), Combine::sum);
    Work told = ctx.send(prev, user_tag(51), cview(token));
    ctx.recv(next, user_tag(51), mview(heard)).wait();  // next has posted its receive
    Work sent = ctx.send_owned(next, user_tag(50), owned(n));
    posted.wait();
    sent.wait();
    told.wait();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(first[i], value(prev, i) + 0.5f) << i;
    // 2. Posted after the sender said it sent.
    sent = ctx.send_owned(next, user_tag(52), owned(n));
    told = ctx.send(next, user_tag(53), cview(token));
    ctx.recv(prev, user_tag(53), mview(heard)).wait();
    std::vector<float> second(n);
    ctx.recv(prev, user_tag(52), mview(second)).wait();
    sent.wait();
    told.wait();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(second[i], value(prev, i)) << i;
    // 3. Another length into a posted receive.
    std::vector<float> third(n + 1, -2.0f);
    posted = ctx.recv(prev, user_tag(54), mview(third));
    told = ctx.send(prev, user_tag(55), cview(token));
    ctx.recv(next, user_tag(55), mview(heard)).wait();
    sent = ctx.send_owned(next, user_tag(54), owned(n));
    try {
      posted.wait();
      ADD_FAILURE() << "a receive of " << n + 1 << " elements took a message of " << n;
    } catch (const core::InvalidArgument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::to_string(n) + " x"), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(n + 1) + " x"), std::string::npos) << what;
    }
    try {
      sent.wait();
    } catch (const core::InvalidArgument&) {  // the threads runtime also fails the sender
    }
    told.wait();
    EXPECT_EQ(third, std::vector<float>(n + 1, -2.0f));
    EXPECT_THROW((void)ctx.send_owned(next, user_tag(56), nullptr), core::InvalidArgument);
  });
}

TEST_P(Conformance, SpawnedActivitiesShareMutexAndCondVarAndReportErrors) {
  run([](Context& ctx) {
    std::unique_ptr<Mutex> m = ctx.make_mutex();
    std::unique_ptr<CondVar> cv = ctx.make_condvar();
    int value = 0;
    Work a = ctx.spawn("setter", [&] {
      ctx.sleep(0.01);
      std::lock_guard<Mutex> lock(*m);
      value = ctx.rank() + 1;
      cv->notify_all();
    });
    {
      std::unique_lock<Mutex> lock(*m);
      while (value == 0) cv->wait(lock);
    }
    a.wait();
    EXPECT_EQ(value, ctx.rank() + 1);
    Work b = ctx.spawn("thrower", [] { throw core::InvalidUsage("activity error"); });
    EXPECT_THROW(b.wait(), core::InvalidUsage);
  });
}

// compute_overlapped runs the work before it returns (sim: on its compute threads, 0 = the cores),
// lets the flops' time pass as compute() does, and rethrows the work's error in the caller.
TEST_P(Conformance, ComputeOverlappedRunsTheWorkAndRethrowsItsError) {
  run([](Context& ctx) {
    const int rank = ctx.rank();
    int ran = 0;
    const double before = ctx.now();
    ctx.compute_overlapped(1e6, [&] { ran = rank + 1; });
    EXPECT_EQ(ran, rank + 1);
    EXPECT_GE(ctx.now(), before);
    EXPECT_THROW(ctx.compute_overlapped(1e6, [] { throw core::InvalidUsage("work error"); }), core::InvalidUsage);
  });
}

// A wait with a time limit returns false; a receive never matched ends with TimeoutError after
// the operation time limit.
TEST_P(Conformance, WaitsTimeOut) {
  run(
      [](Context& ctx) {
        std::vector<float> v(1);
        const int next = (ctx.rank() + 1) % ctx.size(), prev = (ctx.rank() + ctx.size() - 1) % ctx.size();
        Work w = ctx.recv(next, user_tag(9), mview(v));
        EXPECT_FALSE(w.wait(0.05));
        EXPECT_THROW(w.wait(), core::TimeoutError);
        // Nobody leaves before everyone has timed out (a process that left is a lost peer).
        std::vector<float> token(1);
        Work s = ctx.send(next, user_tag(9, 1), cview(token));
        ctx.recv(prev, user_tag(9, 1), mview(v)).wait();
        s.wait();
      },
      {.op_timeout_seconds = 0.5});
}

// The last worker dies (zmq: SIGKILL of its process; sim: its host is turned off at 1 s); every
// other worker's receive from it ends with PeerLost naming it, and sends to it throw PeerLost.
// Under zmq it dies in the middle of sending worker 0 a large message whose receive is posted (its
// process SIGKILLs itself a few milliseconds into a 128 MiB send, cut inside a ring's parts or a
// stream's record): that receive too ends with PeerLost naming it, never hangs and never completes
// with part of the message (had the whole message arrived before the kill, on a very fast host,
// the receive holds all of it).
TEST_P(Conformance, ALostPeerFailsOperationsWithPeerLostNamingIt) {
  const WorldCase c = GetParam();
  if (c.runtime == "threads") GTEST_SKIP() << "threads cannot lose a worker: a failing worker aborts the world";
  if (c.runtime == "mpi")
    GTEST_SKIP() << "mpi is fail-stop: a dead rank makes mpirun end the job (mpi_cli_test checks that every rank "
                    "then ends with an error naming why)";
  LaunchOptions options{.op_timeout_seconds = 60, .tolerate_lost_workers = true};
  std::filesystem::path cluster;
  if (c.runtime == "sim") {
    cluster = std::filesystem::temp_directory_path() / ("fast_conformance_" + std::to_string(getpid()) + ".toml");
    std::ofstream(cluster) << "[hosts]\ncount = " << c.workers << "\n[[failures]]\nhost = " << c.workers - 1
                           << "\noff = 1.0\n";
    options.cluster = cluster;
  }
  const int victim = c.workers - 1;
  constexpr std::size_t kBigFloats = std::size_t{32} << 20;  // 128 MiB
  auto fn = [&](Context& ctx) {
    const bool zmq = ctx.runtime_name() == "zmq";
    std::vector<float> token(1);
    if (ctx.rank() == victim) {
      if (zmq) {
        ctx.recv(0, user_tag(11), mview(token)).wait();  // worker 0's receive is posted
        std::vector<float> big(kBigFloats, 3.0f);
        std::thread([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
          ::raise(SIGKILL);
        }).detach();
        ctx.send(0, user_tag(11, 1), cview(big)).wait();
        ::raise(SIGKILL);
      }
      ctx.sleep(100);
      return;
    }
    if (zmq && ctx.rank() == 0) {
      std::vector<float> big(kBigFloats, 0.0f);
      Work w = ctx.recv(victim, user_tag(11, 1), mview(big));
      ctx.send(victim, user_tag(11), cview(token)).wait();
      try {
        w.wait();
        EXPECT_EQ(std::count(big.begin(), big.end(), 3.0f), static_cast<std::ptrdiff_t>(kBigFloats))
            << "the receive completed with part of the message";
      } catch (const core::PeerLost& e) {
        EXPECT_NE(std::string(e.what()).find("worker " + std::to_string(victim)), std::string::npos) << e.what();
      }
    }
    std::vector<float> v(1);
    try {
      ctx.recv(victim, user_tag(10), mview(v)).wait();
      ADD_FAILURE() << "the receive from the lost worker completed";
    } catch (const core::PeerLost& e) {
      EXPECT_NE(std::string(e.what()).find("worker " + std::to_string(victim)), std::string::npos) << e.what();
    }
    EXPECT_FALSE(ctx.alive(victim));
    EXPECT_THROW(ctx.send(victim, user_tag(10), cview(v)).wait(), core::PeerLost);
  };
  if (c.runtime != "zmq" || testing::is_test_child()) {
    testing::run_world(c, fn, options);
  } else {
    testing::ExpectedEnd killed;
    for (int p = (victim / c.workers_per_process); p <= victim / c.workers_per_process; ++p) killed[p] = SIGKILL;
    testing::run_world(c, fn, options, killed, {{"FAST_PEER_TIMEOUT", "1.5"}}, 60);
  }
  if (!cluster.empty()) std::filesystem::remove(cluster);
}

}  // namespace

std::vector<WorldCase> cases() {
  const std::vector<std::string> built = runtime_names();
  const auto has = [&](const char* name) { return std::find(built.begin(), built.end(), name) != built.end(); };
  std::vector<WorldCase> all;
  for (int n : {2, 3, 4}) all.push_back({"threads", n});
  if (has("sim"))
    for (int n : {2, 3, 4}) all.push_back({"sim", n});
  if (has("zmq")) {
    // ipc with the default shared-memory ring (8 MiB), tcp with a 1 MiB one that fills up and wraps
    // around (and takes messages larger than itself in parts), worlds without shared memory (data through the
    // direct streams, which the waiting workers read; with 2 processes the streams' threads also read large
    // messages alongside them; with 3 each large message is sealed and opened on 2 helper threads, and
    // no waiter polls: the streams' threads read every message), one with rings and no waiter polling
    // (the rings' reader threads deliver every record), and one without shared memory or CURVE
    // (--insecure: every chunk checksummed).
    for (int n : {2, 3, 4}) all.push_back({"zmq", n, "ipc"});
    for (int n : {2, 3, 4}) all.push_back({"zmq", n, "tcp", 1, 1 << 20});
    all.push_back({"zmq", 2, "tcp", 1, 0, false, -1, 1});
    all.push_back({"zmq", 3, "tcp", 1, 0, false, 2, -1, 0});
    all.push_back({"zmq", 3, "ipc", 1, -1, false, -1, -1, 0});
    all.push_back({"zmq", 3, "tcp", 1, 0, true});
    all.push_back({"zmq", 4, "ipc", 2});  // two processes of two workers
  }
  if (has("mpi"))
    for (int n : {2, 3, 4}) all.push_back({"mpi", n});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Runtimes, Conformance, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace fast::runtime::conformance
