#include "fast/core/finite.hpp"

#include <bit>
#include <cstdint>

#include "fast/core/cpu.hpp"

namespace fast::core {

namespace {
// NaN and infinity are the floats whose exponent bits are all ones. Integer and branch-free, so
// the loop vectorises; the same source is compiled for the baseline and for AVX2.
[[gnu::always_inline]] inline bool scan(std::span<const float> values) noexcept {
  std::uint32_t bad = 0;
  for (float x : values)
    bad |= static_cast<std::uint32_t>((std::bit_cast<std::uint32_t>(x) & 0x7f800000u) == 0x7f800000u);
  return bad == 0;
}

bool scan_baseline(std::span<const float> values) noexcept { return scan(values); }
FAST_TARGET_AVX2 bool scan_avx2(std::span<const float> values) noexcept { return scan(values); }
}  // namespace

bool all_finite(std::span<const float> values) noexcept {
  return cpu_features().avx2 ? scan_avx2(values) : scan_baseline(values);
}

}  // namespace fast::core
