#include "fast/core/buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace fast::core {

void Buffer::Free::operator()(void* p) const noexcept { std::free(p); }

Buffer::Buffer(std::size_t numel, DType dtype) { resize(numel, dtype); }

Buffer Buffer::copy_of(ConstView view) {
  Buffer b(view.numel(), view.dtype());
  if (view.bytes() > 0) std::memcpy(b.data(), view.data(), view.bytes());
  return b;
}

void Buffer::resize(std::size_t numel, DType dtype) {
  const std::size_t need = numel * size_of(dtype);
  if (need > capacity_bytes_) {
    const std::size_t rounded = (need + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    data_.reset(p);
    capacity_bytes_ = rounded;
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
