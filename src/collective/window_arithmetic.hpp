#pragma once
// The element-wise arithmetic a window's service applies to its exposed tensor (internal to
// src/collective; window.cpp). Views are f32 or f64; lengths are the caller's to match.

#include <cstddef>
#include <span>
#include <vector>

#include "fast/core/buffer.hpp"
#include "fast/core/tensor_view.hpp"

namespace fast::collective::detail {

using core::ConstView;
using core::MutableView;

// v = b_0 + ... + b_{summed-1} over the blocks of n elements of region, in double, rounded once to
// region's dtype.
core::Buffer block_sum(ConstView region, std::size_t n, std::size_t summed);

// m = state - (b_0 + ... + b_{summed-1}), formed in double and rounded once into m (region's dtype).
void difference_into(ConstView region, std::size_t n, std::size_t summed, ConstView state, MutableView m);

// f32 copy of f32 or f64 data.
std::vector<float> to_f32(ConstView v);

// region += values (f32 or f64 region).
void add_into(MutableView region, std::span<const float> values);

// region += scale * values (f32 or f64 each), in double.
void add_scaled(MutableView region, ConstView values, double scale);

// Block k of region (n elements each) += coefficients[k] * m, in double, rounded once.
void add_to_blocks(MutableView region, std::size_t n, std::span<const double> coefficients, ConstView m);

// region += values, both f32 or both f64, in their own precision.
void add_same(MutableView region, ConstView values);

// at[0] += value, for a one-element f32 or f64 view (nothing for an empty view).
void add_scalar(MutableView at, double value);

// region = (region + incoming) / 2, the sum formed in double and rounded once.
template <typename T>
void average_into(std::span<T> region, std::span<const T> incoming) {
  for (std::size_t i = 0; i < region.size(); ++i)
    region[i] = static_cast<T>((static_cast<double>(region[i]) + static_cast<double>(incoming[i])) * 0.5);
}

}  // namespace fast::collective::detail
