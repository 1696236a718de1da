#pragma once
// float32 <-> binary16 (fp16) and bfloat16 conversions, round to nearest even, written out bit by bit
// (no compiler extension): the conversions of the fp16 and bf16 codecs.
//   f32_to_f16: finite values of magnitude >= 65520 become inf; subnormal fp16 results are exact-rounded;
//               NaN stays NaN (quiet, payload truncated), inf stays inf.
//   f32_to_bf16: NaN stays a quiet NaN; values that round past the largest bf16 become inf.
// The widening conversions are exact.

#include <cstdint>

namespace fast::compress {

std::uint16_t f32_to_f16(float value) noexcept;
float f16_to_f32(std::uint16_t bits) noexcept;
std::uint16_t f32_to_bf16(float value) noexcept;
float bf16_to_f32(std::uint16_t bits) noexcept;

}  // namespace fast::compress
