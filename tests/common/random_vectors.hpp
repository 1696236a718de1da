#pragma once
// Reproducible random test data.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace fast::testing {

// n draws of N(mean, stddev^2) in float32 from a Mersenne Twister seeded with `seed`: the same
// vector for the same arguments on every run and machine (libstdc++'s normal distribution).
inline std::vector<float> gaussian(std::size_t n, std::uint32_t seed, float mean = 0.0f, float stddev = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(mean, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

}  // namespace fast::testing
