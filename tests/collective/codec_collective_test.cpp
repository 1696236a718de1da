// Collectives and windows with a codec: CodecAllreduce, ChocoGossip, Window with WindowOptions::codec.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "fast/collective/choco_gossip.hpp"
#include "fast/collective/codec_allreduce.hpp"
#include "fast/collective/window.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/random.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::collective {
namespace {

using core::ConstView;
using core::MutableView;
using runtime::Context;

// Worker r's input at step t: a deterministic, non-sparse pattern.
std::vector<float> input(int r, int t, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + r) * (1.0 + 0.1 * t) + 0.01 * r);
  return v;
}

TEST(CodecAllreduce, PathFollowsTheCodec) {
  runtime::threads::World world({.size = 1, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    EXPECT_EQ(CodecAllreduce(comm, {.codec = "none"}).path(), CodecAllreduce::Path::dense);
    EXPECT_EQ(CodecAllreduce(comm, {.codec = "fp16"}).path(), CodecAllreduce::Path::ring);
    EXPECT_EQ(CodecAllreduce(comm, {.codec = "bf16"}).path(), CodecAllreduce::Path::ring);
    for (const char* c : {"int8", "sign", "topk:ratio=0.1", "randk:ratio=0.1", "threshold:value=0.5"})
      EXPECT_EQ(CodecAllreduce(comm, {.codec = c}).path(), CodecAllreduce::Path::gather) << c;
    EXPECT_EQ(CodecAllreduce(comm, {.codec = "powersgd:rank=2"}).path(), CodecAllreduce::Path::low_rank);
  });
}

// Over T steps, W * (sum of the averages) + sum over workers of the final residuals equals the sum
// of all inputs (error feedback loses nothing), every worker ends each step with the same values,
// and the metered wire bytes are what the codec says.
TEST(CodecAllreduce, ErrorFeedbackLosesNothingAndWorkersAgree) {
  constexpr int kWorkers = 4;
  constexpr int kSteps = 6;
  constexpr std::size_t kN = 1001;
  for (const char* codec :
       {"fp16", "bf16", "int8:levels=4", "sign", "topk:ratio=0.05", "randk:k=50", "threshold:value=0.9"}) {
    std::vector<std::vector<float>> outputs(kWorkers);
    std::vector<std::vector<double>> residuals(kWorkers);
    std::vector<compress::CompressionStats> stats(kWorkers);
    runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      Communicator comm(ctx);
      compress::CompressionMeter meter;
      CodecAllreduce reduce(comm, {.codec = codec, .seed = 7, .meter = &meter});
      const auto r = static_cast<std::size_t>(ctx.rank());
      std::vector<float> sum(kN, 0.0f);
      for (int t = 0; t < kSteps; ++t) {
        std::vector<float> x = input(ctx.rank(), t, kN);
        reduce.average(MutableView(std::span<float>(x)), 3);
        // Every worker holds the same values: compare with worker 0's through an all-gather.
        std::vector<float> all(kN * kWorkers);
        comm.allgather(ConstView(std::span<const float>(x)), MutableView(std::span<float>(all)));
        for (int w = 1; w < kWorkers; ++w)
          for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(all[w * kN + i], all[i]) << codec << " step " << t;
        for (std::size_t i = 0; i < kN; ++i) sum[i] += x[i];
      }
      outputs[r] = sum;
      residuals[r] = reduce.residual(3);
      stats[r] = meter.stats();
    });
    double max_err = 0, scale = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      double inputs = 0, res = 0;
      for (int w = 0; w < kWorkers; ++w) {
        for (int t = 0; t < kSteps; ++t) inputs += input(w, t, kN)[i];
        res += residuals[static_cast<std::size_t>(w)][i];
      }
      const double got = kWorkers * static_cast<double>(outputs[0][i]) + res;
      max_err = std::max(max_err, std::abs(got - inputs));
      scale = std::max(scale, std::abs(inputs));
    }
    // fp16/bf16 partial sums are rounded again at each hop (not fed back): their bound is the
    // codec's relative precision times the sums; the other codecs only lose float32 rounding.
    const std::string name(codec);
    const double tol = name == "fp16" ? 2e-3 : name == "bf16" ? 2e-2 : 1e-4;
    EXPECT_LE(max_err, tol * scale) << codec;
    EXPECT_GT(stats[0].messages, 0u) << codec;
    // threshold is variable-size: with error feedback most values pass the threshold sooner or later.
    if (name.rfind("threshold", 0) != 0) {
      EXPECT_GT(stats[0].ratio(), 1.5) << codec;
    }
  }
}

