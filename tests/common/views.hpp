#pragma once
// Views of a test's float vectors, as the runtime and collective calls take them.

#include <span>
#include <vector>

#include "fast/core/tensor_view.hpp"

namespace fast::testing {

inline core::ConstView cview(const std::vector<float>& v) { return core::ConstView(std::span<const float>(v)); }
inline core::MutableView mview(std::vector<float>& v) { return core::MutableView(std::span<float>(v)); }

}  // namespace fast::testing
