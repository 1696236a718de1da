#pragma once
// Sums of squares of float32 runs, accumulated in double: a model's L2 norm, the distance of a
// replica to the average. Element i goes into partial sum i mod kLanes and the partial sums are
// added in a fixed order at the end, so a run gives the same value on every machine, runtime and
// thread count; the kLanes independent chains of additions run several times faster than one
// (one chain waits for each add's latency: about a millisecond per million parameters).
// Thread-safety: pure functions.

#include <cstddef>
#include <span>

namespace fast::core {

inline constexpr std::size_t kSumOfSquaresLanes = 8;

// sum_i x[i]^2.
double sum_of_squares(std::span<const float> x) noexcept;
// The L2 norm of x: sqrt(sum_of_squares(x)) (a model's param_norm).
double l2_norm(std::span<const float> x) noexcept;
// sum_i (x[i] - y[i])^2, each difference taken in double. InvalidArgument when the lengths differ.
double sum_of_squared_differences(std::span<const float> x, std::span<const float> y);

}  // namespace fast::core