// PowerSGD's low-rank all-reduce on a rank-1 matrix per worker that is the same on every worker:
// after two warm-started steps the average is recovered exactly (up to float rounding), the
// vector block is averaged exactly, and the residual is then ~0.
TEST(CodecAllreduce, LowRankRecoversALowRankAverage) {
  constexpr int kWorkers = 3;
  constexpr std::size_t kRows = 8, kCols = 6, kVec = 5;
  core::Layout layout;
  layout.push_back({0, kRows * kCols, kRows, {kRows, kCols}, "w"});
  layout.push_back({kRows * kCols, kVec, 1, {kVec}, "b"});
  const std::size_t n = kRows * kCols + kVec;
  runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    Communicator comm(ctx);
    compress::CompressionMeter meter;
    CodecAllreduce reduce(comm, {.codec = "powersgd:rank=1", .seed = 2, .layout = layout, .meter = &meter});
    std::vector<float> want(n);
    for (std::size_t i = 0; i < kRows; ++i)
      for (std::size_t j = 0; j < kCols; ++j) want[i * kCols + j] = static_cast<float>((i + 1.0) * (0.5 - 0.1 * j));
    for (std::size_t i = 0; i < kVec; ++i) want[kRows * kCols + i] = static_cast<float>(i);
    for (int step = 0; step < 3; ++step) {
      std::vector<float> x(want);
      for (std::size_t i = 0; i < kVec; ++i) x[kRows * kCols + i] = static_cast<float>(i * ctx.rank());
      reduce.average(MutableView(std::span<float>(x)), 0);
      if (step == 0) continue;
      for (std::size_t i = 0; i < kRows * kCols; ++i) EXPECT_NEAR(x[i], want[i], 1e-4) << "step " << step << " i " << i;
      for (std::size_t i = 0; i < kVec; ++i) EXPECT_NEAR(x[kRows * kCols + i], i * 1.0, 1e-6);  // mean of 0, i, 2i
    }
    for (double r : reduce.residual(0)) EXPECT_NEAR(r, 0.0, 1e-3);
    // The meter counts the whole tensor as dense bytes, and P, Q and the vector block (sent dense)
    // as the wire's: the codec's own payload formula, 4 (P + Q + vector elements).
    const compress::CompressionStats stats = meter.stats();
    EXPECT_EQ(stats.messages, 3u);
    EXPECT_EQ(stats.raw_bytes, 3 * n * sizeof(float));
    EXPECT_EQ(stats.wire_bytes, 3 * (kRows + kCols + kVec) * sizeof(float));
  });
}

TEST(CodecAllreduce, GatherBytesAreTheEncodedMessages) {
  constexpr int kWorkers = 3;
  constexpr std::size_t kN = 4000;
  runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    Communicator comm(ctx);
    CodecAllreduce reduce(comm, {.codec = "sign"});
    std::vector<float> x = input(ctx.rank(), 0, kN);
    const std::uint64_t before = ctx.bytes_sent();
    reduce.average(MutableView(std::span<float>(x)), 0);
    // W-1 forwarded payloads of sign: 16-byte header + 4-byte scale + ceil(n/8) bits.
    const std::size_t payload = compress::make_codec("sign")->encoded_bytes(kN);
    EXPECT_EQ(ctx.bytes_sent() - before, (kWorkers - 1) * payload);
  });
}

// The two reductions of sparse messages (SparseReduce) average the same decoded messages: results
// agree to float reassociation, every worker holds the same values, and the dense one sends the
// ring's 2 (W-1) x 4n bytes in all.
TEST(CodecAllreduce, DenseAndGatherReductionsOfSparseMessagesAgree) {
  constexpr int kWorkers = 3;
  constexpr std::size_t kN = 4000;
  std::vector<std::vector<float>> got(2 * kWorkers);
  std::vector<std::uint64_t> dense_bytes(kWorkers);
  runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    Communicator comm(ctx);
    const int r = ctx.rank();
    for (const SparseReduce how : {SparseReduce::gather, SparseReduce::dense}) {
      CodecAllreduce reduce(comm, {.codec = "topk:ratio=0.05", .sparse = how});
      EXPECT_EQ(reduce.reduces_densely(kN), how == SparseReduce::dense);
      std::vector<float> x;
      for (int t = 0; t < 5; ++t) {
        x = input(r, t, kN);
        const std::uint64_t before = ctx.bytes_sent();
        reduce.average(MutableView(std::span<float>(x)), 0);
        if (how == SparseReduce::dense && t == 0) dense_bytes[static_cast<std::size_t>(r)] = ctx.bytes_sent() - before;
      }
      got[static_cast<std::size_t>((how == SparseReduce::dense ? kWorkers : 0) + r)] = x;
    }
  });
  for (int r = 0; r < kWorkers; ++r) {
    EXPECT_EQ(got[static_cast<std::size_t>(r)], got[0]) << "gather, worker " << r;
    EXPECT_EQ(got[static_cast<std::size_t>(kWorkers + r)], got[kWorkers]) << "dense, worker " << r;
  }
  for (std::size_t i = 0; i < kN; ++i) ASSERT_NEAR(got[kWorkers][i], got[0][i], 1e-6 * (1 + std::abs(got[0][i]))) << i;
  EXPECT_EQ(std::accumulate(dense_bytes.begin(), dense_bytes.end(), std::uint64_t{0}), 2 * (kWorkers - 1) * 4 * kN);
}

