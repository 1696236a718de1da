#include "fast/core/sum_of_squares.hpp"

#include <array>
#include <cmath>

#include "fast/core/error.hpp"

namespace fast::core {

namespace {
// sum_i term(i) over i < n, in kSumOfSquaresLanes interleaved partial sums added in lane order.
template <typename Term>
double interleaved_sum(std::size_t n, Term term) noexcept {
  constexpr std::size_t L = kSumOfSquaresLanes;
  std::array<double, L> lane{};
  std::size_t i = 0;
  for (; i + L <= n; i += L)
    for (std::size_t k = 0; k < L; ++k) lane[k] += term(i + k);
  for (std::size_t k = 0; i + k < n; ++k) lane[k] += term(i + k);
  double total = 0;
  for (double s : lane) total += s;
  return total;
}
}  // namespace

double sum_of_squares(std::span<const float> x) noexcept {
  return interleaved_sum(x.size(), [x](std::size_t i) {
    const auto v = static_cast<double>(x[i]);
    return v * v;
  });
}

double l2_norm(std::span<const float> x) noexcept { return std::sqrt(sum_of_squares(x)); }

double sum_of_squared_differences(std::span<const float> x, std::span<const float> y) {
  FAST_ENFORCE(x.size() == y.size(), "sum_of_squared_differences: runs of {} and {} elements", x.size(), y.size());
  return interleaved_sum(x.size(), [x, y](std::size_t i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    return d * d;
  });
}

}  // namespace fast::core
