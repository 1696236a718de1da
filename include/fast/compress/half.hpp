#pragma once
// float32 <-> binary16 (fp16) and bfloat16 conversions, round to nearest even, written out bit by bit
// (no compiler extension, no F16C): the conversions of the fp16 and bf16 codecs. Branch-free (every
// case is computed and selected), so loops over them vectorise.
//   f32_to_f16: finite values of magnitude >= 65520 become inf; subnormal fp16 results are exact-rounded
//               (by a float addition of 0.5, whose ulp is the fp16 subnormal step 2^-24, under the default
//               round-to-nearest-even mode); NaN stays NaN (quiet, payload truncated), inf stays inf.
//   f32_to_bf16: NaN stays a quiet NaN; values that round past the largest bf16 become inf.
// The widening conversions are exact.

#include <bit>
#include <cstdint>

namespace fast::compress {

inline std::uint16_t f32_to_f16(float value) noexcept {
  const auto x = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t a = x & 0x7fffffffu;
  // >= 2^-14: rebias the exponent by (15 - 127) << 23 and round the 13 dropped bits to nearest even; a
  // carry into the exponent is correct (65520..65535 become inf).
  const std::uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
  // < 2^-14: |value| + 0.5 puts round(|value| 2^24) in the low mantissa bits.
  const std::uint32_t sub = std::bit_cast<std::uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3f000000u;
  const std::uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  // Selections by masks (all-ones when the case holds), not branches; a < 2^31 so signed compares work.
  const auto ai = static_cast<std::int32_t>(a);
  const std::uint32_t is_sub = 0u - static_cast<std::uint32_t>(ai < 0x38800000);
  const std::uint32_t is_big = 0u - static_cast<std::uint32_t>(ai >= 0x47800000);  // >= 65536 and inf
  const std::uint32_t is_nan = 0u - static_cast<std::uint32_t>(ai > 0x7f800000);
  std::uint32_t h = (sub & is_sub) | (normal & ~is_sub);
  h = (0x7c00u & is_big) | (h & ~is_big);
  h = (nan & is_nan) | (h & ~is_nan);
  return static_cast<std::uint16_t>(h | sign);
}

inline float f16_to_f32(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t em = bits & 0x7fffu;
  const std::uint32_t e = em & 0x7c00u;
  const std::uint32_t normal = (em << 13) + 0x38000000u;  // rebias (127 - 15) << 23
  // Subnormal: mantissa m as 2^-14 (1 + m 2^-10) - 2^-14 = m 2^-24, exact.
  const std::uint32_t sub = std::bit_cast<std::uint32_t>(std::bit_cast<float>((em << 13) + 0x38800000u) - 0x1p-14f);
  const std::uint32_t infnan = (em << 13) | 0x7f800000u;
  const std::uint32_t is_sub = 0u - static_cast<std::uint32_t>(e == 0);
  const std::uint32_t is_special = 0u - static_cast<std::uint32_t>(e == 0x7c00u);
  std::uint32_t o = (sub & is_sub) | (normal & ~is_sub);
  o = (infnan & is_special) | (o & ~is_special);
  return std::bit_cast<float>(o | sign);
}

inline std::uint16_t f32_to_bf16(float value) noexcept {
  const auto x = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (x >> 16) | 0x40u;  // quiet NaN
  return static_cast<std::uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

inline float bf16_to_f32(std::uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace fast::compress