// auto: dense when W x the codec's payload bound exceeds the dense ring's 8n bytes.
TEST(CodecAllreduce, AutoReducesDenselyWhenTheGatherWouldSendMore) {
  runtime::threads::World world({.size = 4, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    Communicator comm(ctx);
    constexpr std::size_t kN = 4000;
    // topk bound 25 + 4k + min(4k, n/8): k = 2000 gives 8525 bytes, x 4 = 34100 > 32000.
    EXPECT_TRUE(CodecAllreduce(comm, {.codec = "topk:ratio=0.5"}).reduces_densely(kN));
    // k = 400: 2125 x 4 = 8500 < 32000.
    EXPECT_FALSE(CodecAllreduce(comm, {.codec = "topk:ratio=0.1"}).reduces_densely(kN));
    EXPECT_FALSE(CodecAllreduce(comm, {.codec = "threshold:value=0.1"}).reduces_densely(kN));
    EXPECT_FALSE(CodecAllreduce(comm, {.codec = "fp16"}).reduces_densely(kN));  // not the gather path
    EXPECT_FALSE(CodecAllreduce(comm, {.codec = "topk:ratio=0.5", .sparse = SparseReduce::gather}).reduces_densely(kN));
  });
}

// A group of some workers (an elastic group after worker 2 left: members 0, 1, 3): the all-reduce
// runs among the members and averages over them. The expected values are computed here, per
// member, with its own codec (the worker's seed): gather codecs give the members' decoded messages
// summed in rank order, times 1/3; fp16 on integers (exact partial sums) gives the exact sum, times
// 1/3. After forget_residuals() the next average sends each member's input alone: topk's result is
// then that of fresh codecs, which the residuals of the first average would change (fp16's residual
// on integers is zero: its second average checks the ring again).
TEST(CodecAllreduce, AGroupAveragesAmongItsMembersAndForgetsItsResiduals) {
  constexpr std::size_t kN = 600;
  constexpr std::uint64_t kSeed = 7;
  const std::vector<int> members{0, 1, 3};
  const auto integers = [](int r, int t) {
    std::vector<float> v(kN);
    for (std::size_t i = 0; i < kN; ++i) v[i] = static_cast<float>(static_cast<int>((i * 7 + 3 * r + t) % 17) - 8);
    return v;
  };
  // The expected average of `values(r)` over the members, each encoded alone by its own codec.
  const auto expected = [&](const char* spec, const std::function<std::vector<float>(int)>& values) {
    std::vector<float> sum(kN, 0.0f), decoded(kN);
    for (int r : members) {
      const auto codec = compress::make_codec(spec, core::worker_seed(kSeed, static_cast<std::uint64_t>(r)));
      core::Buffer payload;
      const std::vector<float> x = values(r);
      codec->encode(std::span<const float>(x), payload);
      codec->decode(payload.view(), std::span<float>(decoded));
      for (std::size_t i = 0; i < kN; ++i) sum[i] += decoded[i];
    }
    const float inv = 1.0f / static_cast<float>(members.size());
    for (float& v : sum) v *= inv;
    return sum;
  };
  for (const char* spec : {"int8:levels=4", "topk:ratio=0.05", "fp16"}) {
    const std::string name(spec);
    const bool exact_sums = name == "fp16";
    const auto first = [&](int r) { return exact_sums ? integers(r, 0) : input(r, 0, kN); };
    const auto second = [&](int r) { return exact_sums ? integers(r, 1) : input(r, 1, kN); };
    std::vector<std::vector<float>> got(4), again(4);
    runtime::threads::World world({.size = 4, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      const int r = ctx.rank();
      if (r == 2) return;  // not a member
      Communicator comm(ctx, {.elastic = true});
      comm.regroup(members, comm.next_sequence_number());
      CodecAllreduce reduce(comm, {.codec = spec, .seed = kSeed, .sparse = SparseReduce::gather});
      std::vector<float> x = first(r);
      reduce.average(MutableView(std::span<float>(x)), 0);
      got[static_cast<std::size_t>(r)] = x;
      EXPECT_FALSE(reduce.residual(0).empty()) << spec;
      reduce.forget_residuals();
      EXPECT_TRUE(reduce.residual(0).empty()) << spec;
      x = second(r);
      reduce.average(MutableView(std::span<float>(x)), 0);
      again[static_cast<std::size_t>(r)] = x;
    });
    const std::vector<float> want = expected(spec, first);
    for (int r : members) EXPECT_EQ(got[static_cast<std::size_t>(r)], want) << spec << ", worker " << r;
    // int8 draws its rounding from the codec's stream, which the first average moved on: only the
    // deterministic codecs compare with fresh codecs.
    if (name == "int8:levels=4") continue;
    const std::vector<float> want_again = expected(spec, second);
    for (int r : members) EXPECT_EQ(again[static_cast<std::size_t>(r)], want_again) << spec << ", worker " << r;
  }
  // powersgd keeps a residual per key (M - P Q^T): nonzero after an average of matrices that are
  // not of rank 1, zero after forget_residuals(), with Q kept.
  core::Layout layout;
  layout.push_back({0, 48, 8, {8, 6}, "w"});
  runtime::threads::World world({.size = 4, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    if (ctx.rank() == 2) return;
    Communicator comm(ctx, {.elastic = true});
    comm.regroup(members, comm.next_sequence_number());
    CodecAllreduce reduce(comm, {.codec = "powersgd:rank=1", .seed = kSeed, .layout = layout});
    std::vector<float> x = input(ctx.rank(), 0, 48);
    reduce.average(MutableView(std::span<float>(x)), 0);
    double before = 0;
    for (double e : reduce.residual(0)) before += std::abs(e);
    EXPECT_GT(before, 1e-3);
    reduce.forget_residuals();
    const std::vector<double> after = reduce.residual(0);
    EXPECT_EQ(after, std::vector<double>(48, 0.0));
  });
}

