#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/random_vectors.hpp"
#include "fast/compress/codec.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/compress/powersgd.hpp"
#include "fast/core/error.hpp"
#include "payloads.hpp"

namespace fast::compress {
namespace {

using namespace payloads;

using Matrix = std::vector<float>;  // row-major

using fast::testing::gaussian;

// rows x cols = A (rows x r) B^T (cols x r).
Matrix low_rank(std::size_t rows, std::size_t cols, std::size_t r, std::uint32_t seed) {
  const auto a = gaussian(rows * r, seed), b = gaussian(cols * r, seed + 1);
  Matrix m(rows * cols, 0.0f);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      for (std::size_t c = 0; c < r; ++c) m[i * cols + j] += a[i * r + c] * b[j * r + c];
  return m;
}

// Columns of a random rows x k matrix made orthonormal (classical Gram-Schmidt in double; k <= rows).
std::vector<double> orthonormal_columns(std::size_t rows, std::size_t k, std::uint32_t seed) {
  const auto g = gaussian(rows * k, seed);
  std::vector<double> u(g.begin(), g.end());
  for (std::size_t c = 0; c < k; ++c) {
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t d = 0; d < c; ++d) {
        double dot = 0;
        for (std::size_t i = 0; i < rows; ++i) dot += u[i * k + c] * u[i * k + d];
        for (std::size_t i = 0; i < rows; ++i) u[i * k + c] -= dot * u[i * k + d];
      }
    double nrm = 0;
    for (std::size_t i = 0; i < rows; ++i) nrm += u[i * k + c] * u[i * k + c];
    for (std::size_t i = 0; i < rows; ++i) u[i * k + c] /= std::sqrt(nrm);
  }
  return u;
}

core::Layout matrix_then_bias(std::size_t rows, std::size_t cols, std::size_t bias) {
  return {core::TensorBlock{0, rows * cols, rows, {rows, cols}, "w"},
          core::TensorBlock{rows * cols, bias, 1, {bias}, "b"}};
}

double frobenius_error(const std::vector<float>& a, const std::vector<float>& b, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

TEST(PowerSgd, RecoversARankThreeMatrixAndSendsTheBiasDense) {
  const std::size_t rows = 40, cols = 30, bias = 7;
  auto x = low_rank(rows, cols, 3, 1);
  const auto b = gaussian(bias, 3);
  x.insert(x.end(), b.begin(), b.end());
  const auto layout = matrix_then_bias(rows, cols, bias);
  auto c = make_codec("powersgd:rank=4", 9, &layout);
  EXPECT_EQ(c->name(), "powersgd");
  for (int step = 0; step < 2; ++step) {
    const auto p = encode(*c, x);
    EXPECT_EQ(p.size(), c->encoded_bytes(x.size()));
    EXPECT_EQ(p.size(), 16 + 8 + 32 + 4 * (4 * (rows + cols) + bias));
    const auto y = decode(*c, p, x.size());
    const double scale = frobenius_error(x, std::vector<float>(x.size(), 0.0f), 0, rows * cols);
    EXPECT_LE(frobenius_error(x, y, 0, rows * cols), 1e-5 * scale) << "step " << step;
    for (std::size_t i = rows * cols; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << i;
  }
}

// A zero matrix zeroes P and so Q; warm start must not keep Q at zero (P = M Q would then stay 0
// for every later matrix): the zero columns are redrawn, and a rank-1 matrix sent next is recovered.
TEST(PowerSgd, AZeroMatrixDoesNotStallTheWarmStart) {
  const std::size_t rows = 12, cols = 9;
  const auto layout = matrix_then_bias(rows, cols, 0);
  auto c = make_codec("powersgd:rank=2", 4, &layout);
  const std::vector<float> zero(rows * cols, 0.0f);
  const auto z = decode(*c, encode(*c, zero), zero.size());
  for (float v : z) ASSERT_EQ(v, 0.0f);
  const auto x = low_rank(rows, cols, 1, 8);
  const auto y = decode(*c, encode(*c, x), x.size());
  const double scale = frobenius_error(x, zero, 0, x.size());
  EXPECT_LE(frobenius_error(x, y, 0, x.size()), 1e-5 * scale);
}

TEST(PowerSgd, WithoutLayoutEverythingTravelsDense) {
  const auto x = gaussian(1000, 4);
  auto c = make_codec("powersgd");
  const auto p = encode(*c, x);
  EXPECT_EQ(p.size(), 16 + 8 + 4 * 1000u);
  EXPECT_EQ(decode(*c, p, x.size()), x);
  const core::Layout vectors{core::TensorBlock{0, 600, 1, {600}, "a"}, core::TensorBlock{600, 400, 1, {400}, "b"}};
  auto v = make_codec("powersgd:rank=2", 0, &vectors);
  EXPECT_EQ(decode(*v, encode(*v, x), x.size()), x);
}

TEST(PowerSgd, PHasOrthonormalColumnsAndDependentOrZeroColumnsBecomeZero) {
  const std::size_t rows = 50, cols = 20, r = 3;
  const core::Layout layout{core::TensorBlock{0, rows * cols, rows, {rows, cols}, "w"}};
  PowerSgdState s(layout, rows * cols, {.rank = r, .warm_start = true, .seed = 5});
  const auto m = gaussian(rows * cols, 6);
  std::vector<float> p(s.p_size());
  s.compute_p(m, p);
  s.orthonormalise(p);
  for (std::size_t a = 0; a < r; ++a)
    for (std::size_t b = 0; b < r; ++b) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i) dot += double(p[i * r + a]) * p[i * r + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5) << a << "," << b;
    }
  // P with columns p0, p0 (dependent) and 0.
  const auto p0 = gaussian(rows, 7);
  for (std::size_t i = 0; i < rows; ++i) p[i * r] = p[i * r + 1] = p0[i], p[i * r + 2] = 0.0f;
  s.orthonormalise(p);
  double n0 = 0, n1 = 0, n2 = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    n0 += double(p[i * r]) * p[i * r];
    n1 += double(p[i * r + 1]) * p[i * r + 1];
    n2 += double(p[i * r + 2]) * p[i * r + 2];
  }
  EXPECT_NEAR(n0, 1.0, 1e-5);
  EXPECT_EQ(n1, 0.0);
  EXPECT_EQ(n2, 0.0);
  // set_q keeps non-zero columns and redraws zero ones (a zero Q column would stay zero forever).
  std::vector<float> q(s.q_size(), 1.0f);
  for (std::size_t j = 0; j < cols; ++j) q[j * r + 2] = 0.0f;
  s.set_q(q);
  double kept = 0, redrawn = 0;
  for (std::size_t j = 0; j < cols; ++j) {
    kept += std::abs(s.q()[j * r] - 1.0f);
    redrawn += std::abs(s.q()[j * r + 2]);
  }
  EXPECT_EQ(kept, 0.0);
  EXPECT_GT(redrawn, 0.0);
}

