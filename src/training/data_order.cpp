#include "fast/training/data_order.hpp"

#include <mutex>
#include <random>

#include "fast/core/error.hpp"
#include "fast/core/random.hpp"

namespace fast::training {

std::vector<std::int64_t> epoch_permutation(std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
  FAST_ENFORCE(n >= 0, "epoch_permutation: expected n >= 0, got {}", n);
  FAST_ENFORCE(epoch >= 0, "epoch_permutation: expected epoch >= 0, got {}", epoch);
  std::mt19937_64 gen(core::splitmix64_at(seed, static_cast<std::uint64_t>(epoch) + 1));
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::size_t>(core::below_rejecting_top(gen, static_cast<std::uint64_t>(i) + 1));
    std::swap(perm[static_cast<std::size_t>(i)], perm[j]);
  }
  return perm;
}

std::shared_ptr<const std::vector<std::int64_t>> shared_epoch_permutation(std::int64_t n, std::uint64_t seed,
                                                                         std::int64_t epoch) {
  struct Last {
    std::mutex mutex;
    std::int64_t n = -1;
    std::uint64_t seed = 0;
    std::int64_t epoch = -1;
    std::shared_ptr<const std::vector<std::int64_t>> perm;
  };
  static Last last;
  std::lock_guard<std::mutex> lock(last.mutex);
  if (last.perm == nullptr || last.n != n || last.seed != seed || last.epoch != epoch) {
    last.perm = std::make_shared<const std::vector<std::int64_t>>(epoch_permutation(n, seed, epoch));
    last.n = n;
    last.seed = seed;
    last.epoch = epoch;
  }
  return last.perm;
}

}  // namespace fast::training
