// The all-reduce algorithms through the threads runtime's shared address space (Context::
// shared_rendezvous, CommunicatorOptions::shared_memory): for every algorithm, the same bits as the
// message path (and as the sim runtime, which has no shared path) for world sizes 1-9, lengths
// that cross the blocks of the computation, f32 and f64, sum and average; concurrent calls of one
// worker; arguments that disagree; a worker that fails or never comes.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "closed_form.hpp"
#include "common/failing_worker.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/shared_rendezvous.hpp"

namespace fast::collective {
namespace {

using runtime::Context;

// Data whose sums round, so that the order of additions shows in the last bits.
template <typename T>
T rounding_value(int rank, std::size_t i) {
  return static_cast<T>(std::sin(0.37 * static_cast<double>(i) + 1.3 * rank) / (1.0 + 0.01 * (rank + 1)));
}

// Lengths: empty, tiny, one that leaves some workers no elements, and ones whose per-worker share
// spans several blocks of 1024 elements with a ragged end.
const std::vector<std::size_t> kLengths{0, 1, 7, 1000, 9 * 2048 + 5};
const std::vector<AllreduceAlgorithm> kAlgorithms{AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling,
                                                  AllreduceAlgorithm::halving_doubling, AllreduceAlgorithm::tree,
                                                  AllreduceAlgorithm::automatic};

// Every rank's result for each (algorithm, length, op), concatenated.
template <typename T>
std::vector<std::vector<T>> run(const std::string& runtime_name, int n, bool shared,
                                const std::vector<AllreduceAlgorithm>& algorithms = kAlgorithms) {
  std::vector<std::vector<T>> out(static_cast<std::size_t>(n));
  runtime::launch({.runtime = runtime_name, .workers = n, .op_timeout_seconds = 120}, [&](Context& ctx) {
    Communicator comm(ctx, {.shared_memory = shared});
    if (shared && runtime_name == "threads" && n > 1) {
      EXPECT_NE(ctx.shared_rendezvous(), nullptr);
    }
    std::vector<T>& mine = out[static_cast<std::size_t>(ctx.rank())];
    for (AllreduceAlgorithm algorithm : algorithms)
      for (std::size_t len : kLengths)
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
          std::vector<T> data(len);
          for (std::size_t i = 0; i < len; ++i) data[i] = rounding_value<T>(ctx.rank(), i);
          comm.allreduce(core::MutableView(std::span<T>(data)), {.op = op, .algorithm = algorithm});
          mine.insert(mine.end(), data.begin(), data.end());
        }
  });
  return out;
}

template <typename T>
void expect_same_bits(const std::vector<std::vector<T>>& got, const std::vector<std::vector<T>>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t r = 0; r < got.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << what << ", rank " << r;
    EXPECT_TRUE(got[r].empty() || std::memcmp(got[r].data(), want[r].data(), got[r].size() * sizeof(T)) == 0)
        << what << ": rank " << r << " differs";
  }
}

template <typename T>
void check_world(int n) {
  const auto shared = run<T>("threads", n, true);
  const auto messages = run<T>("threads", n, false);
  expect_same_bits(shared, messages, std::to_string(n) + " workers, shared against messages (threads)");
  // Against sim with the concrete algorithms: `auto` chooses by each runtime's network model, and
  // sim's comes from its cluster.
  const std::vector<AllreduceAlgorithm> concrete(kAlgorithms.begin(), kAlgorithms.end() - 1);
  for (const std::string& r : runtime::runtime_names())
    if (r == "sim")
      expect_same_bits(run<T>("threads", n, true, concrete), run<T>("sim", n, true, concrete),
                       std::to_string(n) + " workers, threads against sim");
}

TEST(SharedAllreduce, GivesTheMessagePathsBitsForEveryAlgorithmWorldSizeLengthTypeAndOperation) {
  for (int n = 1; n <= 9; ++n) {
    check_world<float>(n);
    check_world<double>(n);
  }
}

