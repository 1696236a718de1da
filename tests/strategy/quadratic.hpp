#pragma once
// The convex test problem of the strategy tests: worker w minimises f_w(x) = 1/2 ||x - c_w||^2
// (gradient x - c_w); the sum has its optimum at the mean of the centres.

#include <cmath>
#include <cstddef>
#include <span>

namespace fast::strategy::testing {

inline double centre(int worker, std::size_t i) {
  return std::sin(1.0 + worker * 0.7 + static_cast<double>(i) * 0.13) * 3.0;
}

inline double mean_centre(int workers, std::size_t i) {
  double c = 0;
  for (int w = 0; w < workers; ++w) c += centre(w, i) / workers;
  return c;
}

inline void gradient(int worker, std::span<const float> x, std::span<float> g) {
  for (std::size_t i = 0; i < x.size(); ++i) g[i] = x[i] - static_cast<float>(centre(worker, i));
}

}  // namespace fast::strategy::testing
