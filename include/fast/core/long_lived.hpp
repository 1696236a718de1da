#pragma once
// Memory for state that lives as long as its worker, kept apart from the blocks that steps
// allocate and free (core::Buffer::long_lived is the same for Buffers). A process of hundreds of
// simulated workers whose long-lived vectors sit in malloc's heap among per-step blocks keeps
// the holes those blocks leave resident; in page runs of their own (whole pages that no other
// block shares), the state leaves no holes and its pages go back to the kernel when freed.

#include <cstddef>
#include <new>
#include <vector>

namespace fast::core {

// Below this many bytes a page run of its own wastes more than the heap's holes cost: smaller
// blocks come from the heap (LongLivedAllocator, core::Buffer::pooled).
inline constexpr std::size_t kPageRunMinBytes = std::size_t{64} << 10;

// How a run of map_pages is used: written in full as soon as it is taken (a replica's parameters
// and gradients, made resident by the caller), or written later or perhaps never (an optimizer's
// state, which the workers of a strategy whose servers step never write). Runs of each use are
// packed apart, so that a run never written stays out of the huge pages that written runs fill.
enum class PageUse : unsigned char { written_now, written_later };

// From this many bytes a run of map_pages is a mapping of its own that starts on a 2 MiB boundary.
inline constexpr std::size_t kAlignedRunMinBytes = std::size_t{8} << 20;

// A page-aligned run of whole pages for `bytes` (rounded up), shared with no other run,
// zero-filled and resident only once written; bad_alloc when the kernel refuses the mapping.
// unmap_pages takes exactly that pointer and byte count back, and the run's pages go back to the
// kernel; the caller never unmaps, remaps or advises a run itself. Runs under kAlignedRunMinBytes
// are carved from 2 MiB-aligned chunks marked for transparent huge pages (one fault per 2 MiB
// instead of per 4 KiB page, where the kernel allows it; src/core/page_arena.hpp). Thread-safe.
void* map_pages(std::size_t bytes, PageUse use = PageUse::written_later);
void unmap_pages(void* p, std::size_t bytes) noexcept;
// Makes the whole pages within [p, p + bytes) of private anonymous memory (a map_pages block, or
// a large heap block) resident now, zero-filled where they were never written
// (MADV_POPULATE_WRITE, Linux 5.14 on), for memory the caller is about to write in full: one call
// instead of a page fault per 4 KiB page, which costs several microseconds on a virtual machine
// (about half of the time of the first write of a gigabyte there). Where the kernel lacks it or
// refuses (no memory left for them now), nothing: the pages fault in on their first write as
// usual. The contents are unchanged. Thread-safe.
void populate_pages(void* p, std::size_t bytes) noexcept;

// A std::allocator replacement for LongLivedVector: blocks of at least kPageRunMinBytes are mapped
// with map_pages, smaller ones come from operator new. Stateless: every instance frees what any
// other allocated.
template <typename T>
struct LongLivedAllocator {
  using value_type = T;
  LongLivedAllocator() noexcept = default;
  template <typename U>
  LongLivedAllocator(const LongLivedAllocator<U>&) noexcept {}  // NOLINT: rebinding, as std::allocator

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    // A vector writes its elements as it is built.
    if (bytes >= kPageRunMinBytes) return static_cast<T*>(map_pages(bytes, PageUse::written_now));
    return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= kPageRunMinBytes)
      unmap_pages(p, bytes);
    else
      ::operator delete(p, std::align_val_t{alignof(T)});
  }
  friend bool operator==(const LongLivedAllocator&, const LongLivedAllocator&) noexcept { return true; }
};

// A std::vector whose large storage is long-lived memory (above). Same interface and semantics.
template <typename T>
using LongLivedVector = std::vector<T, LongLivedAllocator<T>>;

}  // namespace fast::core
