#pragma once
// core/random: FAST's one source of seeded randomness, fully specified so that a seed gives the same
// numbers on every platform, compiler and standard library (std::*_distribution and std::shuffle are
// implementation-defined; nothing in FAST uses them). Header-only, no state outside the objects.
//
//   mix64(z)                    SplitMix64's output function (Steele, Lea, Flood 2014; the
//                               constants of Vigna's splitmix64.c), a bijection on 64 bits:
//                                 z = (z ^ z>>30) * 0xBF58476D1CE4E5B9; z = (z ^ z>>27) * 0x94D049BB133111EB;
//                                 return z ^ z>>31            (u64 arithmetic, wrapping)
//   SplitMix64(seed)            the generator: state += kGoldenGamma; return mix64(state). For seed
//                               1234567 the first outputs are 6457827717110365317, 3203168211198807973.
//   splitmix64_at(base, k, g)   mix64(base + k * g): counter-based access; with g = kGoldenGamma and
//                               k >= 1 it is the k-th output of SplitMix64(base), no state needed.
//   derive_seed(seed, salt, id) the seed of stream `id` (a rank, a round, an epoch...) of the use
//                               named by `salt` (a 64-bit constant spelling the use, e.g. "matching"):
//                               splitmix64_at(mix64(seed ^ salt), id). Distinct ids give distinct
//                               seeds (k -> base + k g is injective for odd g, and mix64 is a
//                               bijection); distinct salts give unrelated streams. New code derives
//                               its seeds with this.
//   worker_seed(seed, rank)     seed * kGoldenGamma + rank + 1: the older per-worker codec seed
//                               (choco, codec all-reduce, ps). Only an offset, not a hash: its users
//                               feed it to a generator that mixes its seed (std::mt19937_64's
//                               seeding, SplitMix64). Kept because recorded runs depend on it.
//
// Numbers from 64-bit words x (e.g. next()), all using the top 53 bits of x:
//   uniform01(x)            (x >> 11) * 2^-53                 in [0, 1)
//   uniform01_open(x)       ((x >> 11) + 0.5) * 2^-53         in (0, 1)
//   uniform01_left_open(x)  ((x >> 11) + 1) * 2^-53           in (0, 1]
// Integers in [0, n), n >= 1, from a generator g (any callable returning uniform u64: SplitMix64,
// std::mt19937_64), both by modulo with rejection (unbiased; they differ only in which draws they
// reject, so they give different streams and are not interchangeable):
//   below_rejecting_top(g, n)     draws r until r < L = (2^64-1) - (2^64-1) % n; returns r % n
//                                 (SplitMix64::below; topology, gossip strategies, data loader)
//   below_rejecting_bottom(g, n)  draws r until r >= 2^64 mod n; returns r % n (OpenBSD's
//                                 arc4random_uniform; randk's index sampling)
// Other distributions:
//   box_muller(u1, u2)       two independent standard normals from u1 in (0, 1], u2 in [0, 1):
//                            r = sqrt(-2 ln u1), a = 2 pi u2; returns {r cos a, r sin a}
//   poisson_knuth(g, mean)   Poisson(mean) by multiplying uniform01_open draws until the product
//                            falls to exp(-mean) or below (Knuth); O(mean) draws, for small means
//   bernoulli(g, p)          uniform01(g()) < p: true with probability p, p in [0, 1]
//
// Thread-safety: the functions are pure; a SplitMix64 object is a value (one per thread).

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

namespace fast::core {

// 2^64 / phi, odd: SplitMix64's increment (the "golden gamma").
inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t splitmix64_at(std::uint64_t base, std::uint64_t k,
                                      std::uint64_t gamma = kGoldenGamma) noexcept {
  return mix64(base + k * gamma);
}

constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t salt, std::uint64_t id) noexcept {
  return splitmix64_at(mix64(seed ^ salt), id);
}

constexpr std::uint64_t worker_seed(std::uint64_t seed, std::uint64_t rank) noexcept {
  return seed * kGoldenGamma + rank + 1;
}

constexpr double uniform01(std::uint64_t x) noexcept { return static_cast<double>(x >> 11) * 0x1.0p-53; }
constexpr double uniform01_open(std::uint64_t x) noexcept { return (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53; }
constexpr double uniform01_left_open(std::uint64_t x) noexcept {
  return (static_cast<double>(x >> 11) + 1.0) * 0x1.0p-53;
}

template <typename G>
std::uint64_t below_rejecting_top(G& g, std::uint64_t n) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t limit = kMax - kMax % n;
  std::uint64_t r;
  do {
    r = g();
  } while (r >= limit);
  return r % n;
}

template <typename G>
std::uint64_t below_rejecting_bottom(G& g, std::uint64_t n) {
  const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  for (;;) {
    const std::uint64_t r = g();
    if (r >= threshold) return r % n;
  }
}

// The generator: a 64-bit state, one addition and one mix64 per output; period 2^64. Satisfies
// std::uniform_random_bit_generator.
class SplitMix64 {
 public:
  using result_type = std::uint64_t;
  explicit constexpr SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}
  constexpr std::uint64_t next() noexcept { return mix64(state_ += kGoldenGamma); }
  constexpr std::uint64_t operator()() noexcept { return next(); }
  // Uniform in [0, n), n >= 1: below_rejecting_top(*this, n).
  std::uint64_t below(std::uint64_t n) { return below_rejecting_top(*this, n); }
  static constexpr std::uint64_t min() noexcept { return 0; }
  static constexpr std::uint64_t max() noexcept { return std::numeric_limits<std::uint64_t>::max(); }

 private:
  std::uint64_t state_;
};

struct NormalPair {
  double first;
  double second;
};

inline NormalPair box_muller(double u1, double u2) {
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2 * std::numbers::pi * u2;
  return {radius * std::cos(angle), radius * std::sin(angle)};
}

template <typename G>
int poisson_knuth(G& g, double mean) {
  const double limit = std::exp(-mean);
  int k = 0;
  for (double p = uniform01_open(g()); p > limit; p *= uniform01_open(g())) ++k;
  return k;
}

template <typename G>
bool bernoulli(G& g, double p) {
  return uniform01(g()) < p;
}

}  // namespace fast::core
