#include "fast/core/buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace fast::core {

void Buffer::Free::operator()(void* p) const noexcept { std::free(p); }

Buffer::Buffer(std::size_t numel, DType dtype) { resize(numel, dtype); }

Buffer Buffer::copy_of(ConstView view) {
  Buffer b;
  const std::size_t bytes = view.bytes();
  // Written once: the copy, then zeros in the alignment tail only (not zeros everywhere first: the
  // sim runtime copies every message it sends).
  if (bytes > 0) {
    b.allocate(bytes);
    std::memcpy(b.data(), view.data(), bytes);
    std::memset(static_cast<std::byte*>(b.data()) + bytes, 0, b.capacity_bytes_ - bytes);
  }
  b.numel_ = view.numel();
  b.dtype_ = view.dtype();
  return b;
}

void Buffer::allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  data_.reset(p);
  capacity_bytes_ = rounded;
}

void Buffer::resize(std::size_t numel, DType dtype) {
  const std::size_t need = numel * size_of(dtype);
  if (need > capacity_bytes_) {
    allocate(need);
    std::memset(data(), 0, capacity_bytes_);
  }
  numel_ = numel;
  dtype_ = dtype;
}

void copy(ConstView src, MutableView dst) {
  FAST_ENFORCE(src.dtype() == dst.dtype(), "copy from {} to {}", name_of(src.dtype()), name_of(dst.dtype()));
  FAST_ENFORCE_EQ(src.numel(), dst.numel(), "copy between views of different lengths");
  if (src.bytes() > 0 && src.data() != dst.data()) std::memcpy(dst.data(), src.data(), src.bytes());
}

}  // namespace fast::core
