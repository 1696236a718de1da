#pragma once
// Checks shared by the optimizers and the schedules. Each throws InvalidArgument with a message
// naming what was wrong, the expected range and the value got.

#include <cstddef>
#include <span>
#include <string_view>

namespace fast::optim::detail {

// The owner named by the optimizers' option errors.
inline constexpr std::string_view kOptimizerOptions = "OptimizerOptions";

// Throws "<option> (<rule>, <owner>.<option>): expected <expected>, got <got>" unless ok.
void check_option(bool ok, std::string_view owner, std::string_view option, std::string_view rule,
                  std::string_view expected, double got);

// The arguments of Optimizer::step: both spans of numel elements, not overlapping, lr finite >= 0.
void check_step(std::string_view optimizer, std::span<const float> params, std::span<const float> grads,
                std::size_t numel, double lr);

}  // namespace fast::optim::detail