// M = U diag(sigma) V^T with known singular values: the best rank-4 error is sqrt(sum of the rest^2).
// Warm-started steps are subspace iteration: the error falls monotonically to the optimum.
TEST(PowerSgd, WarmStartImprovesMonotonicallyToTheBestRankRError) {
  const std::size_t rows = 60, cols = 40;
  const std::vector<double> sigma{10, 9, 8, 7, 3, 2, 1, 0.5};
  const auto u = orthonormal_columns(rows, sigma.size(), 11), v = orthonormal_columns(cols, sigma.size(), 12);
  std::vector<float> m(rows * cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (std::size_t c = 0; c < sigma.size(); ++c) s += u[i * sigma.size() + c] * sigma[c] * v[j * sigma.size() + c];
      m[i * cols + j] = static_cast<float>(s);
    }
  const double best = std::sqrt(9.0 + 4.0 + 1.0 + 0.25);
  const core::Layout layout{core::TensorBlock{0, rows * cols, rows, {rows, cols}, "w"}};
  auto c = make_codec("powersgd:rank=4", 3, &layout);
  double prev = INFINITY, first = 0;
  for (int step = 0; step < 30; ++step) {
    const double err = frobenius_error(m, decode(*c, encode(*c, m), m.size()), 0, m.size());
    if (step == 0) first = err;
    EXPECT_LE(err, prev * (1 + 1e-5)) << "step " << step;
    EXPECT_GE(err, best * (1 - 1e-5)) << "step " << step;
    prev = err;
  }
  EXPECT_LE(prev, best * 1.001);
  EXPECT_GT(first, prev);
  // Without warm start every step starts from a fresh random Q: no convergence guarantee, but never
  // better than the optimum.
  auto cold = make_codec("powersgd:rank=4,warm_start=false", 3, &layout);
  for (int step = 0; step < 3; ++step)
    EXPECT_GE(frobenius_error(m, decode(*cold, encode(*cold, m), m.size()), 0, m.size()), best * (1 - 1e-5));
}

