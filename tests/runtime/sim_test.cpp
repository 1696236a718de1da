// The sim runtime: point-to-point semantics as the threads runtime's, and simulated times that
// match closed forms (CM02 without cross traffic: a message takes latency + bytes / bandwidth;
// compute takes flops / speed).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/views.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/channel.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/sim/world.hpp"

namespace fast::runtime {
namespace {

using core::ConstView;
using core::MutableView;

using testing::cview;
using testing::mview;

constexpr double kBandwidth = 1e8;  // bytes/s per host link
constexpr double kLatency = 1e-3;   // s per host link; host to host crosses two links

Cluster star(int hosts, std::vector<double> speeds = {}) {
  Cluster c;
  c.hosts = hosts;
  c.speeds = speeds.empty() ? std::vector<double>(static_cast<std::size_t>(hosts), 1e9) : speeds;
  c.bandwidth = kBandwidth;
  c.latency = kLatency;
  return c;
}

double run(int workers, Cluster cluster, const WorkerFn& fn, double op_timeout = -1) {
  sim::World world({.size = workers, .op_timeout_seconds = op_timeout, .cluster = std::move(cluster)});
  return world.run(fn);
}

TEST(SimRuntime, SleepAndComputeAdvanceTheSimulatedClock) {
  std::vector<double> after(3);
  const double elapsed = run(3, star(3, {1e9, 2e9, 4e9}), [&](Context& ctx) {
    EXPECT_EQ(ctx.runtime_name(), "sim");
    EXPECT_EQ(ctx.size(), 3);
    ctx.sleep(1.5);
    ctx.compute(4e9);  // 4, 2, 1 s
    after[static_cast<std::size_t>(ctx.rank())] = ctx.now();
  });
  EXPECT_NEAR(after[0], 5.5, 1e-9);
  EXPECT_NEAR(after[1], 3.5, 1e-9);
  EXPECT_NEAR(after[2], 2.5, 1e-9);
  EXPECT_NEAR(elapsed, 5.5, 1e-9);
}

TEST(SimRuntime, TransferTakesLatencyPlusBytesOverBandwidth) {
  constexpr std::size_t n = 250000;  // 1e6 bytes
  double sent_at = -1, received_at = -1;
  std::vector<float> got(n);
  run(2, star(2), [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 1, 0);
    if (ctx.rank() == 0) {
      std::vector<float> data(n, 2.5f);
      ctx.send(1, tag, cview(data)).wait();
      sent_at = ctx.now();
      EXPECT_EQ(ctx.link_stats(1).bytes_sent, n * 4);
    } else {
      ctx.recv(0, tag, mview(got)).wait();
      received_at = ctx.now();
      EXPECT_EQ(ctx.link_stats(0).bytes_received, n * 4);
      EXPECT_EQ(ctx.link_stats(0).messages_received, 1u);
    }
  });
  const double expected = 2 * kLatency + 1e6 / kBandwidth;  // 0.012 s
  EXPECT_NEAR(received_at, expected, 1e-9);
  EXPECT_NEAR(sent_at, expected, 1e-9);
  EXPECT_EQ(got.front(), 2.5f);
  EXPECT_EQ(got.back(), 2.5f);
}

TEST(SimRuntime, TwoFlowsIntoOneHostShareItsLink) {
  double done = -1;
  run(3, star(3), [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 2, 0);
    std::vector<float> data(250000, 1.0f);
    if (ctx.rank() > 0) {
      ctx.send(0, tag, cview(data)).wait();
    } else {
      std::vector<float> a(data.size()), b(data.size());
      Work wa = ctx.recv(1, tag, mview(a));
      Work wb = ctx.recv(2, tag, mview(b));
      wa.wait();
      wb.wait();
      done = ctx.now();
    }
  });
  EXPECT_NEAR(done, 2 * kLatency + 2e6 / kBandwidth, 1e-9);  // the receiver's link carries both
}

