#include "fast/strategy/optimizer_state.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <string>

#include <fmt/format.h>

namespace fast::strategy {

void save_optimizer(std::string_view prefix, optim::Optimizer& optimizer, Checkpoint& out) {
  const std::vector<std::span<float>> buffers = optimizer.state();
  for (std::size_t k = 0; k < buffers.size(); ++k)
    out.arrays.insert_or_assign(fmt::format("{}.{}", prefix, k),
                                std::vector<float>(buffers[k].begin(), buffers[k].end()));
  out.integers.insert_or_assign(fmt::format("{}.steps", prefix), optimizer.steps_taken());
}

SavedOptimizer::SavedOptimizer(std::string_view prefix, const Checkpoint& in, std::string_view source,
                               optim::Optimizer& optimizer)
    : optimizer_(optimizer) {
  const std::vector<std::span<float>> buffers = optimizer.state();
  for (std::size_t k = 0; k < buffers.size(); ++k)
    buffers_.push_back(&in.array(fmt::format("{}.{}", prefix, k), buffers[k].size(), source));
  steps_ = in.integer(fmt::format("{}.steps", prefix), 0, std::numeric_limits<std::int64_t>::max(), source);
}

void SavedOptimizer::apply() {
  const std::vector<std::span<float>> buffers = optimizer_.state();
  for (std::size_t k = 0; k < buffers.size(); ++k)
    std::copy(buffers_[k]->begin(), buffers_[k]->end(), buffers[k].begin());
  optimizer_.set_steps_taken(steps_);
}

}  // namespace fast::strategy