// The all-reduce composition of powersgd.hpp over 3 simulated workers gives P P^T mean(M).
TEST(PowerSgd, AllReduceCompositionApproximatesTheMeanGradient) {
  const std::size_t rows = 24, cols = 16, bias = 5, n = rows * cols + bias, W = 3;
  const auto layout = matrix_then_bias(rows, cols, bias);
  std::vector<std::vector<float>> grads;
  std::vector<double> mean(n, 0.0);
  for (std::size_t w = 0; w < W; ++w) {
    grads.push_back(low_rank(rows, cols, 2, 20 + std::uint32_t(w)));
    const auto b = gaussian(bias, 30 + std::uint32_t(w));
    grads.back().insert(grads.back().end(), b.begin(), b.end());
    for (std::size_t i = 0; i < n; ++i) mean[i] += grads.back()[i] / double(W);
  }
  std::vector<PowerSgdState> states;
  for (std::size_t w = 0; w < W; ++w) states.emplace_back(layout, n, PowerSgdOptions{.rank = 6, .seed = 8});
  std::vector<float> p(states[0].p_size(), 0.0f), q(states[0].q_size(), 0.0f), local;
  for (std::size_t w = 0; w < W; ++w) {  // steps 1-2: local P, summed
    local.assign(p.size(), 0.0f);
    states[w].compute_p(grads[w], local);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] += local[i];
  }
  for (auto& s : states)
    EXPECT_EQ(std::vector<float>(s.q().begin(), s.q().end()),
              std::vector<float>(states[0].q().begin(), states[0].q().end()));
  states[0].orthonormalise(p);           // step 3 (identical on every worker)
  for (std::size_t w = 0; w < W; ++w) {  // steps 4-5: local Q, summed, / W
    local.assign(q.size(), 0.0f);
    states[w].compute_q(grads[w], p, local);
    for (std::size_t i = 0; i < q.size(); ++i) q[i] += local[i] / float(W);
  }
  std::vector<float> out(n, 0.0f);
  states[0].reconstruct(p, q, out);  // step 7
  // mean(M) has rank <= 6 (three rank-2 terms): recovered up to rounding.
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    err += (out[i] - mean[i]) * (out[i] - mean[i]);
    scale += mean[i] * mean[i];
  }
  EXPECT_LE(std::sqrt(err), 1e-4 * std::sqrt(scale));                     // float32 rounding of P, Q and the sums
  for (std::size_t i = rows * cols; i < n; ++i) EXPECT_EQ(out[i], 0.0f);  // dense part: not touched
  EXPECT_EQ(states[0].dense_ranges().size(), 1u);
  EXPECT_EQ(states[0].dense_ranges()[0], std::make_pair(rows * cols, n));
}

// Error feedback over a low-rank codec: what was not sent stays in the residual (the sum identity).
TEST(PowerSgd, ErrorFeedbackResidualCarriesWhatTheLowRankMissed) {
  const std::size_t rows = 20, cols = 15, bias = 4, n = rows * cols + bias;
  const auto layout = matrix_then_bias(rows, cols, bias);
  ErrorFeedback ef(make_codec("powersgd:rank=2", 4, &layout));
  std::vector<double> sum_x(n, 0.0), sum_d(n, 0.0);
  core::Buffer msg;
  std::vector<float> y(n);
  for (int step = 0; step < 30; ++step) {
    const auto x = gaussian(n, 100 + std::uint32_t(step));
    ef.encode(1, std::span<const float>(x), msg);
    ef.codec().decode(msg.view(), std::span<float>(y));
    for (std::size_t i = 0; i < n; ++i) sum_x[i] += x[i], sum_d[i] += y[i];
  }
  const auto r = ef.residual(1);
  double err = 0, norm = 0, res = 0;
  for (std::size_t i = 0; i < n; ++i) {
    err += std::pow(sum_d[i] + r[i] - sum_x[i], 2);
    norm += sum_x[i] * sum_x[i];
    res += r[i] * r[i];
  }
  EXPECT_LE(std::sqrt(err), 1e-5 * std::sqrt(norm));
  EXPECT_GT(res, 0.0);  // rank 2 of a full-rank 20 x 15 stream: something is left behind
  for (std::size_t i = rows * cols; i < n; ++i) EXPECT_NEAR(r[i], 0.0, 1e-6);  // the bias travels exactly
}

