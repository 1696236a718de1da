#pragma once
// decode_codes: the features of uint8 codes through a table of 256 float32 values (dataset.hpp's
// codes form). Shared by Dataset's readers (dataset.cpp) and the split kept as features
// (fashion_mnist.cpp), so both forms give the same bits by construction.

#include <cstdint>
#include <span>

#include <torch/types.h>

namespace fast::torch {

// out[i] = table[codes[i]] for every code; `out` holds codes.size() floats. Throws InvalidArgument
// unless `table` is 256 contiguous float32 values. Thread-safety: reads `table`, writes `out` only.
void decode_codes(std::span<const std::uint8_t> codes, const ::torch::Tensor& table, float* out);

}  // namespace fast::torch