// Each rank's link statistics towards each peer (bytes and messages sent and received) after the
// same all-reduces as run<T>, with a ring chunk small enough for several pieces per segment.
std::vector<std::vector<std::uint64_t>> traffic(int n, bool shared) {
  std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(n));
  runtime::launch({.runtime = "threads", .workers = n, .op_timeout_seconds = 120}, [&](Context& ctx) {
    Communicator comm(ctx, {.shared_memory = shared});
    for (AllreduceAlgorithm algorithm : kAlgorithms)
      for (std::size_t len : kLengths) {
        std::vector<float> data(len, 1.0f);
        comm.allreduce(core::MutableView(std::span<float>(data)), {.chunk_bytes = 4096, .algorithm = algorithm});
      }
    std::vector<std::uint64_t>& mine = out[static_cast<std::size_t>(ctx.rank())];
    for (int p = 0; p < n; ++p) {
      const runtime::LinkStats s = ctx.link_stats(p);
      mine.insert(mine.end(), {s.bytes_sent, s.messages_sent, s.bytes_received, s.messages_received});
    }
  });
  return out;
}

TEST(SharedAllreduce, CountsTheMessagePathsTrafficInTheLinkStatistics) {
  for (int n = 1; n <= 9; ++n) {
    const auto shared = traffic(n, true);
    const auto messages = traffic(n, false);
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(shared[static_cast<std::size_t>(r)], messages[static_cast<std::size_t>(r)])
          << n << " workers, rank " << r << " (per peer: bytes sent, messages sent, bytes received, messages received)";
  }
}

// Past 128 workers (f64) the blocks of the computation shrink below 1024 elements, so that the
// partial sums stay within 1 MiB per worker: the same bits there too, for the ring and recursive
// doubling (the folding of 260 onto 256), with every worker's share several blocks long.
TEST(SharedAllreduce, GivesTheMessagePathsBitsWithManyWorkersAndSmallerBlocks) {
  const int n = 260;
  const std::size_t len = static_cast<std::size_t>(n) * 1100 + 7;
  auto results = [&](bool shared) {
    std::vector<std::vector<double>> out(static_cast<std::size_t>(n));
    runtime::launch({.runtime = "threads", .workers = n, .op_timeout_seconds = 300}, [&](Context& ctx) {
      Communicator comm(ctx, {.shared_memory = shared});
      for (AllreduceAlgorithm algorithm : {AllreduceAlgorithm::ring, AllreduceAlgorithm::recursive_doubling}) {
        std::vector<double> data(len);
        for (std::size_t i = 0; i < len; ++i) data[i] = rounding_value<double>(ctx.rank(), i);
        comm.allreduce(core::MutableView(std::span<double>(data)), {.op = ReduceOp::avg, .algorithm = algorithm});
        if (ctx.rank() % 37 == 0) {  // a sample of ranks: every rank's copy is the same sum
          std::vector<double>& mine = out[static_cast<std::size_t>(ctx.rank())];
          mine.insert(mine.end(), data.begin(), data.end());
        }
      }
    });
    return out;
  };
  expect_same_bits(results(true), results(false), std::to_string(n) + " workers, shared against messages");
}

TEST(SharedAllreduce, MatchesTheClosedForm) {
  for (int n : {2, 3, 8}) {
    runtime::launch({.runtime = "threads", .workers = n}, [&](Context& ctx) {
      Communicator comm(ctx);
      std::size_t bad = 0;
      for (AllreduceAlgorithm algorithm : kAlgorithms)
        for (std::size_t len : kLengths)
          for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
            const AllreduceOptions options{.op = op, .algorithm = algorithm};
            bad += closed_form::allreduce_mismatches<float>(comm, len, options);
            bad += closed_form::allreduce_mismatches<double>(comm, len, options);
          }
      EXPECT_EQ(bad, 0u) << "rank " << ctx.rank();
    });
  }
}

