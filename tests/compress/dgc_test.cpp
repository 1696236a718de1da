// compress::Dgc (Deep Gradient Compression, worker side) against closed forms and its definitions:
// momentum correction's conservation (sent + residual == what dense momentum SGD applies, under a
// decaying learning rate too), its equivalence to dense momentum SGD at density 1, masking,
// clipping, weight decay, nesterov, the warm-up densities and the codecs' keep ratio.

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <numeric>
#include <span>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/compress/dgc.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/core/error.hpp"
#include "fast/core/saved_state.hpp"
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

// One worker running DGC with error feedback around topk:ratio=ratio, applying what it sends
// (x -= sent: the learning rate is in it), as the strategies do with one worker.
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
    EXPECT_TRUE(dgc.accumulate(g, x, lr));
    std::vector<float> a = g;
    feedback.codec().set_keep_ratio(dgc.density(t));
    core::Buffer payload;
    feedback.encode(0, core::ConstView(std::span<const float>(g)), payload);
    const std::span<const float> sent = feedback.last_sent();
    for (std::size_t i = 0; i < kN; ++i) {
      sent_sum[i] += sent[i];
      x[i] -= sent[i];
    }
    if (dgc.options().masking) {
      dgc.mask(sent);
      feedback.clear_sent(0);
    }
    return a;
  }
};

// A cosine learning rate over T steps, as optim's cosine schedule without a floor: it falls from
// 0.01 to 0.01 (1 + cos(pi (T-1)/T)) / 2 at the last step (for T = 60, a 1460th of it).
double cosine_lr(int t, int steps) {
  return 0.01 * 0.5 * (1 + std::cos(std::numbers::pi * static_cast<double>(t) / static_cast<double>(steps)));
}

// A linear objective (constant gradient c) makes dense momentum SGD's velocity a closed form:
// u_t = c (1 - m^(t+1)) / (1 - m) (u_0 = c, as torch). At a constant rate lr the sum of what dense
// momentum SGD applies over T steps is lr c / (1 - m) (T - m (1 - m^T) / (1 - m)); under a
// schedule lr_t it is c sum_t lr_t (1 - m^(t+1)) / (1 - m). Without masking, DGC's messages plus
// its residual add up to exactly that, whatever the density: each step's velocity at the rate of
// that step, however late it is sent.
TEST(Dgc, MomentumCorrectionConservesTheDenseMomentumSumInClosedForm) {
  constexpr double kM = 0.9, kLr = 0.01;
  constexpr int kT = 60;
  for (const bool decaying : {false, true})
    for (double ratio : {0.01, 0.1, 1.0}) {
      DgcRun run({.momentum = kM, .masking = false, .ratio = ratio}, ratio);
      double factor = 0;  // sum_t lr_t (1 - m^(t+1)) / (1 - m), term by term under the schedule
      for (int t = 0; t < kT; ++t) {
        for (std::size_t i = 0; i < kN; ++i) run.g[i] = static_cast<float>(std::cos(0.7 * static_cast<double>(i)));
        const double lr = decaying ? cosine_lr(t, kT) : kLr;
        run.step(t, lr);
        factor += lr * (1 - std::pow(kM, t + 1)) / (1 - kM);
      }
      if (!decaying) {  // the sum in closed form
        const double closed = kLr * (kT - kM * (1 - std::pow(kM, kT)) / (1 - kM)) / (1 - kM);
        ASSERT_NEAR(factor, closed, 1e-12 * closed);
      }
      const std::span<const double> residual = run.feedback.residual(0);
      for (std::size_t i = 0; i < kN; ++i) {
        const double c = static_cast<float>(std::cos(0.7 * static_cast<double>(i)));
        const double expect = c * factor;
        ASSERT_NEAR(run.sent_sum[i] + residual[i], expect, 2e-5 * std::abs(expect) + 1e-9)
            << (decaying ? "cosine lr" : "constant lr") << ", ratio " << ratio << ", element " << i;
      }
    }
}

