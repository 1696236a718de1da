#pragma once
// The deterministic generator behind every random topology, so that a (spec, n, seed, round)
// gives the same graph on every platform and worker, and behind the seeded peer choices of the
// gossip strategies. No std distributions (their output is implementation-defined).

#include <cstdint>

namespace fast::topology {

// The SplitMix64 output function: a bijective 64-bit mixer.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// SplitMix64: a small generator with a fixed, documented output on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ULL); }
  // Uniform in [0, bound), bound >= 1, without modulo bias (rejection).
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t x;
    do {
      x = next();
    } while (x >= limit);
    return x % bound;
  }

 private:
  std::uint64_t state_;
};

}  // namespace fast::topology
