#pragma once
// Factories of the codecs, with their validated options (semantics in fast/compress/codec.hpp).

#include <cstddef>
#include <cstdint>
#include <memory>

#include "fast/compress/codec.hpp"
#include "fast/compress/powersgd.hpp"

namespace fast::compress {

std::unique_ptr<Codec> make_none();
std::unique_ptr<Codec> make_fp16();
std::unique_ptr<Codec> make_bf16();
std::unique_ptr<Codec> make_int8(int levels, std::uint64_t seed);
std::unique_ptr<Codec> make_sign();

// How many elements a topk/randk codec keeps of n: exactly `k` (clamped to n) when k > 0, else
// max(1, ceil(ratio n)) clamped to n (0 for n == 0).
struct KeepCount {
  double ratio = 0.01;
  std::size_t k = 0;
  std::size_t of(std::size_t n) const;
};
// per_tensor (with a layout): k = keep.of(block size) in each block of the layout, elements outside
// every block forming one more block; without a layout (or per_tensor false): k = keep.of(n) overall.
std::unique_ptr<Codec> make_topk(KeepCount keep, bool per_tensor = false, const core::Layout* layout = nullptr);
std::unique_ptr<Codec> make_randk(KeepCount keep, std::uint64_t seed);
std::unique_ptr<Codec> make_threshold(float value);
// layout nullptr: flat_layout(n) at encode time.
std::unique_ptr<Codec> make_powersgd(PowerSgdOptions options, const core::Layout* layout);

}  // namespace fast::compress
