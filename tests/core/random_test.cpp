// core/random against independent references: the published SplitMix64 outputs, and values
// computed by a separate Python transcription of the published algorithm (Vigna's splitmix64.c)
// and of the formulas documented in random.hpp (arbitrary-precision integers masked to 64 bits,
// Python floats for the conversions). The statistical tests use fixed seeds, so they are
// deterministic; their tolerances are 5 standard errors of the estimate (a correct generator
// fails one with probability below 1e-6 for a fresh seed).

#include "fast/core/random.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <concepts>
#include <random>
#include <vector>

namespace fast::core {
namespace {

static_assert(std::uniform_random_bit_generator<SplitMix64>);

TEST(Random, SplitMix64MatchesThePublishedOutputs) {
  SplitMix64 g(1234567);
  const std::vector<std::uint64_t> expected{6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
                                            4593380528125082431ULL, 16408922859458223821ULL};
  for (std::uint64_t want : expected) EXPECT_EQ(g.next(), want);
  SplitMix64 zero(0);
  EXPECT_EQ(zero(), 16294208416658607535ULL);
  EXPECT_EQ(zero(), 7960286522194355700ULL);
  EXPECT_EQ(zero(), 487617019471545679ULL);
}

TEST(Random, Mix64AndTheSeedDerivationsMatchTheReference) {
  EXPECT_EQ(mix64(0), 0u);
  EXPECT_EQ(mix64(1), 6238072747940578789ULL);
  EXPECT_EQ(mix64(0xFFFFFFFFFFFFFFFFULL), 13029008266876403067ULL);
  EXPECT_EQ(mix64(0x0123456789ABCDEFULL), 12880392674509918508ULL);
  // The 5th output of SplitMix64(1234567), by counter.
  EXPECT_EQ(splitmix64_at(1234567, 5), 16408922859458223821ULL);
  EXPECT_EQ(splitmix64_at(42, 3, 0xD1B54A32D192ED03ULL), 8109992722588985782ULL);
  EXPECT_EQ(derive_seed(7, 0x6D61746368696E67ULL, 3), 15895451634697005046ULL);
  EXPECT_EQ(derive_seed(0, 0, 0), 0u);
  EXPECT_EQ(worker_seed(5, 3), 1663341875487337581ULL);
  EXPECT_EQ(worker_seed(0xFFFFFFFFFFFFFFFFULL, 0), 7046029254386353132ULL);  // wraps
}

TEST(Random, UnitIntervalConversionsUseTheTop53Bits) {
  const std::uint64_t x = 6457827717110365317ULL;
  EXPECT_EQ(uniform01(x), 0x1.667b405fec23ep-2);
  EXPECT_EQ(uniform01_open(x), 0x1.667b405fec23fp-2);
  EXPECT_EQ(uniform01_left_open(x), 0x1.667b405fec240p-2);
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  EXPECT_EQ(uniform01(0), 0.0);
  EXPECT_EQ(uniform01(kMax), 1.0 - 0x1.0p-53);
  EXPECT_EQ(uniform01_open(0), 0x1.0p-54);
  EXPECT_EQ(uniform01_open(kMax), 1.0 - 0x1.0p-54);
  EXPECT_EQ(uniform01_left_open(0), 0x1.0p-53);
  EXPECT_EQ(uniform01_left_open(kMax), 1.0);
}

TEST(Random, BoundedIntegersMatchTheReference) {
  SplitMix64 g(99);
  for (std::uint64_t want : {3, 4, 7, 7, 6, 9, 5, 5, 6, 2, 3, 8}) EXPECT_EQ(g.below(10), want);
  SplitMix64 h(99);
  for (std::uint64_t want : {400194, 900284, 451441, 907613, 357629, 441602})
    EXPECT_EQ(below_rejecting_bottom(h, 1000003), want);
  SplitMix64 a(5), b(5);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.below(7), below_rejecting_top(b, 7));
  SplitMix64 one(1);
  EXPECT_EQ(one.below(1), 0u);
  EXPECT_EQ(below_rejecting_bottom(one, 1), 0u);
}

// n = 2^63 + 1: the top method accepts only r < n (L = n), the bottom one only r >= 2^63 - 1; a
// scripted generator shows which draws each rejects.
TEST(Random, TheTwoRejectionMethodsRejectDifferentDraws) {
  struct Script {
    std::vector<std::uint64_t> values;
    std::size_t at = 0;
    std::uint64_t operator()() { return values.at(at++); }
  };
  const std::uint64_t n = (std::uint64_t{1} << 63) + 1;
  Script top{{n + 4, 7}};
  EXPECT_EQ(below_rejecting_top(top, n), 7u);  // n + 4 >= L: rejected
  EXPECT_EQ(top.at, 2u);
  Script bottom{{n + 4, 7}};
  EXPECT_EQ(below_rejecting_bottom(bottom, n), 4u);  // (n + 4) mod n
  EXPECT_EQ(bottom.at, 1u);
  Script low{{5, n - 1}};
  EXPECT_EQ(below_rejecting_bottom(low, n), n - 1);  // 5 < 2^63 - 1: rejected
  EXPECT_EQ(low.at, 2u);
}

TEST(Random, BoxMullerMatchesItsClosedForm) {
  // u1 = e^-2: radius 2; u2 = 1/8: angle pi/4.
  const NormalPair z = box_muller(std::exp(-2.0), 0.125);
  EXPECT_NEAR(z.first, std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(z.second, std::sqrt(2.0), 1e-15);
  const NormalPair w = box_muller(1.0, 0.3);  // radius 0
  EXPECT_EQ(w.first, 0.0);
  EXPECT_EQ(w.second, 0.0);
}

// Uniform draws: mean 1/2 (standard error sqrt(1/12 / N)) and P(u < q) = q (standard error
// sqrt(q (1 - q) / N)) at q = 0.1, 0.5, 0.9.
TEST(Random, Uniform01IsUniform) {
  constexpr int kN = 200000;
  SplitMix64 g(2024);
  double sum = 0;
  int below[3] = {0, 0, 0};
  const double q[3] = {0.1, 0.5, 0.9};
  for (int i = 0; i < kN; ++i) {
    const double u = uniform01(g());
    sum += u;
    for (int j = 0; j < 3; ++j) below[j] += u < q[j];
  }
  EXPECT_NEAR(sum / kN, 0.5, 5 * std::sqrt(1.0 / 12 / kN));
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(static_cast<double>(below[j]) / kN, q[j], 5 * std::sqrt(q[j] * (1 - q[j]) / kN)) << q[j];
}

// Box-Muller on SplitMix64 draws: mean 0 (standard error 1/sqrt(N)), variance 1 (standard error
// sqrt(2/N)), and P(z < 1) = Phi(1) = 0.8413447460685429 and P(z < -2) = Phi(-2) =
// 0.0227501319481792 (standard error sqrt(p (1 - p) / N)), N = 2 x 100000 values.
TEST(Random, BoxMullerDrawsAreStandardNormal) {
  constexpr int kPairs = 100000;
  constexpr double kN = 2.0 * kPairs;
  SplitMix64 g(7);
  double sum = 0, squares = 0, below_one = 0, below_minus_two = 0;
  for (int i = 0; i < kPairs; ++i) {
    const NormalPair z = box_muller(uniform01_left_open(g()), uniform01(g()));
    for (double v : {z.first, z.second}) {
      sum += v;
      squares += v * v;
      below_one += v < 1.0;
      below_minus_two += v < -2.0;
    }
  }
  const double mean = sum / kN;
  EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(kN));
  EXPECT_NEAR(squares / kN - mean * mean, 1.0, 5 * std::sqrt(2 / kN));
  const double p1 = 0.8413447460685429, p2 = 0.0227501319481792;
  EXPECT_NEAR(below_one / kN, p1, 5 * std::sqrt(p1 * (1 - p1) / kN));
  EXPECT_NEAR(below_minus_two / kN, p2, 5 * std::sqrt(p2 * (1 - p2) / kN));
}

// Poisson(1.5): mean 1.5 and variance 1.5 (standard errors sqrt(1.5 / N) and, for the variance,
// sqrt((mu + 2 mu^2) / N) = sqrt(6 / N)), P(0) = e^-1.5 (binomial standard error).
TEST(Random, PoissonKnuthHasItsMeanVarianceAndZeroProbability) {
  constexpr int kN = 100000;
  constexpr double kMean = 1.5;
  SplitMix64 g(31);
  double sum = 0, squares = 0, zeros = 0;
  for (int i = 0; i < kN; ++i) {
    const int k = poisson_knuth(g, kMean);
    ASSERT_GE(k, 0);
    sum += k;
    squares += static_cast<double>(k) * k;
    zeros += k == 0;
  }
  const double mean = sum / kN;
  EXPECT_NEAR(mean, kMean, 5 * std::sqrt(kMean / kN));
  EXPECT_NEAR(squares / kN - mean * mean, kMean, 5 * std::sqrt((kMean + 2 * kMean * kMean) / kN));
  const double p0 = std::exp(-kMean);
  EXPECT_NEAR(zeros / kN, p0, 5 * std::sqrt(p0 * (1 - p0) / kN));
  SplitMix64 none(3);
  EXPECT_EQ(poisson_knuth(none, 0.0), 0);  // exp(0) = 1 >= every draw in (0, 1)
}

TEST(Random, BernoulliIsUniform01BelowP) {
  SplitMix64 a(11), b(11);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(bernoulli(a, 0.3), uniform01(b()) < 0.3);
  SplitMix64 c(12);
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(bernoulli(c, 0.0));
    EXPECT_TRUE(bernoulli(c, 1.0));
  }
}

// Any std::uniform_random_bit_generator of 64-bit words works with the bounded draws: the data
// loader uses std::mt19937_64 (fully specified by the standard; its 10000th output from the
// default seed is 9981545732273789042, [rand.predef]). For n = 13 a draw is rejected with
// probability (2^64 mod 13) / 2^64 < 2^-60, so each result is the plain r % 13 of the next draw.
TEST(Random, BoundedDrawsTakeAStandardGenerator) {
  std::mt19937_64 mt;
  mt.discard(9999);
  EXPECT_EQ(mt(), 9981545732273789042ULL);
  std::mt19937_64 a(5), b(5);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(below_rejecting_top(a, 13), b() % 13);
}

}  // namespace
}  // namespace fast::core
