#pragma once
// The element-wise arithmetic a window applies to its exposed tensor (internal to src/collective:
// the owner's service in window_service.cpp, the requester on one-sided memory in window_one_sided.cpp).
// Views are f32 or f64 unless said; lengths are the caller's to match.

#include <cstddef>
#include <span>
#include <vector>

#include "fast/core/buffer.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/wire/requests.hpp"

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

// An exchange_difference's parameters, as the request header carries them.
struct Exchange {
  std::size_t summed = 0;
  std::vector<double> coefficients;  // one per block; empty for the other operations
};

// One uncompressed operation (not stop) on `region`, the owner's elements it touches (any dtype
// for put and get; for exchange_difference the B blocks of `count` elements): `incoming` is the
// request's payload (empty for get), `reply` receives the data the operation returns (get,
// fetch_accumulate, fetch_average: the region before; exchange_difference: m; otherwise empty),
// `scale_at` is accumulate_scaled's extra element (empty: none). The same arithmetic, bit for bit,
// wherever the operation is applied.
void apply_plain(wire::WindowRequest::Op op, MutableView region, ConstView incoming, MutableView reply,
                 std::size_t count, const Exchange& exchange, double scale, MutableView scale_at);

// fetch_average or fetch_accumulate (`returns_in_payload`) with the reply formed in the payload's
// own memory: each element of `payload` (f32 or f64, region's dtype and length) is combined into
// `region` as apply_plain does, bit for bit, and replaced by the region's value before, so the
// owner holds no reply buffer beside the payload.
bool returns_in_payload(wire::WindowRequest::Op op);
void apply_returning_in_payload(wire::WindowRequest::Op op, MutableView region, MutableView payload);

}  // namespace fast::collective::detail