// CHOCO-gossip on a ring: the sum of the replicas is kept (up to float32 rounding) and, with no
// gradients, the replicas converge to the average of the initial values.
TEST(ChocoGossip, ConvergesToTheAverageAndKeepsTheSum) {
  constexpr int kWorkers = 5;
  constexpr std::size_t kN = 200;
  struct Case {
    const char* codec;
    double gamma;
    int rounds;
  };
  for (const Case c : {Case{"none", 1.0, 200}, Case{"fp16", 1.0, 200}, Case{"topk:ratio=0.1", 0.1, 1500},
                       Case{"sign", 0.1, 1500}, Case{"int8:levels=16", 0.6, 600}}) {
    std::vector<std::vector<float>> finals(kWorkers);
    runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      Communicator comm(ctx);
      const int r = ctx.rank();
      const int left = (r + kWorkers - 1) % kWorkers, right = (r + 1) % kWorkers;
      ChocoGossip gossip(comm, kN, {left, right}, {1.0 / 3, 1.0 / 3}, {left, right}, 1.0 / 3,
                         {.codec = c.codec, .seed = 11, .gamma = c.gamma});
      std::vector<float> x = input(r, 0, kN);
      for (int k = 0; k < c.rounds; ++k) gossip.mix(std::span<float>(x));
      finals[static_cast<std::size_t>(r)] = x;
    });
    double worst = 0, drift = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      double avg0 = 0, avg1 = 0;
      for (int w = 0; w < kWorkers; ++w) {
        avg0 += input(w, 0, kN)[i] / kWorkers;
        avg1 += finals[static_cast<std::size_t>(w)][i] / kWorkers;
      }
      drift = std::max(drift, std::abs(avg1 - avg0));
      for (int w = 0; w < kWorkers; ++w)
        worst = std::max(worst, std::abs(finals[static_cast<std::size_t>(w)][i] - avg0));
    }
    EXPECT_LE(drift, 1e-4) << c.codec;
    EXPECT_LE(worst, 1e-3) << c.codec;
  }
}

