// The sim runtime's Context::compute_overlapped: the work runs (on the compute pool's threads when
// there are several, so the workers' computations overlap in real time), its exception reaches the
// worker, a worker lost during the simulated execution still gets PeerLost once its work ended, and
// the simulated times and the messages every worker sees are the same for any number of threads,
// also for works of no simulated time and for large messages, which are delivered on the pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "compute_pool.hpp"  // src/runtime/sim: compute_threads
#include "fast/core/error.hpp"
#include "fast/runtime/sim/world.hpp"

namespace fast::runtime {
namespace {

// Hosts of 1, 2, 3, ... Gflop/s on a star.
Cluster graded_star(int hosts) {
  Cluster c;
  c.hosts = hosts;
  for (int h = 0; h < hosts; ++h) c.speeds.push_back(1e9 * (h + 1));
  c.bandwidth = 1e8;
  c.latency = 1e-3;
  return c;
}

double run_with_threads(int workers, int threads, Cluster cluster, const WorkerFn& fn, bool tolerate_lost = false) {
  sim::World world(
      {.size = workers, .cluster = std::move(cluster), .tolerate_lost = tolerate_lost, .compute_threads = threads});
  return world.run(fn);
}

// What a worker saw: its clock after each step and the value it received from its predecessor.
struct Trace {
  std::vector<double> times;
  std::vector<double> received;
};

// Each of 6 workers takes 3 steps: a work (a sum over its own vector) with flops that differ by
// rank and step, then the result goes to the next worker in a ring.
std::vector<Trace> ring_of_steps(int threads) {
  constexpr int n = 6;
  std::vector<Trace> traces(n);
  run_with_threads(n, threads, graded_star(n), [&](Context& ctx) {
    const int r = ctx.rank();
    std::vector<double> mine(1000, static_cast<double>(r + 1));
    Trace& trace = traces[static_cast<std::size_t>(r)];
    for (int step = 0; step < 3; ++step) {
      double sum = 0;
      ctx.compute_overlapped(1e8 * ((r + step) % 4 + 1), [&] {
        for (double& x : mine) x = x * 0.5 + 1;
        for (double x : mine) sum += x;
      });
      trace.times.push_back(ctx.now());
      const Tag tag = make_tag(TagKind::user, 20, static_cast<std::uint32_t>(step));
      std::vector<double> got(1);
      Work in = ctx.recv((r + n - 1) % n, tag, core::MutableView(std::span<double>(got)));
      ctx.send((r + 1) % n, tag, core::ConstView(std::span<const double>(&sum, 1))).wait();
      in.wait();
      trace.received.push_back(got[0]);
      trace.times.push_back(ctx.now());
    }
  });
  return traces;
}

TEST(SimComputeOverlapped, ResultsAndTimesDoNotDependOnTheThreads) {
  const std::vector<Trace> inline_run = ring_of_steps(1);
  // Closed form of the first step: rank r computes 1e8 * (r % 4 + 1) flops at (r + 1) Gflop/s, and
  // receives from r - 1 the sum 1000 * ((r' + 1) / 2 + 1), r' = r - 1 mod 6.
  for (int r = 0; r < 6; ++r) {
    const auto& t = inline_run[static_cast<std::size_t>(r)];
    ASSERT_EQ(t.times.size(), 6u);
    EXPECT_NEAR(t.times[0], 1e8 * (r % 4 + 1) / (1e9 * (r + 1)), 1e-12) << r;
    const int from = (r + 5) % 6;
    EXPECT_EQ(t.received[0], 1000.0 * ((from + 1) / 2.0 + 1)) << r;
  }
  for (int threads : {2, 3, 6}) {
    const std::vector<Trace> pooled = ring_of_steps(threads);
    for (std::size_t r = 0; r < 6; ++r) {
      // SimGrid's clock runs on from one run of a process to the next and now() is measured from
      // each run's start, so the times agree to rounding only; the data exactly.
      ASSERT_EQ(pooled[r].times.size(), inline_run[r].times.size());
      for (std::size_t k = 0; k < pooled[r].times.size(); ++k)
        EXPECT_NEAR(pooled[r].times[k], inline_run[r].times[k], 1e-9) << threads << " threads, rank " << r;
      EXPECT_EQ(pooled[r].received, inline_run[r].received) << threads << " threads, rank " << r;
    }
  }
}

// Two workers whose works (of `flops` each) wait for each other, up to 20 s: they meet only if they
// run at the same time. Returns how many met, and each worker's clock afterwards.
int works_that_meet(double flops, std::vector<double>& at) {
  std::atomic<int> arrived{0};
  std::atomic<int> met{0};
  at.assign(2, -1);
  run_with_threads(2, 2, graded_star(2), [&](Context& ctx) {
    ctx.compute_overlapped(flops, [&] {
      arrived.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (arrived.load() == 2) met.fetch_add(1);
    });
    at[static_cast<std::size_t>(ctx.rank())] = ctx.now();
  });
  return met.load();
}

TEST(SimComputeOverlapped, WorksOfSeveralWorkersRunAtTheSameTime) {
  std::vector<double> at;
  EXPECT_EQ(works_that_meet(1e9, at), 2);
  EXPECT_NEAR(at[0], 1.0, 1e-12);  // 1e9 flops at 1 Gflop/s
  EXPECT_NEAR(at[1], 0.5, 1e-12);  // and at 2 Gflop/s
}

// The same with works of no simulated time (an optimizer's step): each worker lets the others of
// the instant run before it waits for its work, so the works meet, and the clock stays at 0.
TEST(SimComputeOverlapped, WorksOfNoSimulatedTimeRunAtTheSameTimeToo) {
  std::vector<double> at;
  EXPECT_EQ(works_that_meet(0, at), 2);
  EXPECT_EQ(at, std::vector<double>(2, 0.0));
}

// Messages of 64 KiB and more (sim's kBesideBytes) are copied or added on the compute threads while
// the receivers of the same instant go on: 4 workers each send 2 large vectors around a ring, the second added
// to the first (Combine::sum), then change their own vector at once; what each received, and when,
// does not depend on the threads.
std::vector<std::vector<float>> large_ring(int threads, std::vector<double>& times) {
  constexpr int n = 4;
  constexpr std::size_t len = (std::size_t{256} << 10) / sizeof(float);  // 256 KiB
  std::vector<std::vector<float>> got(n);
  times.assign(n, -1);
  run_with_threads(n, threads, graded_star(n), [&](Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> mine(len);
    for (std::size_t i = 0; i < len; ++i) mine[i] = static_cast<float>(r * 1000 + i % 977) * 0.25f;
    std::vector<float>& in = got[static_cast<std::size_t>(r)];
    in.assign(len, -1.0f);
    for (std::uint32_t k = 0; k < 2; ++k) {
      const Tag tag = make_tag(TagKind::user, 21, k);
      Work send = ctx.send((r + 1) % n, tag, core::ConstView(std::span<const float>(mine)));
      Work recv = ctx.recv((r + n - 1) % n, tag, core::MutableView(std::span<float>(in)),
                           k == 0 ? Combine::copy : Combine::sum);
      recv.wait();
      send.wait();
      for (float& x : mine) x += 1.0f;  // the neighbour's copy or addition must be over by now
    }
    times[static_cast<std::size_t>(r)] = ctx.now();
  });
  return got;
}

TEST(SimComputeOverlapped, LargeMessagesDeliveredOnTheComputeThreadsGiveTheSameBytes) {
  std::vector<double> inline_times;
  const std::vector<std::vector<float>> inline_run = large_ring(1, inline_times);
  for (int r = 0; r < 4; ++r) {  // closed form: the predecessor's vector, then it plus one, summed
    const int from = (r + 3) % 4;
    const std::vector<float>& in = inline_run[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < in.size(); i += 4099) {
      const float x = static_cast<float>(from * 1000 + i % 977) * 0.25f;
      ASSERT_EQ(in[i], x + (x + 1.0f)) << r << " " << i;
    }
  }
  for (int threads : {2, 4}) {
    std::vector<double> times;
    EXPECT_EQ(large_ring(threads, times), inline_run) << threads;
    for (std::size_t r = 0; r < 4; ++r) EXPECT_NEAR(times[r], inline_times[r], 1e-9) << threads << " " << r;
  }
}

TEST(SimComputeOverlapped, TheWorksExceptionReachesTheWorker) {
  for (int threads : {1, 2}) {
    std::vector<std::string> seen(2);
    std::vector<double> at(2, -1);
    run_with_threads(2, threads, graded_star(2), [&](Context& ctx) {
      const auto r = static_cast<std::size_t>(ctx.rank());
      try {
        ctx.compute_overlapped(1e9, [&] {
          if (r == 1) throw core::InvalidArgument("work of worker 1 failed");
        });
        seen[r] = "none";
      } catch (const core::InvalidArgument& e) {
        seen[r] = e.what();
      }
      at[r] = ctx.now();
    });
    EXPECT_EQ(seen[0], "none") << threads;
    EXPECT_NE(seen[1].find("work of worker 1 failed"), std::string::npos) << threads << ": " << seen[1];
    EXPECT_NEAR(at[0], 1.0, 1e-12) << threads;  // 1e9 flops at 1 Gflop/s
    // Inline, the work fails before the flops are declared; on the pool, after they were simulated.
    EXPECT_NEAR(at[1], threads == 1 ? 0.0 : 0.5, 1e-12) << threads;
  }
}

TEST(SimComputeOverlapped, AWorkerLostDuringTheComputeGetsPeerLostAfterItsWork) {
  for (int threads : {1, 2}) {
    Cluster c = graded_star(2);
    c.failures.push_back({.host = 1, .off = 0.25});
    std::atomic<bool> work_done{false};
    std::string lost;
    run_with_threads(
        2, threads, c,
        [&](Context& ctx) {
          if (ctx.rank() == 0) return;
          try {
            ctx.compute_overlapped(1e9, [&] {  // 0.5 s at 2 Gflop/s: the host goes off at 0.25 s
              std::this_thread::sleep_for(std::chrono::milliseconds(50));
              work_done = true;
            });
          } catch (const core::PeerLost& e) {
            lost = e.what();
            throw;
          }
        },
        /*tolerate_lost=*/true);
    EXPECT_TRUE(work_done.load()) << threads;
    EXPECT_NE(lost.find("worker 1 (host host-1) was lost at 0.25 s"), std::string::npos) << threads << ": " << lost;
  }
}

TEST(SimComputeThreads, ZeroMeansTheCoresAndNeverMoreThanTheWorkers) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(sim::compute_threads(3, 8), 3);
  EXPECT_EQ(sim::compute_threads(16, 4), 4);
  EXPECT_EQ(sim::compute_threads(1, 64), 1);
  EXPECT_EQ(sim::compute_threads(5, 1), 1);
  EXPECT_GE(sim::compute_threads(0, 1024), 1);
  EXPECT_LE(sim::compute_threads(0, 1024), std::max(cores, 1));
  EXPECT_EQ(sim::compute_threads(0, 1), 1);
  EXPECT_THROW(sim::compute_threads(-1, 4), core::InvalidArgument);
}

}  // namespace
}  // namespace fast::runtime
