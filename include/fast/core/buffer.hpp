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
  // numel elements of dtype, zero-filled, in a page run of its own (map_pages, long_lived.hpp;
  // growing by resize keeps that), returned to the kernel when the Buffer goes. For state that
  // lives as long as its worker (an optimizer's buffers): kept apart from the blocks that steps
  // allocate and free, it leaves no holes among them, so a process of hundreds of simulated workers
  // holds its replicas' state and little more. bad_alloc when the kernel refuses the mapping.
  // resident_now: for memory the caller writes in full at once (a replica's flat parameters and
  // gradients): the pages are made resident here, in one call, instead of by a fault per page on
  // the first write (populate_pages, long_lived.hpp); the same memory is held once it is written
  // either way.
  static Buffer long_lived(std::size_t numel, DType dtype, bool resident_now = false);
  // An empty Buffer of dtype whose storage, once sized, comes from a process-wide pool of page
  // runs of the same length and goes back there when the Buffer goes or grows (blocks under
  // kPageRunMinBytes, long_lived.hpp, from the heap as usual). For large blocks that come and go
  // by the thousand (a window service's request payloads): taken from the heap they leave holes
  // that small blocks split, so the heap grows with every burst; from the pool a run is reused
  // whole. The pool keeps at most kPoolIdleBytes idle (the rest goes back to the kernel, so that
  // idle runs do not add to a later peak elsewhere); blocks that a whole burst takes again at once
  // (every simulated worker's gossip of a step) are better left to the heap, which keeps them all.
  // Contents as resize says (zeroed).
  static Buffer pooled(DType dtype);
  static constexpr std::size_t kPoolIdleBytes = std::size_t{256} << 20;

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
  // As resize, for a caller about to write all numel elements: memory taken anew is zeroed past
  // them only.
  void resize_to_overwrite(std::size_t numel, DType dtype);

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
    Free() noexcept = default;
    Free(std::size_t mapped, bool to_pool) noexcept : mapped_bytes(mapped), pooled(to_pool) {}
    std::size_t mapped_bytes = 0;  // 0: aligned_alloc's block; else the length of its page run
    bool pooled = false;           // the run goes back to the pool (Buffer::pooled), else to map_pages'
    void operator()(void* p) const noexcept;
  };
  // pages / resident_pages: long_lived (map_pages, written later / at once); pool: pooled.
  enum class Storage : unsigned char { heap, pages, resident_pages, pool };
  bool in_own_pages() const noexcept { return storage_ == Storage::pages || storage_ == Storage::resident_pages; }
  Storage storage_ = Storage::heap;  // where allocate() takes memory from
  std::unique_ptr<void, Free> data_;
  std::size_t numel_ = 0;
  std::size_t capacity_bytes_ = 0;
  DType dtype_ = DType::f32;
};

// Copies src into dst; both must have the same dtype and numel (InvalidArgument otherwise).
void copy(ConstView src, MutableView dst);

}  // namespace fast::core