// Window with a codec. Accumulates go through error feedback: after K accumulates of v the owner
// holds K v minus one bounded residual, so the relative error falls like 1/K. States travel as
// differences from a reference: repeated gets (and puts) of a fixed state converge to it.
double relative_error(const std::vector<float>& got, const std::vector<float>& want, double factor = 1.0) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    err += std::pow(got[i] - factor * want[i], 2);
    norm += std::pow(factor * want[i], 2);
  }
  return std::sqrt(err / norm);
}

TEST(WindowCodec, AccumulatesLoseNothingAndStatesConverge) {
  constexpr std::size_t kN = 300;
  for (const char* codec : {"fp16", "topk:ratio=0.1", "sign", "int8"}) {
    runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      Communicator comm(ctx);
      std::vector<float> mine(kN, 0.0f);
      compress::CompressionMeter meter;
      Window window(comm, "w", MutableView(std::span<float>(mine)), {.codec = codec, .seed = 5, .meter = &meter});
      const std::vector<float> v = input(1, 0, kN);
      if (ctx.rank() == 1)
        for (int k = 0; k < 200; ++k) window.accumulate(0, ConstView(std::span<const float>(v))).wait();
      comm.barrier();
      if (ctx.rank() == 0) {
        EXPECT_LE(relative_error(mine, v, 200.0), 0.03) << codec;
      }
      comm.barrier();
      // Worker 0 now holds a fixed state s = 200 v (approximately); worker 1 reads it repeatedly.
      if (ctx.rank() == 1) {
        std::vector<float> got(kN);
        window.get(0, MutableView(std::span<float>(got))).wait();
        const double first = relative_error(got, v, 200.0);
        for (int k = 0; k < 150; ++k) window.get(0, MutableView(std::span<float>(got))).wait();
        const double last = relative_error(got, v, 200.0);
        EXPECT_LE(last, 0.03) << codec;
        if (std::string(codec) != "fp16") {
          EXPECT_LT(last, first) << codec;
        }
        // Puts of a fixed state into worker 0 converge to it.
        const std::vector<float> p = input(3, 2, kN);
        for (int k = 0; k < 150; ++k) window.put(0, ConstView(std::span<const float>(p))).wait();
        EXPECT_GT(meter.stats().ratio(), 1.5) << codec;
      }
      comm.barrier();
      if (ctx.rank() == 0) {
        EXPECT_LE(relative_error(mine, input(3, 2, kN)), 0.01) << codec;
      }
      comm.barrier();
      window.close();
    });
  }
}

}  // namespace
}  // namespace fast::collective

namespace fast::collective {
namespace {
// accumulate_scaled: without a codec the owner adds scale x state exactly; with one, scale x its
// reference of the requester's state, which converges to the state when the state is fixed.
TEST(WindowCodec, AccumulateScaledAddsScaleTimesTheState) {
  constexpr std::size_t kN = 64;
  for (const char* codec : {"none", "fp16", "topk:ratio=0.25"}) {
    runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      Communicator comm(ctx);
      std::vector<double> mine(kN + 1, 0.0);  // element kN receives the scales (scale_at)
      std::vector<double> state(kN);
      for (std::size_t i = 0; i < kN; ++i) state[i] = std::cos(0.3 * static_cast<double>(i)) + 2.0;
      Window window(comm, "s", MutableView(std::span<double>(mine)), {.codec = codec});
      constexpr int kPushes = 40;
      if (ctx.rank() == 1)
        for (int k = 0; k < kPushes; ++k)
          window.accumulate_scaled(0, ConstView(std::span<const double>(state)), 0.25, 0, kN).wait();
      comm.barrier();
      if (ctx.rank() == 0) {
        // Exact without a codec; with one, the early pushes carry the lagging reference, so the
        // total is within a few pushes' worth of the exact one.
        const double tol = std::string(codec) == "none" ? 1e-12 : std::string(codec) == "fp16" ? 1e-2 : 0.15;
        double err = 0, norm = 0;
        for (std::size_t i = 0; i < kN; ++i) {
          err += std::pow(mine[i] - kPushes * 0.25 * state[i], 2);
          norm += std::pow(kPushes * 0.25 * state[i], 2);
        }
        EXPECT_LE(std::sqrt(err / norm), tol) << codec;
        EXPECT_EQ(mine[kN], kPushes * 0.25) << codec;  // the scales travel exact
      }
      comm.barrier();
      window.close();
    });
  }
}
}  // namespace
}  // namespace fast::collective