TEST(SimRuntime, PerPeerFifoAndSpecificSourceBeforeAnySource) {
  run(3, star(3), [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 3, 0);
    if (ctx.rank() == 0) {
      std::vector<float> a{1}, b{2};
      Work wa = ctx.send(2, tag, cview(a));
      Work wb = ctx.send(2, tag, cview(b));
      wa.wait();
      wb.wait();
    } else if (ctx.rank() == 1) {
      ctx.sleep(1.0);
      std::vector<float> c{3};
      ctx.send(2, tag, cview(c)).wait();
    } else {
      core::Buffer any;
      int source = -1;
      Work w_any = ctx.recv_any(tag, any, source);  // posted first, but rank 0's sends go to its own receives
      std::vector<float> x(1), y(1);
      Work wx = ctx.recv(0, tag, mview(x));
      Work wy = ctx.recv(0, tag, mview(y));
      wx.wait();
      wy.wait();
      w_any.wait();
      EXPECT_EQ(x[0], 1.0f);
      EXPECT_EQ(y[0], 2.0f);
      EXPECT_EQ(source, 1);
      EXPECT_EQ(any.as<float>()[0], 3.0f);
    }
  });
}

TEST(SimRuntime, RecvAnyTakesTheOldestQueuedMessage) {
  std::vector<int> order;
  run(3, star(3), [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 4, 0);
    if (ctx.rank() == 0) {
      ctx.sleep(5.0);
      for (int k = 0; k < 2; ++k) {
        core::Buffer out;
        int source = -1;
        ctx.recv_any(tag, out, source).wait();
        order.push_back(source);
      }
    } else {
      ctx.sleep(ctx.rank() == 2 ? 1.0 : 2.0);  // rank 2 sends first
      std::vector<float> v{static_cast<float>(ctx.rank())};
      ctx.send(0, tag, cview(v)).wait();
    }
  });
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

TEST(SimRuntime, TryRecvSeesOnlyArrivedMessages) {
  run(2, star(2), [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 5, 0);
    if (ctx.rank() == 0) {
      std::vector<float> v{7, 8};
      ctx.send(1, tag, cview(v)).wait();
    } else {
      std::vector<float> out(2, 0);
      EXPECT_EQ(ctx.try_recv(0, tag, mview(out)), std::nullopt);  // in flight: 2 ms + 8 bytes
      ctx.sleep(1.0);
      EXPECT_EQ(ctx.try_recv(0, tag, mview(out)), std::optional<std::size_t>(2));
      EXPECT_EQ(out[1], 8.0f);
      EXPECT_EQ(ctx.try_recv(0, tag, mview(out)), std::nullopt);
    }
  });
}

TEST(SimRuntime, AFailingWorkerReleasesTheOthersWithRemoteError) {
  bool remote = false;
  EXPECT_THROW(run(2, star(2),
                   [&](Context& ctx) {
                     if (ctx.rank() == 1) {
                       ctx.sleep(1.0);
                       throw core::InvalidArgument("worker 1 gives up");
                     }
                     std::vector<float> v(1);
                     try {
                       ctx.recv(1, make_tag(TagKind::user, 6, 0), mview(v)).wait();
                     } catch (const core::RemoteError& e) {
                       remote = std::string(e.what()).find("worker 1 gives up") != std::string::npos;
                       throw;
                     }
                   }),
               core::InvalidArgument);
  EXPECT_TRUE(remote);
}

