#pragma once
// The order in which `fast train` visits the training samples, apart from the loader (loader.hpp)
// and without libtorch, so that a loop written elsewhere (the Python module's
// fast.epoch_permutation) can visit them in the same order.

#include <cstdint>
#include <memory>
#include <vector>

namespace fast::training {

// The permutation of epoch e (e >= 0) of [0, n), identical on every platform:
//   g = std::mt19937_64(mix64(seed + 0x9e3779b97f4a7c15 * (e + 1)))   (u64 arithmetic, wrapping)
//   mix64(z): z = (z ^ z>>30) * 0xbf58476d1ce4e5b9; z = (z ^ z>>27) * 0x94d049bb133111eb; z ^ z>>31
//   P = [0, 1, ..., n-1]; for i = n-1 down to 1: j = below(i+1); swap(P[i], P[j])
//   below(m): draw r = g() until r < 2^64-1 - (2^64-1) % m; return r % m
// (fast/core/random.hpp: g's seed is core::splitmix64_at(seed, e + 1), below is
// core::below_rejecting_top)
// (own Fisher-Yates and rejection sampling: std::shuffle and std::uniform_int_distribution are
// implementation-defined).
std::vector<std::int64_t> epoch_permutation(std::int64_t n, std::uint64_t seed, std::int64_t epoch);

// The same permutation, shared: the workers of one process (threads, or a sim run's simulated
// workers, 1,024 of which each drew all 60,000 indices) ask for the same one, which is computed
// once. Keeps the last one asked for (8 n bytes) for the process's lifetime. Thread-safe: a caller
// that finds it being computed waits for it.
std::shared_ptr<const std::vector<std::int64_t>> shared_epoch_permutation(std::int64_t n, std::uint64_t seed,
                                                                         std::int64_t epoch);

}  // namespace fast::training
