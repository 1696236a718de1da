#pragma once
// An optimizer's state in a checkpoint (docs/faults.md, "Checkpoints and resume"): its state
// buffers as the float32 arrays "<prefix>.<k>" (k = 0 .. state_buffers() - 1) and its step count as
// the integer "<prefix>.steps". A worker's own optimizer uses the prefix "optimizer"; a parameter
// server's, "ps.server.optimizer"; allreduce's DGC update, "allreduce.dgc.update".
//
// Thread-safety: none; the caller owns the optimizer and the checkpoint.

#include <cstdint>
#include <string_view>
#include <vector>

#include "fast/optim/optimizer.hpp"
#include "fast/strategy/checkpoint.hpp"

namespace fast::strategy {

void save_optimizer(std::string_view prefix, optim::Optimizer& optimizer, Checkpoint& out);

// The optimizer state saved under a prefix, read and checked against an optimizer (every buffer
// there, of numel() floats; a step count >= 0) before anything changes: IoError naming `source`
// otherwise. apply() then copies it into that optimizer. Refers into `in`, which must outlive it.
class SavedOptimizer {
 public:
  SavedOptimizer(std::string_view prefix, const Checkpoint& in, std::string_view source, optim::Optimizer& optimizer);
  std::int64_t steps() const noexcept { return steps_; }
  void apply();

 private:
  optim::Optimizer& optimizer_;
  std::vector<const std::vector<float>*> buffers_;
  std::int64_t steps_ = 0;
};

}  // namespace fast::strategy
