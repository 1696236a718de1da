// compress::Dgc (Deep Gradient Compression, worker side) against closed forms and its definitions:
// momentum correction's conservation (sent + residual == what dense momentum SGD applies), its
// equivalence to dense momentum SGD at density 1, masking, clipping, weight decay, nesterov, the
// warm-up densities and the codecs' keep ratio.

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/compress/dgc.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/core/error.hpp"
#include "fast/optim/optimizer.hpp"

namespace fast::compress {
namespace {

constexpr std::size_t kN = 300;

// f(x) = 1/2 sum_i a_i (x_i - b_i)^2: gradient a (x - b), curvatures spread over two decades.
double curvature(std::size_t i) { return 0.05 + 5.0 * static_cast<double>(i % 17) / 16.0; }
double target(std::size_t i) { return std::sin(0.3 * static_cast<double>(i)) * 2.0; }
void quadratic_gradient(std::span<const float> x, std::span<float> g) {
  for (std::size_t i = 0; i < x.size(); ++i)
    g[i] = static_cast<float>(curvature(i) * (static_cast<double>(x[i]) - target(i)));
}

// One worker running DGC with error feedback around topk:ratio=ratio, applying what it sends with
// plain SGD (x -= lr * sent), as the strategies do with one worker.
struct DgcRun {
  Dgc dgc;
  ErrorFeedback feedback;
  std::vector<float> x = std::vector<float>(kN, 0.0f);
  std::vector<float> g = std::vector<float>(kN, 0.0f);
  std::vector<double> sent_sum = std::vector<double>(kN, 0.0);
  DgcRun(const DgcOptions& options, double ratio)
      : dgc(options, kN), feedback(make_codec("topk:ratio=" + std::to_string(ratio))) {}
  // One step on gradient g (already written): returns a (what was fed to the error feedback).
  std::vector<float> step(std::int64_t t, double lr) {
    EXPECT_TRUE(dgc.accumulate(g, x));
    std::vector<float> a = g;
    feedback.codec().set_keep_ratio(dgc.density(t));
    core::Buffer payload;
    feedback.encode(0, core::ConstView(std::span<const float>(g)), payload);
    const std::span<const float> sent = feedback.last_sent();
    for (std::size_t i = 0; i < kN; ++i) {
      sent_sum[i] += sent[i];
      x[i] -= static_cast<float>(lr) * sent[i];
    }
    if (dgc.options().masking) {
      dgc.mask(sent);
      feedback.clear_sent(0);
    }
    return a;
  }
};

// A linear objective (constant gradient c) makes dense momentum SGD's velocity a closed form:
// u_t = c (1 - m^(t+1)) / (1 - m) (u_0 = c, as torch), so the sum of what dense momentum SGD
// applies over T steps (lr aside) is c / (1 - m) (T - m (1 - m^T) / (1 - m)). Without masking,
// DGC's messages plus its residual add up to exactly that, whatever the density.
TEST(Dgc, MomentumCorrectionConservesTheDenseMomentumSumInClosedForm) {
  constexpr double kM = 0.9;
  constexpr int kT = 60;
  for (double ratio : {0.01, 0.1, 1.0}) {
    DgcRun run({.momentum = kM, .masking = false, .ratio = ratio}, ratio);
    for (int t = 0; t < kT; ++t) {
      for (std::size_t i = 0; i < kN; ++i) run.g[i] = static_cast<float>(std::cos(0.7 * static_cast<double>(i)));
      run.step(t, 0.01);
    }
    const std::span<const double> residual = run.feedback.residual(0);
    const double factor = (kT - kM * (1 - std::pow(kM, kT)) / (1 - kM)) / (1 - kM);
    for (std::size_t i = 0; i < kN; ++i) {
      const double c = static_cast<float>(std::cos(0.7 * static_cast<double>(i)));
      const double expect = c * factor;
      ASSERT_NEAR(run.sent_sum[i] + residual[i], expect, 2e-5 * std::abs(expect) + 1e-9)
          << "ratio " << ratio << " element " << i;
    }
  }
}

// On the quadratic the gradients depend on where DGC's delayed updates took x; recomputing dense
// momentum's velocities from the gradients DGC saw (in float64, independently of Dgc) gives the
// same conservation.
TEST(Dgc, MomentumCorrectionConservesOnAQuadratic) {
  constexpr double kM = 0.9, kLr = 0.02;
  DgcRun run({.momentum = kM, .masking = false, .ratio = 0.05}, 0.05);
  std::vector<double> u(kN, 0.0), applied(kN, 0.0);
  for (int t = 0; t < 80; ++t) {
    quadratic_gradient(run.x, run.g);
    for (std::size_t i = 0; i < kN; ++i) {
      u[i] = t == 0 ? run.g[i] : kM * u[i] + run.g[i];
      applied[i] += u[i];
    }
    run.step(t, kLr);
  }
  const std::span<const double> residual = run.feedback.residual(0);
  double sent_norm = 0;
  for (std::size_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(run.sent_sum[i] + residual[i], applied[i], 1e-4 * (1 + std::abs(applied[i]))) << "element " << i;
    sent_norm += std::abs(run.sent_sum[i]);
  }
  EXPECT_GT(sent_norm, 1.0);  // the test moved x
}

// At density 1 and without masking every a is sent whole: DGC + plain SGD is FAST's momentum
// optimizer, to float rounding (the same float32 operations in the same order here).
TEST(Dgc, AtDensityOneWithoutMaskingIsDenseMomentumSgd) {
  for (const char* name : {"momentum", "nesterov"}) {
    const bool nesterov = std::string(name) == "nesterov";
    DgcRun run({.momentum = 0.9, .nesterov = nesterov, .weight_decay = 0.01, .masking = false, .ratio = 1.0}, 1.0);
    std::vector<float> y(kN, 0.0f), gy(kN);
    auto dense = optim::make_optimizer({.name = name, .momentum = 0.9, .weight_decay = 0.01}, kN);
    for (int t = 0; t < 50; ++t) {
      quadratic_gradient(run.x, run.g);
      quadratic_gradient(y, gy);
      run.step(t, 0.05);
      dense->step(y, gy, 0.05);
    }
    for (std::size_t i = 0; i < kN; ++i)
      ASSERT_NEAR(run.x[i], y[i], 1e-5 * (1 + std::abs(y[i]))) << name << " element " << i;
  }
}

// Masking by its definition: where the message is nonzero, u and v are 0 after the step;
// elsewhere u = m u_prev + g and v = v_prev + a.
TEST(Dgc, MaskingResetsVelocityAndResidualExactlyWhereSent) {
  constexpr double kM = 0.8;
  DgcRun run({.momentum = kM, .masking = true, .ratio = 0.1}, 0.1);
  std::vector<double> v_prev(kN, 0.0);
  std::vector<float> u_prev(kN, 0.0f);
  for (int t = 0; t < 20; ++t) {
    quadratic_gradient(run.x, run.g);
    const std::vector<float> g = run.g;
    const std::vector<float> a = run.step(t, 0.01);
    const std::span<const float> sent = run.feedback.last_sent();
    const std::span<const double> v = run.feedback.residual(0);
    const std::span<const float> u = run.dgc.velocity();
    std::size_t sent_count = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      if (sent[i] != 0.0f) {
        ++sent_count;
        ASSERT_EQ(u[i], 0.0f) << "t " << t << " element " << i;
        ASSERT_EQ(v[i], 0.0) << "t " << t << " element " << i;
      } else {
        const float expect_u = t == 0 ? g[i] : static_cast<float>(kM) * u_prev[i] + g[i];
        ASSERT_FLOAT_EQ(u[i], expect_u) << "t " << t << " element " << i;
        ASSERT_NEAR(v[i], v_prev[i] + a[i], 1e-9 * (1 + std::abs(v[i])));
      }
    }
    EXPECT_EQ(sent_count, kN / 10);
    u_prev.assign(u.begin(), u.end());
    v_prev.assign(v.begin(), v.end());
  }
}

// Local clipping scales the gradient to C / sqrt(N) when its L2 norm exceeds that, before the
// weight decay; a gradient within the bound is untouched.
TEST(Dgc, ClipsTheLocalGradientToTheBoundOverRootWorkers) {
  Dgc dgc({.weight_decay = 0.5, .clip_norm = 4.0, .workers = 4, .ratio = 1.0}, 4);
  std::vector<float> x{1, 2, 3, 4};
  std::vector<float> g{6, 0, 8, 0};  // norm 10 > 4 / sqrt(4) = 2: scaled by 0.2
  ASSERT_TRUE(dgc.accumulate(g, x));
  EXPECT_DOUBLE_EQ(dgc.last_clip_scale(), 0.2);
  const std::vector<float> expect{1.2f + 0.5f, 1.0f, 1.6f + 1.5f, 2.0f};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(g[i], expect[i]) << i;
  std::vector<float> small{0.6f, 0, 0.8f, 0};  // norm 1 < 2: not clipped
  ASSERT_TRUE(dgc.accumulate(small, x));
  EXPECT_EQ(dgc.last_clip_scale(), 1.0);
  EXPECT_FLOAT_EQ(small[0], 0.6f + 0.5f);
}

TEST(Dgc, NonFiniteGradientLeavesTheVelocityAndSendsNothingNew) {
  Dgc dgc({.momentum = 0.9, .ratio = 0.5}, 3);
  std::vector<float> x(3, 0.0f), g{1, 2, 3};
  ASSERT_TRUE(dgc.accumulate(g, x));
  std::vector<float> bad{1, std::nanf(""), 3};
  EXPECT_FALSE(dgc.accumulate(bad, x));
  EXPECT_EQ(bad, std::vector<float>(3, 0.0f));
  EXPECT_EQ(std::vector<float>(dgc.velocity().begin(), dgc.velocity().end()), (std::vector<float>{1, 2, 3}));
}

// density(t) = r0^(1 - t/T) r^(t/T) for t < T, then r.
TEST(Dgc, WarmupDensitiesDecayExponentially) {
  const Dgc dgc({.ratio = 0.001, .warmup_ratio = 0.25, .warmup_steps = 100}, 1);
  EXPECT_DOUBLE_EQ(dgc.density(0), 0.25);
  EXPECT_NEAR(dgc.density(50), std::sqrt(0.25 * 0.001), 1e-12);
  EXPECT_NEAR(dgc.density(25), std::pow(0.25, 0.75) * std::pow(0.001, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(dgc.density(100), 0.001);
  EXPECT_DOUBLE_EQ(dgc.density(1000), 0.001);
  for (int t = 1; t < 100; ++t) EXPECT_LT(dgc.density(t), dgc.density(t - 1)) << t;
  EXPECT_DOUBLE_EQ(Dgc({.ratio = 0.01}, 1).density(0), 0.01);                                  // no warm-up
  EXPECT_DOUBLE_EQ(Dgc({.ratio = 0.3, .warmup_ratio = 0.25, .warmup_steps = 9}, 1).density(0), 0.3);  // r0 <= r
}

TEST(Dgc, KeepRatioOfTheSparseCodecsFollowsSetKeepRatio) {
  std::vector<float> x(1000);
  std::iota(x.begin(), x.end(), 1.0f);
  for (const char* spec : {"topk:ratio=0.01", "randk:ratio=0.01"}) {
    auto codec = make_codec(spec, 7);
    EXPECT_DOUBLE_EQ(codec->keep_ratio(), 0.01);
    ASSERT_TRUE(codec->set_keep_ratio(0.05));
    core::Buffer payload;
    codec->encode(core::ConstView(std::span<const float>(x)), payload);
    std::vector<float> y(1000);
    codec->decode(payload.view(), std::span<float>(y));
    EXPECT_EQ(std::count_if(y.begin(), y.end(), [](float v) { return v != 0.0f; }), 50) << spec;
    EXPECT_THROW(codec->set_keep_ratio(0.0), core::InvalidArgument);
    EXPECT_THROW(codec->set_keep_ratio(1.5), core::InvalidArgument);
  }
  EXPECT_FALSE(make_codec("topk:k=5")->set_keep_ratio(0.5));
  EXPECT_FALSE(make_codec("fp16")->set_keep_ratio(0.5));
  EXPECT_EQ(make_codec("sign")->keep_ratio(), 0.0);
}

TEST(Dgc, RejectsOptionsOutOfRangeNamingThem) {
  const auto expect_error = [](const DgcOptions& o, const std::string& what) {
    try {
      Dgc dgc(o, 4);
      ADD_FAILURE() << "no error for " << what;
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error({.momentum = 1.0}, "momentum");
  expect_error({.dampening = 1.5}, "dampening");
  expect_error({.momentum = 0.9, .dampening = 0.1, .nesterov = true}, "nesterov");
  expect_error({.weight_decay = -1}, "weight_decay");
  expect_error({.clip_norm = -2}, "clip_norm");
  expect_error({.workers = 0}, "workers");
  expect_error({.ratio = 0}, "ratio");
  expect_error({.warmup_ratio = 2}, "warmup_ratio");
  expect_error({.warmup_steps = -3}, "warmup_steps");
}

}  // namespace
}  // namespace fast::compress
