#pragma once
// ShardedLoader: the mini-batches of one worker of a data-parallel group.
//
// Rule (docs/data.md; tests rely on it exactly): epoch e has a permutation P_e of [0, N) drawn
// from epoch_permutation(N, seed, e) — the same on every worker. Worker `rank` of `workers`, at
// step t of epoch e, gets the samples P_e[t*workers*batch + rank*batch + i], i = 0..batch-1, in
// that order. So W workers with batch b see together, step by step and in the same order, the
// samples that one worker with batch W*b sees. Each epoch has floor(N / (workers*batch)) steps;
// the remaining samples of the permutation are skipped in that epoch.
//
// Thread-safety: batch() may be called from several threads at once (this worker's part of the
// current epoch's permutation is cached under a mutex). Movable, not copyable. The dataset is shared and only read.

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/training/data_order.hpp"

namespace fast::torch {

struct Batch {
  ::torch::Tensor x;  // [batch,1,28,28] float32 (a copy: Dataset::features_of the batch's rows)
  ::torch::Tensor y;  // [batch] int64
};

class ShardedLoader {
 public:
  // InvalidArgument when data is null, workers < 1, rank outside [0, workers), batch < 1, or the
  // dataset has fewer than workers*batch samples (not enough for one step).
  ShardedLoader(std::shared_ptr<const Dataset> data, int rank, int workers, std::int64_t batch, std::uint64_t seed);
  ShardedLoader(ShardedLoader&&) noexcept;
  ShardedLoader& operator=(ShardedLoader&&) noexcept;
  ~ShardedLoader();

  // floor(N / (workers*batch)).
  std::int64_t steps_per_epoch() const noexcept;
  // This worker's batch at (epoch, step); InvalidArgument when epoch < 0 or step is outside
  // [0, steps_per_epoch()).
  Batch batch(std::int64_t epoch, std::int64_t step) const;

  // The dataset indices of that batch, in order (what batch() gathers).
  std::vector<std::int64_t> indices(std::int64_t epoch, std::int64_t step) const;

  int rank() const noexcept { return rank_; }
  int workers() const noexcept { return workers_; }
  std::int64_t batch_size() const noexcept { return batch_; }
  const Dataset& data() const noexcept { return *data_; }

 private:
  ::torch::Tensor index_tensor(std::int64_t epoch, std::int64_t step) const;

  std::shared_ptr<const Dataset> data_;
  int rank_;
  int workers_;
  std::int64_t batch_;
  std::uint64_t seed_;
  struct Cache;  // this worker's part of the last epoch's permutation, under a mutex
  std::unique_ptr<Cache> cache_;
};

}  // namespace fast::torch