TEST(PowerSgd, MalformedPayloadsAreRejected) {
  const std::size_t rows = 6, cols = 5, bias = 3, n = rows * cols + bias;
  const auto layout = matrix_then_bias(rows, cols, bias);
  auto c = make_codec("powersgd:rank=2", 1, &layout);
  const auto x = gaussian(n, 2);
  const auto good = encode(*c, x);  // block record at 24: offset, rows, cols, rank
  EXPECT_EQ(decode(*c, good, n).size(), n);
  expect_rejected(*c, {good.begin(), good.begin() + 20}, n, "truncated");
  expect_rejected(*c, {good.begin(), good.end() - 4}, n, "truncated");
  auto longer = good;
  longer.push_back(0);
  expect_rejected(*c, longer, n, "wrong-length");
  auto many = good;
  put_u64(many, 16, 1000);
  expect_rejected(*c, many, n, "block records do not fit");
  auto offset = good;
  put_u64(offset, 24, n + 1);
  expect_rejected(*c, offset, n, "out of order or range");
  auto tall = good;
  put_u64(tall, 32, 7);  // 7 x 5 = 35 > n = 33
  expect_rejected(*c, tall, n, "out of range");
  auto huge = good;
  put_u64(huge, 40, ~0ull / 2);  // rows x cols would overflow
  expect_rejected(*c, huge, n, "out of range");
  auto rank0 = good;
  put_u64(rank0, 48, 0);
  expect_rejected(*c, rank0, n, "rank 0");
  auto rank6 = good;
  put_u64(rank6, 48, 6);
  expect_rejected(*c, rank6, n, "rank 6");
  auto rank3 = good;  // a valid record whose P and Q no longer match the payload length
  put_u64(rank3, 48, 3);
  expect_rejected(*c, rank3, n, "truncated");
  expect_rejected(*c, good, n + 1, "n = 33");
}

TEST(PowerSgd, OptionsAndLayoutsAreValidated) {
  EXPECT_THROW(make_codec("powersgd:rank=0"), InvalidArgument);
  EXPECT_THROW(make_codec("powersgd:rank=2000"), InvalidArgument);
  EXPECT_THROW(make_codec("powersgd:warm_start=yes"), InvalidArgument);
  EXPECT_NO_THROW(make_codec("powersgd:rank=1,warm_start=false"));
  const core::Layout overlap{core::TensorBlock{0, 20, 4, {4, 5}, "a"}, core::TensorBlock{10, 20, 4, {4, 5}, "b"}};
  EXPECT_THROW(PowerSgdState(overlap, 40, {}), InvalidArgument);
  const core::Layout vector_then_matrix{core::TensorBlock{0, 20, 1, {20}, "v"},
                                        core::TensorBlock{10, 20, 4, {4, 5}, "m"}};
  EXPECT_THROW(PowerSgdState(vector_then_matrix, 40, {}), InvalidArgument);
  const core::Layout outside{core::TensorBlock{0, 20, 4, {4, 5}, "a"}};
  EXPECT_THROW(PowerSgdState(outside, 10, {}), InvalidArgument);
  auto c = make_codec("powersgd", 0, &outside);
  core::Buffer out;
  const std::vector<float> x(10, 1.0f);
  EXPECT_THROW(c->encode(std::span<const float>(x), out), InvalidArgument);
  const std::vector<float> bad{1.0f, NAN};
  EXPECT_THROW(make_codec("powersgd")->encode(std::span<const float>(bad), out), InvalidArgument);
}

}  // namespace
}  // namespace fast::compress