// On the quadratic the gradients depend on where DGC's delayed updates took x; recomputing dense
// momentum's updates lr_t u_t from the gradients DGC saw (in float64, independently of Dgc), under
// a cosine learning rate, gives the same conservation.
TEST(Dgc, MomentumCorrectionConservesOnAQuadratic) {
  constexpr double kM = 0.9;
  constexpr int kT = 80;
  DgcRun run({.momentum = kM, .masking = false, .ratio = 0.05}, 0.05);
  std::vector<double> u(kN, 0.0), applied(kN, 0.0), magnitude(kN, 0.0);
  for (int t = 0; t < kT; ++t) {
    quadratic_gradient(run.x, run.g);
    const double lr = 2 * cosine_lr(t, kT);
    for (std::size_t i = 0; i < kN; ++i) {
      u[i] = t == 0 ? run.g[i] : kM * u[i] + run.g[i];
      applied[i] += lr * u[i];
      magnitude[i] += lr * std::abs(u[i]);  // the terms' scale: the sum cancels, float32's rounding does not
    }
    run.step(t, lr);
  }
  const std::span<const double> residual = run.feedback.residual(0);
  double sent_norm = 0;
  for (std::size_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(run.sent_sum[i] + residual[i], applied[i], 1e-5 * magnitude[i] + 1e-12) << "element " << i;
    sent_norm += std::abs(run.sent_sum[i]);
  }
  EXPECT_GT(sent_norm, 0.2);  // the test moved x
}