// Several activities of each worker hold tickets at once: asynchronous calls issued back to back
// (every algorithm in turn), a blocking one among them, then waited for in reverse order. Each
// call's data is distinct.
TEST(SharedAllreduce, ConcurrentCallsOfOneWorkerRunInIssueOrder) {
  const int n = 4, calls = 12;
  const std::size_t len = 300;
  runtime::launch({.runtime = "threads", .workers = n}, [&](Context& ctx) {
    Communicator comm(ctx);
    std::vector<std::vector<float>> data(calls, std::vector<float>(len));
    std::vector<core::Work> works;
    for (int c = 0; c < calls; ++c) {
      for (std::size_t i = 0; i < len; ++i) data[c][i] = static_cast<float>((ctx.rank() + 1) * (c + 1)) + i;
      const core::MutableView view{std::span<float>(data[c])};
      const AllreduceOptions options{.algorithm = kAlgorithms[static_cast<std::size_t>(c) % kAlgorithms.size()]};
      if (c == calls / 2)
        comm.allreduce(view, options);
      else
        works.push_back(comm.allreduce_async(view, options));
    }
    for (auto w = works.rbegin(); w != works.rend(); ++w) w->wait();
    for (int c = 0; c < calls; ++c)
      for (std::size_t i = 0; i < len; ++i)
        ASSERT_EQ(data[c][i], static_cast<float>(n * (n + 1) / 2 * (c + 1) + n * static_cast<int>(i)))
            << "call " << c << ", element " << i << ", rank " << ctx.rank();
  });
}

TEST(SharedAllreduce, ArgumentsThatDisagreeFailEveryWorkerNamingBoth) {
  std::atomic<int> failed{0};
  runtime::launch({.runtime = "threads", .workers = 3}, [&](Context& ctx) {
    Communicator comm(ctx);
    std::vector<float> data(ctx.rank() == 1 ? 11 : 10, 1.0f);
    try {
      comm.allreduce(core::MutableView(std::span<float>(data)), {.algorithm = AllreduceAlgorithm::recursive_doubling});
      ADD_FAILURE() << "rank " << ctx.rank() << ": no error";
    } catch (const core::InvalidArgument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("11 f32 elements"), std::string::npos) << what;
      EXPECT_NE(what.find("10 f32 elements"), std::string::npos) << what;
      ++failed;
    }
    // The rendezvous is still in step: a correct call afterwards works.
    std::vector<float> ok(5, static_cast<float>(ctx.rank()));
    comm.allreduce(core::MutableView(std::span<float>(ok)), {.algorithm = AllreduceAlgorithm::recursive_doubling});
    EXPECT_EQ(ok[4], 3.0f);
  });
  EXPECT_EQ(failed.load(), 3);
}

TEST(SharedAllreduce, AFailingWorkerReleasesTheOthersWithRemoteError) {
  fast::testing::expect_failure_releases_the_others(
      [](const runtime::WorkerFn& fn) {
        runtime::launch({.runtime = "threads", .workers = 3, .op_timeout_seconds = 60}, fn);
      },
      [](Context& ctx) {
        Communicator comm(ctx);
        std::vector<float> data(8, 1.0f);
        comm.allreduce(core::MutableView(std::span<float>(data)));  // worker 2 never comes
      });
}

TEST(SharedAllreduce, AWorkerThatNeverComesTimesTheOthersOut) {
  std::atomic<int> timed_out{0};
  runtime::launch({.runtime = "threads", .workers = 2, .op_timeout_seconds = 0.3}, [&](Context& ctx) {
    if (ctx.rank() == 1) return;
    Communicator comm(ctx);
    std::vector<float> data(8, 1.0f);
    try {
      comm.allreduce(core::MutableView(std::span<float>(data)));
    } catch (const core::TimeoutError& e) {
      EXPECT_NE(std::string(e.what()).find("FAST_OP_TIMEOUT"), std::string::npos) << e.what();
      ++timed_out;
    }
    EXPECT_EQ(data[0], 1.0f);  // nobody wrote into it
  });
  EXPECT_EQ(timed_out.load(), 1);
}

}  // namespace
}  // namespace fast::collective
