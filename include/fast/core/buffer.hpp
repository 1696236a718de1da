#pragma once
// Buffer: an owning, 64-byte aligned, typed run of elements (move-only).
// Not synchronised; one owner at a time.

#include <cstddef>
#include <memory>
#include <span>

#include "fast/core/tensor_view.hpp"

namespace fast::core {

class Buffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  Buffer() = default;
  // numel elements of dtype, zero-filled.
  Buffer(std::size_t numel, DType dtype);
  // A copy of the viewed elements.
  static Buffer copy_of(ConstView view);
  // numel elements of dtype, zero-filled, in pages of their own (mmap; growing by resize keeps
  // that), returned to the kernel when the Buffer goes. For state that lives as long as its worker
  // (an optimizer's buffers): kept apart from the blocks that steps allocate and free, it leaves no
  // holes among them, so a process of hundreds of simulated workers holds its replicas' state and
  // little more. bad_alloc when the kernel refuses the mapping.
  static Buffer long_lived(std::size_t numel, DType dtype);

  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::size_t numel() const noexcept { return numel_; }
  std::size_t bytes() const noexcept { return numel_ * size_of(dtype_); }
  DType dtype() const noexcept { return dtype_; }
  void* data() noexcept { return data_.get(); }
  const void* data() const noexcept { return data_.get(); }

  // Changes the size (contents are not kept when the capacity grows; new memory is zeroed).
  void resize(std::size_t numel, DType dtype);

  MutableView view() noexcept { return {data(), numel_, dtype_}; }
  ConstView view() const noexcept { return {data(), numel_, dtype_}; }
  template <typename T>
  std::span<T> as() {
    return view().as<T>();
  }
  template <typename T>
  std::span<const T> as() const {
    return view().as<T>();
  }

 private:
  // Replaces the storage by `bytes` (rounded up to kAlignment) of uninitialised memory; the
  // contents are lost. bad_alloc on failure.
  void allocate(std::size_t bytes);

  struct Free {
    Free() noexcept : mapped_bytes(0) {}
    explicit Free(std::size_t mapped) noexcept : mapped_bytes(mapped) {}
    std::size_t mapped_bytes;  // 0: aligned_alloc's block; else the length of its own mapping
    void operator()(void* p) const noexcept;
  };
  bool long_lived_ = false;  // allocate() maps pages of its own
  std::unique_ptr<void, Free> data_;
  std::size_t numel_ = 0;
  std::size_t capacity_bytes_ = 0;
  DType dtype_ = DType::f32;
};

// Copies src into dst; both must have the same dtype and numel (InvalidArgument otherwise).
void copy(ConstView src, MutableView dst);

}  // namespace fast::core
