#pragma once
// Layout: how a flat parameter (or gradient) buffer splits into the model's tensors. Framework
// adapters fill it (fast::torch::Replica::layout()); codecs that exploit shape (powersgd) and cost
// models (flops per sample under the sim runtime) read it. A buffer without a known layout is one
// vector block.

#include <cstddef>
#include <string>
#include <vector>

namespace fast::core {

// One tensor of the flat buffer: elements [offset, offset + numel), row-major, seen as a matrix of
// `rows` x (numel / rows). rows is the tensor's first dimension (1 for a 0-d or 1-d tensor), so a
// Linear weight [out, in] is out x in and a Conv2d weight [out, in, kh, kw] is out x (in*kh*kw).
struct TensorBlock {
  std::size_t offset = 0;
  std::size_t numel = 0;
  std::size_t rows = 1;
  std::vector<std::size_t> shape;  // the tensor's full shape (empty for a 0-d tensor)
  std::string name;                // the framework's name for it ("fc1.weight"), for messages
  std::size_t cols() const noexcept { return rows == 0 ? 0 : numel / rows; }
  // A matrix in the low-rank sense: at least 2 dimensions and both sides > 1.
  bool is_matrix() const noexcept { return shape.size() >= 2 && rows > 1 && cols() > 1; }
};

using Layout = std::vector<TensorBlock>;

// The layout of a buffer of n elements with no known structure: one vector block.
inline Layout flat_layout(std::size_t n) { return Layout{TensorBlock{0, n, 1, {n}, "flat"}}; }

}  // namespace fast::core
