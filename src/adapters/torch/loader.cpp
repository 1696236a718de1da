#include "fast/adapters/torch/loader.hpp"

#include <limits>
#include <mutex>
#include <random>

#include "fast/core/error.hpp"
#include "fast/core/random.hpp"

namespace fast::torch {

struct ShardedLoader::Cache {
  std::mutex mutex;
  std::int64_t epoch = -1;
  ::torch::Tensor perm;  // [steps_per_epoch x batch] int64: this worker's samples of `epoch`, in step order
};

ShardedLoader::ShardedLoader(std::shared_ptr<const Dataset> data, int rank, int workers, std::int64_t batch,
                             std::uint64_t seed)
    : data_(std::move(data)),
      rank_(rank),
      workers_(workers),
      batch_(batch),
      seed_(seed),
      cache_(std::make_unique<Cache>()) {
  FAST_ENFORCE(data_ != nullptr, "ShardedLoader: expected a dataset, got null");
  FAST_ENFORCE(workers_ >= 1, "ShardedLoader: expected workers >= 1, got {}", workers_);
  FAST_ENFORCE(rank_ >= 0 && rank_ < workers_, "ShardedLoader: expected rank in [0, {}), got {}", workers_, rank_);
  FAST_ENFORCE(batch_ >= 1, "ShardedLoader: expected batch >= 1, got {}", batch_);
  FAST_ENFORCE(data_->size() >= workers_ * batch_,
               "ShardedLoader: not enough samples for one step: expected at least workers*batch = {}*{} = {}, got {}",
               workers_, batch_, workers_ * batch_, data_->size());
}

ShardedLoader::ShardedLoader(ShardedLoader&&) noexcept = default;
ShardedLoader& ShardedLoader::operator=(ShardedLoader&&) noexcept = default;
ShardedLoader::~ShardedLoader() = default;

std::int64_t ShardedLoader::steps_per_epoch() const noexcept { return data_->size() / (workers_ * batch_); }

::torch::Tensor ShardedLoader::index_tensor(std::int64_t epoch, std::int64_t step) const {
  FAST_ENFORCE(epoch >= 0, "ShardedLoader::batch: expected epoch >= 0, got {}", epoch);
  FAST_ENFORCE(step >= 0 && step < steps_per_epoch(), "ShardedLoader::batch: expected step in [0, {}), got {}",
               steps_per_epoch(), step);
  ::torch::Tensor perm;
  {
    std::lock_guard lock(cache_->mutex);
    if (cache_->epoch != epoch) {
      // Only this worker's part of the epoch's order is kept (step s: positions s * workers * batch
      // + rank * batch onwards), not the whole permutation: 1,024 simulated workers each kept all
      // 60,000 indices.
      const std::shared_ptr<const std::vector<std::int64_t>> p =
          training::shared_epoch_permutation(data_->size(), seed_, epoch);
      std::vector<std::int64_t> mine;
      mine.reserve(static_cast<std::size_t>(steps_per_epoch() * batch_));
      for (std::int64_t s = 0; s < steps_per_epoch(); ++s) {
        const auto first = p->begin() + s * workers_ * batch_ + rank_ * batch_;
        mine.insert(mine.end(), first, first + batch_);
      }
      cache_->perm = ::torch::tensor(mine, ::torch::kInt64);
      cache_->epoch = epoch;
    }
    perm = cache_->perm;  // the tensor is never modified, only replaced: safe to use unlocked
  }
  return perm.narrow(0, step * batch_, batch_);
}

std::vector<std::int64_t> ShardedLoader::indices(std::int64_t epoch, std::int64_t step) const {
  const ::torch::Tensor idx = index_tensor(epoch, step).contiguous();
  const std::int64_t* p = idx.data_ptr<std::int64_t>();
  return {p, p + idx.numel()};
}

Batch ShardedLoader::batch(std::int64_t epoch, std::int64_t step) const {
  const ::torch::Tensor idx = index_tensor(epoch, step);
  return {data_->features_of(idx), data_->labels.index_select(0, idx)};
}

}  // namespace fast::torch