// interrupt_launches (a user's Ctrl-C in the Python binding), from another thread: the next
// runtime call of a worker ends the simulation; every worker's wait throws RemoteError naming it.
TEST(SimRuntime, InterruptLaunchesEndsTheSimulationAtTheWorkersNextCall) {
  constexpr const char* kWhy = "interrupted by the test";
  std::atomic<bool> running{false}, ended{false};
  std::thread interrupter([&] {
    while (!running.load() && !ended.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    interrupt_launches(kWhy);
  });
  std::vector<std::string> errors(2);
  try {
    run(2, star(2), [&](Context& ctx) {
      try {
        if (ctx.rank() == 1) {  // busy in simulated sleeps for 20 s of real time, unless interrupted
          running = true;
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (std::chrono::steady_clock::now() < until) ctx.sleep(1e-3);
          return;
        }
        std::vector<float> v(1);
        ctx.recv(1, make_tag(TagKind::user, 6, 0), mview(v)).wait();  // never sent
      } catch (const core::RemoteError& e) {
        errors[static_cast<std::size_t>(ctx.rank())] = e.what();
        throw;
      }
    });
    ADD_FAILURE() << "the run ended normally";
  } catch (const core::RemoteError& e) {
    EXPECT_NE(std::string(e.what()).find(kWhy), std::string::npos) << e.what();
  }
  ended = true;
  interrupter.join();
  for (const std::string& e : errors) EXPECT_NE(e.find(kWhy), std::string::npos) << e;
}

TEST(SimRuntime, OperationsTimeOutInSimulatedSeconds) {
  double at = -1;
  EXPECT_THROW(run(
                   2, star(2),
                   [&](Context& ctx) {
                     if (ctx.rank() == 1) {  // alive past the limit, sending nothing
                       ctx.sleep(10.0);
                       return;
                     }
                     std::vector<float> v(1);
                     try {
                       ctx.recv(1, make_tag(TagKind::user, 7, 0), mview(v)).wait();
                     } catch (const core::TimeoutError&) {
                       at = ctx.now();
                       throw;
                     }
                   },
                   /*op_timeout=*/5.0),
               core::TimeoutError);
  EXPECT_NEAR(at, 5.0, 1e-9);
}

TEST(SimRuntime, HostTurnedOffMakesPeersOperationsFailWithPeerLost) {
  Cluster c = star(2);
  c.failures.push_back({.host = 1, .off = 2.0});
  std::string message;
  double at = -1;
  try {
    run(2, c, [&](Context& ctx) {
      if (ctx.rank() == 1) {
        ctx.sleep(10.0);  // killed at 2 s
        return;
      }
      std::vector<float> v(1);
      try {
        ctx.recv(1, make_tag(TagKind::user, 8, 0), mview(v)).wait();
      } catch (const core::PeerLost& e) {
        message = e.what();
        at = ctx.now();
        // Sends to a lost worker fail at once.
        EXPECT_THROW(ctx.send(1, make_tag(TagKind::user, 8, 1), cview(v)).wait(), core::PeerLost);
        throw;
      }
    });
    FAIL() << "expected PeerLost";
  } catch (const core::PeerLost& e) {
    EXPECT_NE(std::string(e.what()).find("worker 1"), std::string::npos) << e.what();
  }
  EXPECT_NEAR(at, 2.0, 1e-9);
  EXPECT_NE(message.find("worker 1 (host host-1) was lost at 2 s"), std::string::npos) << message;
}

// A worker whose function returned sends nothing more: it is no longer alive (as a process that
// ended under zmq), what it sent before is delivered, and a receive from it that none of its
// messages matched fails with PeerLost, at once or when it ends.
TEST(SimRuntime, AWorkerThatEndedIsNoLongerAliveAndWhatItSentIsDelivered) {
  std::string waiting, later;
  double failed_at = -1;
  std::vector<float> got(1, 0.0f);
  run(2, star(2), [&](Context& ctx) {
    if (ctx.rank() == 1) {
      const std::vector<float> seven{7.0f};
      ctx.send(0, make_tag(TagKind::user, 9, 0), cview(seven)).wait();
      ctx.sleep(2.0);
      return;
    }
    EXPECT_TRUE(ctx.alive(1));
    std::vector<float> v(1);
    try {
      ctx.recv(1, make_tag(TagKind::user, 9, 1), mview(v)).wait();  // never sent
    } catch (const core::PeerLost& e) {
      waiting = e.what();
      failed_at = ctx.now();
    }
    EXPECT_FALSE(ctx.alive(1));
    EXPECT_THROW(ctx.ensure_alive(1), core::PeerLost);
    ctx.recv(1, make_tag(TagKind::user, 9, 0), mview(got)).wait();  // sent before it ended
    try {
      ctx.recv(1, make_tag(TagKind::user, 9, 2), mview(v)).wait();
    } catch (const core::PeerLost& e) {
      later = e.what();
    }
  });
  EXPECT_EQ(got[0], 7.0f);
  EXPECT_NEAR(failed_at, 2.0 + kLatency * 2 + 4 / kBandwidth, 1e-3);
  EXPECT_NE(waiting.find("worker 1 (host host-1) ended its run at 2"), std::string::npos) << waiting;
  EXPECT_NE(later.find("ended its run"), std::string::npos) << later;
}

TEST(SimRuntime, SpawnedActivitiesShareMutexAndCondVar) {
  double woke = -1;
  run(1, star(1), [&](Context& ctx) {
    std::unique_ptr<Mutex> m = ctx.make_mutex();
    std::unique_ptr<CondVar> cv = ctx.make_condvar();
    bool ready = false;
    Work a = ctx.spawn("waiter", [&] {
      std::unique_lock<Mutex> lock(*m);
      while (!ready) cv->wait(lock);
      woke = ctx.now();
    });
    ctx.sleep(3.0);
    {
      std::unique_lock<Mutex> lock(*m);
      ready = true;
    }
    cv->notify_all();
    a.wait();
    Channel<int> ch(ctx, 2);
    Work producer = ctx.spawn("producer", [&] {
      for (int i = 0; i < 5; ++i) ch.push(i);
      ch.close();
    });
    int sum = 0;
    while (auto v = ch.pop()) sum += *v;
    producer.wait();
    EXPECT_EQ(sum, 10);
  });
  EXPECT_NEAR(woke, 3.0, 1e-9);
}

TEST(SimRuntime, MemoryTrafficTakesBytesOverMemoryBandwidthOnACore) {
  // 2 hosts of 1 Gflop/s with 1 core and 4 GB/s of memory bandwidth; 4 workers, two per host.
  // Workers 0 and 1 (hosts 0 and 1) stream 8 GB alone: 2 s. Workers 2 and 3 first wait 3 s, then
  // worker 2 streams 4 GB while worker 0 (its host's other worker) computes 1 Gflop: they share
  // the core, so both take 2 s (1 s of work each at half speed) and end at 5 s.
  Cluster c = star(2);
  c.memory_bandwidth = 4e9;
  std::vector<double> done(4);
  run(4, c, [&](Context& ctx) {
    const int r = ctx.rank();
    if (r < 2) {
      ctx.memory_traffic(8e9);
      done[static_cast<std::size_t>(r)] = ctx.now();
      if (r == 0) {
        ctx.sleep(1.0);  // until 3 s
        ctx.compute(1e9);
      }
    } else {
      ctx.sleep(3.0);
      if (r == 2) ctx.memory_traffic(4e9);
      done[static_cast<std::size_t>(r)] = ctx.now();
    }
  });
  EXPECT_NEAR(done[0], 2.0, 1e-9);
  EXPECT_NEAR(done[1], 2.0, 1e-9);
  EXPECT_NEAR(done[2], 5.0, 1e-9);
  EXPECT_NEAR(done[3], 3.0, 1e-9);
}

TEST(SimRuntime, MemoryTrafficIsFreeWithoutAMemoryBandwidth) {
  double after = -1;
  run(1, star(1), [&](Context& ctx) {
    ctx.memory_traffic(1e12);
    after = ctx.now();
  });
  EXPECT_EQ(after, 0.0);
}

// A host failure timed after every worker ended changes nothing, and the run's simulated time is
// the workers' (the failure's sleep until it ran to 100 s).
TEST(SimRuntime, AFailureTimedAfterTheRunEndsLeavesItsTimeAlone) {
  Cluster cluster = star(2);
  cluster.failures.push_back({.host = 1, .off = 100});
  const double elapsed = run(2, cluster, [](Context& ctx) { ctx.compute(1e9); });  // 1 s
  EXPECT_NEAR(elapsed, 1.0, 1e-9);
}

TEST(SimRuntime, WorkersShareHostsRoundRobin) {
  std::vector<double> done(4);
  run(4, star(2), [&](Context& ctx) {
    ctx.compute(1e9);  // two workers per single-core 1 Gflop/s host: 2 s each
    done[static_cast<std::size_t>(ctx.rank())] = ctx.now();
  });
  for (double t : done) EXPECT_NEAR(t, 2.0, 1e-9);
}

// SimGrid's clock goes on from one simulation of a process to the next (fast.run from Python runs
// several), and it starts host speed profiles and straggler draws at its time 0: a later simulation
// of the process would find them in the past and never end ("deadlock detected"). Such a cluster
// runs in the process's first simulation (host 0 at full speed for 2 s, then at half: closed form)
// and is refused in a later one, before anything starts, with why; a cluster without them still runs.
TEST(SimRuntime, SpeedProfilesAndStragglersRunInTheFirstSimulationOfAProcessOnly) {
  Cluster cluster = star(2);
  cluster.name = "profiled";
  cluster.speed_profiles.push_back({.host = 0, .times = {0, 2}, .factors = {1, 0.5}});
  cluster.straggler_probability = 0.5;
  cluster.straggler_factor = 4;
  std::vector<double> times;
  const auto steps = [&](Context& ctx) {
    for (int s = 0; s < 4; ++s) {
      ctx.compute(1e9);
      if (ctx.rank() == 0) times.push_back(ctx.now());
    }
  };
  // CTest runs each test in a process of its own, so this is the process's first simulation; run
  // with others in one process (gtest_filter), an earlier test's simulation came first and this
  // one is refused as the next is below.
  bool first = true;
  try {
    run(2, cluster, steps);
  } catch (const core::InvalidUsage&) {
    first = false;
  }
  if (first) {
    EXPECT_EQ(times, (std::vector<double>{1, 2, 4, 6}));  // 1 Gflop at 1 Gflop/s, at half from 2 s
  }
  try {
    run(2, cluster, steps);
    ADD_FAILURE() << "a second simulation with speed profiles ran";
  } catch (const core::InvalidUsage& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cluster 'profiled' has speed profiles and stragglers"), std::string::npos) << what;
    EXPECT_NE(what.find("run this simulation in a process of its own"), std::string::npos) << what;
  }
  times.clear();
  run(2, star(2), steps);
  EXPECT_EQ(times, (std::vector<double>{1, 2, 3, 4}));
}

// Straggler draws repeat every horizon: one host, 4 periods of 0.5 s drawn (the slow ones read
// from the debug log, which names them), then the same 4 again every 2 s. A compute of 6 Gflop at
// 1 Gflop/s, 4x slower in a slow period, spans several horizons; its end is the closed form of
// walking the periods. Like the test above, it needs the process's first simulation (CTest runs
// each test alone).
TEST(SimRuntime, StragglerDrawsRepeatEveryHorizon) {
  Cluster cluster = star(1);
  cluster.straggler_probability = 0.5;
  cluster.straggler_factor = 4;
  cluster.straggler_period = 0.5;
  cluster.straggler_horizon = 2;
  cluster.seed = 11;
  double end = -1;
  const core::LogLevel level = core::log_level();
  core::set_log_level(core::LogLevel::debug);
  ::testing::internal::CaptureStderr();
  try {
    run(1, cluster, [&](Context& ctx) {
      ctx.compute(6e9);
      end = ctx.now();
    });
  } catch (const core::InvalidUsage& e) {
    core::set_log_level(level);
    ::testing::internal::GetCapturedStderr();
    GTEST_SKIP() << "not the process's first simulation: " << e.what();
  }
  core::set_log_level(level);
  const std::string log = ::testing::internal::GetCapturedStderr();
  std::vector<bool> slow(4, false);
  const std::string head = "host-0 runs 4x slower in the periods of 0.5 s from ";
  const std::size_t at = log.find(head);
  ASSERT_NE(at, std::string::npos) << "seed 11 draws no slow period of host 0; log:\n" << log;
  std::istringstream starts(log.substr(at + head.size(), log.find('\n', at) - at - head.size()));
  for (std::string item; std::getline(starts, item, ',');) {
    const double t = std::stod(item);  // "0.5 s"
    ASSERT_TRUE(t >= 0 && t < 2) << item;
    slow[static_cast<std::size_t>(t / 0.5)] = true;
  }
  ASSERT_NE(std::count(slow.begin(), slow.end(), true), 4) << "seed 11 draws every period slow:\n" << log;
  double left = 6e9, expected = 0;
  for (int k = 0; left > 0; ++k) {
    const double speed = slow[static_cast<std::size_t>(k % 4)] ? 0.25e9 : 1e9;
    const double done = std::min(left, speed * 0.5);
    expected = k * 0.5 + done / speed;
    left -= done;
  }
  EXPECT_GT(expected, 4.0);  // past the second horizon's start: the draws repeated
  EXPECT_NEAR(end, expected, 1e-9 * expected) << log;
}

}  // namespace
}  // namespace fast::runtime
