#pragma once
// Whole-buffer checks for NaN and infinity, used to reject a bad gradient before it touches any
// model state. One read pass; AVX2 when the CPU has it, so the check costs little next to a step.

#include <span>

namespace fast::core {

// True when no element is NaN or infinite.
bool all_finite(std::span<const float> values) noexcept;

}  // namespace fast::core
