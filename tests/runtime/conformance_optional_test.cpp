// The runtime contract's optional parts (include/fast/runtime/context.hpp), in the suite of
// conformance_test.cpp: native collectives (mpi), the shared address space (threads), one-sided
// memory (mpi), what a message between two workers costs (zmq) and vacant ranks of a run that may
// grow (runtimes that take new processes: zmq).
// Every runtime runs each test; one that does not offer the part skips it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <functional>
#include <vector>

#include "conformance.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/native_collectives.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/runtime/remote_memory.hpp"
#include "fast/runtime/shared_rendezvous.hpp"

namespace fast::runtime::conformance {
namespace {

// What a message between two workers costs (Context::pair_network_model): the same answer for
// every pair on every worker, and one only where the runtime's data between the two does not go
// through shared memory: zmq's workers of two processes without rings (FAST_SHM_BYTES=0). None
// within a process, between processes on rings, nor on the other runtimes.
TEST_P(Conformance, APairsMessageCostIsTheSameOnEveryWorkerAndOnlyWithoutSharedMemory) {
  const WorldCase c = GetParam();
  run([&](Context& ctx) {
    const int n = ctx.size();
    std::vector<float> mine;  // per ordered pair: its latency in microseconds, or -1 where there is none
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        const auto model = ctx.pair_network_model(a, b);
        mine.push_back(model ? static_cast<float>(model->latency_seconds * 1e6) : -1.0f);
        const bool other_process = a / c.workers_per_process != b / c.workers_per_process;
        EXPECT_EQ(model.has_value(), c.runtime == "zmq" && c.shm_bytes == 0 && other_process)
            << "workers " << a << " and " << b;
        EXPECT_TRUE(!model || (model->latency_seconds > 0 && model->bandwidth_bytes_per_second > 0));
      }
    if (ctx.rank() != 0) {
      ctx.send(0, user_tag(0), cview(mine)).wait();
      return;
    }
    for (int p = 1; p < n; ++p) {
      std::vector<float> theirs(mine.size());
      ctx.recv(p, user_tag(0), mview(theirs)).wait();
      EXPECT_EQ(theirs, mine) << "worker " << p << " against worker 0";
    }
  });
}

// Native collectives (mpi): a rank inside one still serves its peers' point-to-point requests,
// which they may need before they can join it. Rank 0 enters a barrier at once; an activity of
// rank 0 answers each other rank's request (sent 0.1 s later, while rank 0 waits in the barrier)
// with 128 KiB (an in-place send under mpi, completed by the progress thread), and only then do the
// others join the barrier. A rank that did not serve would leave rank 1 waiting until its 30 s
// operation limit.
TEST_P(Conformance, ARankInsideANativeCollectiveStillServesItsPeers) {
  if (GetParam().runtime != "mpi") GTEST_SKIP() << "only the mpi runtime offers native collectives";
  run(
      [](Context& ctx) {
        NativeCollectives* native = ctx.native_collectives();
        ASSERT_NE(native, nullptr);
        constexpr std::size_t kAnswer = 32768;  // floats
        if (ctx.rank() == 0) {
          Work answers = ctx.spawn("answers", [&] {
            for (int p = 1; p < ctx.size(); ++p) {
              int source = -1;
              core::Buffer any;
              ctx.recv_any(user_tag(30), any, source).wait();
              ASSERT_EQ(any.numel(), 1u);
              const float asked = any.view().as<float>()[0];
              EXPECT_EQ(asked, static_cast<float>(source * 10));
              const std::vector<float> answer(kAnswer, asked + 1);
              ctx.send(source, user_tag(31), cview(answer)).wait();
            }
          });
          native->barrier(native->reserve());
          answers.wait();
          return;
        }
        ctx.sleep(0.1);
        const std::vector<float> request(1, static_cast<float>(ctx.rank() * 10));
        Work sent = ctx.send(0, user_tag(30), cview(request));
        std::vector<float> answer(kAnswer);
        ctx.recv(0, user_tag(31), mview(answer)).wait();
        sent.wait();
        EXPECT_EQ(answer.front(), static_cast<float>(ctx.rank() * 10 + 1));
        EXPECT_EQ(answer.back(), static_cast<float>(ctx.rank() * 10 + 1));
        native->barrier(native->reserve());
      },
      {.op_timeout_seconds = 30});
}

// Native collectives (mpi) with FAST_CHECK_COLLECTIVES=1 whose calls differ between the ranks
// (MPI_Allreduce alone would end one rank with MPI_ERR_TRUNCATE and return a wrong sum on the
// others; a broadcast or all-gather of the same bytes under another dtype would pass,
// reinterpreted): every rank gets the same InvalidArgument naming the lengths, dtypes, roots or
// collectives, and the next agreeing collective still runs. The variable is set here, so that
// mpirun's ranks inherit it.
TEST_P(Conformance, NativeCollectivesWhoseCallsDifferFailOnEveryRank) {
  if (GetParam().runtime != "mpi") GTEST_SKIP() << "only the mpi runtime offers native collectives";
  ::setenv("FAST_CHECK_COLLECTIVES", "1", 1);
  struct Unset {
    ~Unset() { ::unsetenv("FAST_CHECK_COLLECTIVES"); }
  } unset;
  run([](Context& ctx) {
    NativeCollectives* native = ctx.native_collectives();
    ASSERT_NE(native, nullptr);
    const auto refused = [&](const std::function<void()>& call, const std::vector<std::string>& named) {
      try {
        call();
        ADD_FAILURE() << "rank " << ctx.rank() << ": the call was not refused";
      } catch (const core::InvalidArgument& e) {
        for (const std::string& part : named) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      }
    };
    const std::size_t mine = 4 + static_cast<std::size_t>(ctx.rank() > 0);
    std::vector<float> longer(mine, 1.f);
    const std::string widest = "to 5 elements";
    refused([&] { native->allreduce_sum(native->reserve(), mview(longer)); }, {"lengths from 4", widest});
    std::vector<double> as_f64(4, 1.0);
    std::vector<float> as_f32(4, 1.f);
    refused(
        [&] {
          if (ctx.rank() == 0)
            native->allreduce_sum(native->reserve(), core::MutableView(std::span<double>(as_f64)));
          else
            native->allreduce_sum(native->reserve(), mview(as_f32));
        },
        {"dtypes from f32 to f64"});
    std::vector<std::int32_t> as_i32(4, 1);  // a dtype MPI_Allreduce is not given: refused on every rank too
    refused(
        [&] {
          if (ctx.rank() == 0)
            native->allreduce_sum(native->reserve(), core::MutableView(std::span<std::int32_t>(as_i32)));
          else
            native->allreduce_sum(native->reserve(), mview(as_f32));
        },
        {"dtypes from f32 to i32"});
    refused([&] { native->broadcast(native->reserve(), mview(as_f32), ctx.rank() == 0 ? 0 : 1); }, {"roots from 0 to 1"});
    // The same bytes under another dtype: broadcast and all-gather too (they passed, reinterpreted).
    refused(
        [&] {
          if (ctx.rank() == 0)
            native->broadcast(native->reserve(), mview(as_f32), 0);
          else
            native->broadcast(native->reserve(), core::MutableView(std::span<std::int32_t>(as_i32)), 0);
        },
        {"dtypes from f32 to i32"});
    std::vector<float> gathered_f32(4 * static_cast<std::size_t>(ctx.size()));
    std::vector<std::int32_t> gathered_i32(gathered_f32.size());
    refused(
        [&] {
          if (ctx.rank() == 0)
            native->allgather(native->reserve(), core::ConstView(std::span<const float>(as_f32)), mview(gathered_f32));
          else
            native->allgather(native->reserve(), core::ConstView(std::span<const std::int32_t>(as_i32)),
                              core::MutableView(std::span<std::int32_t>(gathered_i32)));
        },
        {"dtypes from f32 to i32"});
    refused(
        [&] {
          if (ctx.rank() == 0)
            native->barrier(native->reserve());
          else
            native->allreduce_sum(native->reserve(), mview(as_f32));
        },
        {"called different collectives at the same point"});
    std::vector<float> sum(3, static_cast<float>(ctx.rank() + 1));
    native->allreduce_sum(native->reserve(), mview(sum));
    const float expected = static_cast<float>(ctx.size() * (ctx.size() + 1) / 2);
    EXPECT_EQ(sum, std::vector<float>(3, expected));
  });
}

// The shared address space (threads only: the other runtimes' workers do not share memory and
// offer none). Each worker publishes an array, writes its rank's slot of every worker's array
// between meet and leave, and after leave finds every slot of its own written; three uses in a
// row reuse the board.
TEST_P(Conformance, TheSharedRendezvousJoinsEveryWorkersMemoryWhereOffered) {
  const bool offered = GetParam().runtime == "threads";
  run([offered](Context& ctx) {
    SharedRendezvous* board = ctx.shared_rendezvous();
    if (!offered) {
      EXPECT_EQ(board, nullptr) << ctx.runtime_name() << " offers a shared address space";
      return;
    }
    ASSERT_NE(board, nullptr);
    const int n = ctx.size();
    for (int use = 0; use < 3; ++use) {
      std::vector<int> mine(static_cast<std::size_t>(n), -1);
      const std::uint64_t ticket = board->reserve();
      EXPECT_EQ(ticket, static_cast<std::uint64_t>(use));
      void* const* all = board->meet(ticket, mine.data());
      for (int r = 0; r < n; ++r) static_cast<int*>(all[r])[ctx.rank()] = 10 * ctx.rank() + use;
      board->leave(ticket);
      for (int r = 0; r < n; ++r) EXPECT_EQ(mine[static_cast<std::size_t>(r)], 10 * r + use) << "slot " << r;
    }
  });
}

// One-sided memory (mpi only: MPI RMA). Every worker exposes eight i64 slots; two activities of
// every worker add 1 to worker 0's slot 0 forty times each by a read-modify-write under acquire,
// counting in worker 0's counter, so a lost update would show; every worker writes its rank into
// the next worker's slot 1 + rank and reads it back; worker 0 also stores into its own memory
// directly while it holds itself. A range outside the owner's bytes is refused before anything
// moves. Writes count as bytes sent to the owner in the writer's link statistics.
TEST_P(Conformance, OneSidedMemoryIsExclusiveAndCountsWhereOffered) {
  const bool offered = GetParam().runtime == "mpi";
  run(
      [offered](Context& ctx) {
        RemoteMemory* memory = ctx.remote_memory();
        if (!offered) {
          EXPECT_EQ(memory, nullptr) << ctx.runtime_name() << " offers one-sided memory";
          return;
        }
        ASSERT_NE(memory, nullptr);
        const int n = ctx.size(), r = ctx.rank(), next = (r + 1) % n;
        constexpr int kAdds = 40;
        std::vector<std::int64_t> mine(8, -1);
        mine[0] = 0;
        std::unique_ptr<RemoteRegion> region = memory->expose(mine.data(), mine.size() * sizeof(std::int64_t));
        if (region == nullptr) {  // this machine's MPI has no one-sided component (its warning says why)
          std::printf("one-sided memory not checked: MPI offers none on this machine\n");
          return;
        }
        const std::uint64_t sent_before = ctx.link_stats(next).bytes_sent;
        auto adder = [&] {
          for (int i = 0; i < kAdds; ++i) {
            std::int64_t value = 0;
            region->acquire(0);
            region->read(0, 0, &value, sizeof(value));
            ++value;
            region->write(0, 0, &value, sizeof(value));
            region->add_to_counter(0, 1);
            region->release(0);
          }
        };
        Work other = ctx.spawn("adder", adder);
        adder();
        other.wait();
        const std::int64_t me = r;
        region->acquire(next);
        region->write(next, sizeof(std::int64_t) * static_cast<std::size_t>(1 + r), &me, sizeof(me));
        region->release(next);
        std::int64_t back = -1;
        region->acquire(next);
        region->read(next, sizeof(std::int64_t) * static_cast<std::size_t>(1 + r), &back, sizeof(back));
        EXPECT_THROW(region->read(next, 8 * sizeof(std::int64_t) - 4, &back, 8), core::InvalidArgument);
        region->release(next);
        EXPECT_EQ(back, r);
        EXPECT_EQ(ctx.link_stats(next).bytes_sent - sent_before,
                  sizeof(std::int64_t) * (next == 0 ? 2 * kAdds + 1 : 1));
        // Everyone is done before worker 0 looks: a message to 0, its answer after the checks.
        std::vector<float> token(1);
        if (r != 0) {
          ctx.send(0, user_tag(40), cview(token)).wait();
          ctx.recv(0, user_tag(41), mview(token)).wait();
        } else {
          for (int p = 1; p < n; ++p) ctx.recv(p, user_tag(40), mview(token)).wait();
          region->acquire(0);
          EXPECT_EQ(mine[0], 2 * kAdds * n) << "an update was lost";
          EXPECT_EQ(region->add_to_counter(0, 0), static_cast<std::uint64_t>(2 * kAdds * n));
          mine[7] = 77;  // the owner's own store while it holds itself
          region->release(0);
          for (int p = 1; p < n; ++p) ctx.send(p, user_tag(41), cview(token)).wait();
        }
        std::int64_t seen = 0;
        region->acquire(0);
        region->read(0, 7 * sizeof(std::int64_t), &seen, sizeof(seen));
        region->release(0);
        EXPECT_EQ(seen, 77);
        region->acquire(r);  // the previous worker's write, through this worker's own memory
        EXPECT_EQ(mine[static_cast<std::size_t>(1 + (r + n - 1) % n)], (r + n - 1) % n);
        region->release(r);
        region->close();
      },
      {.op_timeout_seconds = 30});
}

// Shared acquisitions (readers) never overlap an exclusive one: one activity of every rank
// rewrites worker 0's whole 1 MiB region with one value (read-modify-write of its first element,
// then every element) while another reads the whole region under a shared acquisition; every read
// finds a single value, never a region half written. (Without the readers' lock the reads tear.)
TEST_P(Conformance, OneSidedReadersNeverSeeAHalfWrittenRegion) {
  const bool offered = GetParam().runtime == "mpi";
  run(
      [offered](Context& ctx) {
        RemoteMemory* memory = ctx.remote_memory();
        ASSERT_EQ(memory != nullptr, offered) << ctx.runtime_name();
        if (!offered) return;
        std::vector<float> mine(262144, 0.0f);
        std::unique_ptr<RemoteRegion> region = memory->expose(mine.data(), mine.size() * sizeof(float));
        if (region == nullptr) {
          std::printf("one-sided memory not checked: MPI offers none on this machine\n");
          return;
        }
        const std::size_t bytes = mine.size() * sizeof(float);
        Work writer = ctx.spawn("writer", [&] {
          std::vector<float> next(mine.size());
          for (int i = 0; i < 30; ++i) {
            region->acquire(0);
            float value = 0;
            region->read(0, 0, &value, sizeof(value));
            std::fill(next.begin(), next.end(), value + 1.0f);
            region->write(0, 0, next.data(), bytes);
            region->release(0);
          }
        });
        std::vector<float> seen(mine.size());
        int torn = 0;
        for (int i = 0; i < 60; ++i) {
          region->acquire(0, RemoteRegion::Access::shared);
          region->read(0, 0, seen.data(), bytes);
          region->release(0);
          torn += std::count(seen.begin(), seen.end(), seen[0]) != static_cast<std::ptrdiff_t>(seen.size()) ? 1 : 0;
        }
        writer.wait();
        EXPECT_EQ(torn, 0) << "reads that found two values at once";
        std::vector<float> token(1);  // everyone is done before anyone frees the region
        if (ctx.rank() != 0) {
          ctx.send(0, user_tag(42), cview(token)).wait();
          ctx.recv(0, user_tag(43), mview(token)).wait();
        } else {
          for (int p = 1; p < ctx.size(); ++p) ctx.recv(p, user_tag(42), mview(token)).wait();
          region->acquire(0);
          EXPECT_EQ(mine[0], 30.0f * static_cast<float>(ctx.size()));
          region->release(0);
          for (int p = 1; p < ctx.size(); ++p) ctx.send(p, user_tag(43), cview(token)).wait();
        }
        region->close();
      },
      {.op_timeout_seconds = 30});
}

// A run that may grow (ProcessOptions::max_workers; runtimes that take new processes): the ranks
// past the starting processes' are vacant. The world counts them; from the start they are not
// alive, a send to one and a receive from one fail with PeerLost naming it, and each of its
// workers is one membership event marked vacant (and before_join: no metrics record); the
// starting workers exchange as usual, and the run ends cleanly without them.
TEST_P(Conformance, VacantRanksOfARunThatMayGrowAreLostFromTheStart) {
  const WorldCase c = GetParam();
  if (!find_runtime(c.runtime).takes_new_processes)
    GTEST_SKIP() << c.runtime << " takes no new process into a run under way: it has no vacant ranks";
  LaunchOptions options{.op_timeout_seconds = 30, .tolerate_lost_workers = true};
  options.process.max_workers = c.workers + 2 * c.workers_per_process;
  run(
      [&c](Context& ctx) {
        ASSERT_EQ(ctx.size(), c.workers + 2 * c.workers_per_process);
        std::vector<float> v(4, static_cast<float>(ctx.rank()));
        for (int r = c.workers; r < ctx.size(); ++r) {
          EXPECT_FALSE(ctx.alive(r)) << "vacant rank " << r;
          for (const bool sending : {true, false}) {
            try {
              (sending ? ctx.send(r, user_tag(1), cview(v)) : ctx.recv(r, user_tag(2), mview(v))).wait();
              ADD_FAILURE() << (sending ? "a send to" : "a receive from") << " vacant rank " << r << " completed";
            } catch (const core::PeerLost& e) {
              EXPECT_NE(std::string(e.what()).find("worker " + std::to_string(r)), std::string::npos) << e.what();
              EXPECT_NE(std::string(e.what()).find("vacant"), std::string::npos) << e.what();
            }
          }
        }
        int vacant_events = 0;
        for (const MembershipEvent& e : ctx.membership_events()) {
          EXPECT_TRUE(e.vacant && e.before_join && !e.joined && e.worker >= c.workers) << e.worker << " " << e.detail;
          vacant_events += e.vacant ? 1 : 0;
        }
        EXPECT_EQ(vacant_events, 2 * c.workers_per_process);
        // The starting workers: a ring among them.
        const int n = c.workers;
        std::vector<float> got(4);
        Work in = ctx.recv((ctx.rank() + n - 1) % n, user_tag(3), mview(got));
        ctx.send((ctx.rank() + 1) % n, user_tag(3), cview(v)).wait();
        in.wait();
        EXPECT_EQ(got[0], static_cast<float>((ctx.rank() + n - 1) % n));
      },
      options);
}

}  // namespace
}  // namespace fast::runtime::conformance
