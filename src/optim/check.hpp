#pragma once
// Checks shared by the optimizers and the schedules. Each throws InvalidArgument with a message
// naming what was wrong, the expected range and the value got.

#include <cstddef>
#include <span>
#include <string_view>

namespace fast::optim::detail {

// The owner named by the optimizers' option errors.
inline constexpr std::string_view kOptimizerOptions = "OptimizerOptions";

// Throws "<option> (<rule>; <owner>.<option>): expected <expected>, got <got>" unless ok; `rule`
// names the setting that chose the optimizer or schedule as a config line ("optimizer = momentum").
void check_option(bool ok, std::string_view owner, std::string_view option, std::string_view rule,
                  std::string_view expected, double got);

// The arguments of Optimizer::step: both spans of numel elements, not overlapping, lr finite >= 0.
void check_step(std::string_view optimizer, std::span<const float> params, std::span<const float> grads,
                std::size_t numel, double lr);

// A learning rate finite and >= 0, for `call` ("step", "apply_taken").
void check_lr(std::string_view optimizer, std::string_view call, double lr);

// The arguments of take_gradient / apply_taken (Optimizer): `data` (named `what`: "grads" or
// "params") has numel elements (InvalidArgument otherwise); `taken`, whether a gradient was taken
// and not yet applied, is `expected` (InvalidUsage otherwise).
void check_split(std::string_view optimizer, std::string_view call, std::string_view what, std::span<const float> data,
                 std::size_t numel, bool taken, bool expected);

}  // namespace fast::optim::detail
