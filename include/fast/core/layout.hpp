#pragma once
// Layout: how a flat parameter (or gradient) buffer splits into the model's tensors. Framework
// adapters fill it (fast::torch::Replica::layout()); codecs that exploit shape (powersgd) and cost
// models (flops per sample under the sim runtime) read it. A buffer without a known layout is one
// vector block.

#include <algorithm>
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

// The blocks of `layout` that lie wholly inside [offset, offset + count), moved to start at 0
// (elements of the range outside them have no structure). For a range of a larger buffer.
inline Layout sub_layout(const Layout& layout, std::size_t offset, std::size_t count) {
  Layout out;
  for (const TensorBlock& b : layout)
    if (b.offset >= offset && b.offset + b.numel <= offset + count) {
      out.push_back(b);
      out.back().offset -= offset;
    }
  return out;
}

// `layout` repeated `copies` times back to back: the layout of a buffer holding that many tensors
// of the same model one after the other.
inline Layout repeated_layout(const Layout& layout, std::size_t copies) {
  std::size_t numel = 0;
  for (const TensorBlock& b : layout) numel = std::max(numel, b.offset + b.numel);
  Layout out;
  for (std::size_t c = 0; c < copies; ++c)
    for (TensorBlock b : layout) {
      b.offset += c * numel;
      out.push_back(std::move(b));
    }
  return out;
}

}  // namespace fast::core