// At density 1 and without masking every a is sent whole: DGC is FAST's momentum optimizer, to
// float rounding (the same float32 operations in the same order here), at any learning rate.
TEST(Dgc, AtDensityOneWithoutMaskingIsDenseMomentumSgd) {
  for (const char* name : {"momentum", "nesterov"}) {
    const bool nesterov = std::string(name) == "nesterov";
    DgcRun run({.momentum = 0.9, .nesterov = nesterov, .weight_decay = 0.01, .masking = false, .ratio = 1.0}, 1.0);
    std::vector<float> y(kN, 0.0f), gy(kN);
    auto dense = optim::make_optimizer({.name = name, .momentum = 0.9, .weight_decay = 0.01}, kN);
    for (int t = 0; t < 50; ++t) {
      quadratic_gradient(run.x, run.g);
      quadratic_gradient(y, gy);
      run.step(t, 5 * cosine_lr(t, 50));
      dense->step(y, gy, 5 * cosine_lr(t, 50));
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
  ASSERT_TRUE(dgc.accumulate(g, x, 1.0));
  EXPECT_DOUBLE_EQ(dgc.last_clip_scale(), 0.2);
  const std::vector<float> expect{1.2f + 0.5f, 1.0f, 1.6f + 1.5f, 2.0f};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(g[i], expect[i]) << i;
  std::vector<float> small{0.6f, 0, 0.8f, 0};  // norm 1 < 2: not clipped
  ASSERT_TRUE(dgc.accumulate(small, x, 1.0));
  EXPECT_EQ(dgc.last_clip_scale(), 1.0);
  EXPECT_FLOAT_EQ(small[0], 0.6f + 0.5f);
}

// Elastic runs: set_workers moves the bound C / sqrt(workers); forget_velocity makes the next
// accumulate() a first one again (u = g, not m u + (1 - dampening) g), and refuses nothing.
TEST(Dgc, SetWorkersMovesTheBoundAndForgetVelocityStartsAfresh) {
  Dgc clip({.clip_norm = 4.0, .workers = 4, .ratio = 1.0}, 2);
  std::vector<float> x{0, 0}, g{3, 4};  // norm 5: bound 2 with 4 workers, 4 with 1
  ASSERT_TRUE(clip.accumulate(g, x, 1.0));
  EXPECT_DOUBLE_EQ(clip.last_clip_scale(), 0.4);
  clip.set_workers(1);
  g = {3, 4};
  ASSERT_TRUE(clip.accumulate(g, x, 1.0));
  EXPECT_DOUBLE_EQ(clip.last_clip_scale(), 0.8);
  EXPECT_THROW(clip.set_workers(0), core::InvalidArgument);

  Dgc dgc({.momentum = 0.9, .dampening = 0.5, .ratio = 1.0}, 2);
  std::vector<float> a{1, 2};
  ASSERT_TRUE(dgc.accumulate(a, x, 1.0));  // first: u = g
  a = {1, 2};
  ASSERT_TRUE(dgc.accumulate(a, x, 1.0));  // u = 0.9 u + 0.5 g
  EXPECT_FLOAT_EQ(dgc.velocity()[0], 0.9f * 1 + 0.5f * 1);
  dgc.forget_velocity();
  EXPECT_EQ(std::vector<float>(dgc.velocity().begin(), dgc.velocity().end()), (std::vector<float>{0, 0}));
  a = {3, 5};
  ASSERT_TRUE(dgc.accumulate(a, x, 1.0));  // a first step again: u = g
  EXPECT_EQ(std::vector<float>(dgc.velocity().begin(), dgc.velocity().end()), (std::vector<float>{3, 5}));
  EXPECT_EQ(a, (std::vector<float>{3, 5}));
}

TEST(Dgc, NonFiniteGradientLeavesTheVelocityAndSendsNothingNew) {
  Dgc dgc({.momentum = 0.9, .ratio = 0.5}, 3);
  std::vector<float> x(3, 0.0f), g{1, 2, 3};
  ASSERT_TRUE(dgc.accumulate(g, x, 0.5));
  std::vector<float> bad{1, std::nanf(""), 3};
  EXPECT_FALSE(dgc.accumulate(bad, x, 0.5));
  EXPECT_EQ(bad, std::vector<float>(3, 0.0f));
  EXPECT_EQ(std::vector<float>(dgc.velocity().begin(), dgc.velocity().end()), (std::vector<float>{1, 2, 3}));
}

// What accumulate() hands the error feedback, by definition: a = lr_t u_t (momentum), lr_t (g +
// m u_t) (nesterov), lr_t g (no momentum), with this step's rate; u itself has no rate in it.
TEST(Dgc, TheUpdateIsTheVelocityAtTheRateOfItsOwnStep) {
  const std::vector<float> x{0, 0};
  for (const bool nesterov : {false, true}) {
    Dgc dgc({.momentum = 0.5, .nesterov = nesterov, .ratio = 1.0}, 2);
    std::vector<float> g{1, 2};
    ASSERT_TRUE(dgc.accumulate(g, x, 0.1));  // u_0 = g
    const std::vector<float> first =
        nesterov ? std::vector<float>{0.1f * 1.5f, 0.1f * 3.0f} : std::vector<float>{0.1f, 0.2f};
    EXPECT_FLOAT_EQ(g[0], first[0]);
    EXPECT_FLOAT_EQ(g[1], first[1]);
    std::vector<float> g2{4, -2};
    ASSERT_TRUE(dgc.accumulate(g2, x, 0.3));  // u_1 = 0.5 u_0 + g2 = {4.5, -1}
    EXPECT_FLOAT_EQ(dgc.velocity()[0], 4.5f);
    EXPECT_FLOAT_EQ(dgc.velocity()[1], -1.0f);
    const std::vector<float> second = nesterov ? std::vector<float>{0.3f * (4 + 2.25f), 0.3f * (-2 - 0.5f)}
                                               : std::vector<float>{0.3f * 4.5f, 0.3f * -1.0f};
    EXPECT_FLOAT_EQ(g2[0], second[0]) << (nesterov ? "nesterov" : "momentum");
    EXPECT_FLOAT_EQ(g2[1], second[1]) << (nesterov ? "nesterov" : "momentum");
  }
  Dgc plain({.ratio = 1.0}, 2);
  std::vector<float> g{1, 2};
  ASSERT_TRUE(plain.accumulate(g, x, 0.25));
  EXPECT_EQ(g, (std::vector<float>{0.25f, 0.5f}));
  EXPECT_THROW(plain.accumulate(g, x, -0.1), core::InvalidArgument);
  EXPECT_THROW(plain.accumulate(g, x, std::nan("")), core::InvalidArgument);
}

// Checkpoints: what save() writes comes back; a checkpoint without the residual's units (written
// when the residual held gradients, before the rate moved into accumulate) is refused, saying why.
TEST(Dgc, RestoresItsStateAndRefusesAResidualOfGradients) {
  Dgc dgc({.momentum = 0.9, .ratio = 0.5}, 3);
  std::vector<float> x(3, 0.0f), g{1, 2, 3};
  ASSERT_TRUE(dgc.accumulate(g, x, 0.1));
  core::SavedState saved;
  dgc.save("allreduce.dgc", saved);
  Dgc back({.momentum = 0.9, .ratio = 0.5}, 3);
  back.restore("allreduce.dgc", saved, "ckpt", x);
  EXPECT_EQ(std::vector<float>(back.velocity().begin(), back.velocity().end()), (std::vector<float>{1, 2, 3}));
  saved.integers.erase("allreduce.dgc.residual_units");
  Dgc old({.momentum = 0.9, .ratio = 0.5}, 3);
  try {
    old.restore("allreduce.dgc", saved, "ckpt", x);
    ADD_FAILURE() << "a residual of gradients was resumed";
  } catch (const core::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint 'ckpt': its DGC residual holds gradients"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(std::vector<float>(old.velocity().begin(), old.velocity().end()), std::vector<float>(3, 0.0f));
}

// The local view: view() keeps the shared parameters and leaves x - v in their place (per slice at
// an offset, as ps views its shards); look() with no residual puts x back; the checkpoint carries x, and a
// resume without the local view takes x as the parameters.
TEST(Dgc, LocalViewKeepsTheSharedParametersAndLooksAtThemMinusTheResidual) {
  Dgc dgc({.momentum = 0.9, .ratio = 0.5, .local_view = true}, 4);
  EXPECT_TRUE(dgc.shared().empty());
  std::vector<float> params{1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<double> low{0.5, -0.25}, high{0.0, 1.5};
  dgc.view(std::span<float>(params).first(2), low, 0);
  dgc.view(std::span<float>(params).last(2), high, 2);
  EXPECT_EQ(params, (std::vector<float>{0.5f, 2.25f, 3.0f, 2.5f}));
  EXPECT_EQ(std::vector<float>(dgc.shared().begin(), dgc.shared().end()), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(dgc.view(std::span<float>(params).last(2), low, 3), core::InvalidArgument);
  EXPECT_THROW(dgc.view(std::span<float>(params).first(2), std::vector<double>{1.0}, 0), core::InvalidArgument);

  core::SavedState saved;
  dgc.save("allreduce.dgc", saved);
  ASSERT_TRUE(saved.arrays.contains("allreduce.dgc.shared"));
  dgc.look(params, {});
  EXPECT_EQ(params, (std::vector<float>{1, 2, 3, 4}));

  std::vector<float> resumed{0.5f, 2.25f, 3.0f, 2.5f};  // the saved parameters: the view
  Dgc with({.momentum = 0.9, .ratio = 0.5, .local_view = true}, 4);
  with.restore("allreduce.dgc", saved, "ckpt", resumed);
  EXPECT_EQ(resumed, (std::vector<float>{0.5f, 2.25f, 3.0f, 2.5f}));  // it keeps looking at the view
  EXPECT_EQ(std::vector<float>(with.shared().begin(), with.shared().end()), (std::vector<float>{1, 2, 3, 4}));
  Dgc without({.momentum = 0.9, .ratio = 0.5}, 4);
  without.restore("allreduce.dgc", saved, "ckpt", resumed);
  EXPECT_EQ(resumed, (std::vector<float>{1, 2, 3, 4}));  // x itself
  EXPECT_TRUE(without.shared().empty());
  EXPECT_THROW(without.view(std::span<float>(params).first(2), low, 0), core::InvalidArgument);
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
  EXPECT_DOUBLE_EQ(Dgc({.ratio = 0.01}, 1).density(0), 0.01);                                         // no warm-up
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
