#include "fast/core/buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

namespace fast::core {

void Buffer::Free::operator()(void* p) const noexcept {
  if (mapped_bytes > 0)
    ::munmap(p, mapped_bytes);
  else
    std::free(p);
}

Buffer::Buffer(std::size_t numel, DType dtype) { resize(numel, dtype); }

Buffer Buffer::long_lived(std::size_t numel, DType dtype) {
  Buffer b;
  b.long_lived_ = true;
  b.resize(numel, dtype);
  return b;
}

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
  if (long_lived_) {
    static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t rounded = (bytes + page - 1) / page * page;
    void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = std::unique_ptr<void, Free>(p, Free(rounded));  // frees the old one its own way
    capacity_bytes_ = rounded;
    return;
  }
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  data_ = std::unique_ptr<void, Free>(p, Free{});
  capacity_bytes_ = rounded;
}

void Buffer::resize(std::size_t numel, DType dtype) {
  const std::size_t need = numel * size_of(dtype);
  if (need > capacity_bytes_) {
    allocate(need);
    if (!long_lived_) std::memset(data(), 0, capacity_bytes_);  // a fresh mapping reads as zeros
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
