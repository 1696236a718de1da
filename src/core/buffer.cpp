#include "fast/core/buffer.hpp"
#include "fast/core/long_lived.hpp"
#include "fast/core/page_pool.hpp"
#include "page_arena.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

#include <sanitizer/asan_interface.h>  // ASAN_(UN)POISON_MEMORY_REGION: no-ops without ASan
#include <unistd.h>

namespace fast::core {

namespace {
std::size_t whole_pages(std::size_t bytes) {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// Pages of their own for a pooled run (not the arena's: pooled runs come and go, long-lived ones
// stay with their worker).
void* map_plain(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

// The page runs of Buffer::pooled, by length; thread-safe. Never destroyed: Buffers may go after
// static destructors ran.
class PagePool {
 public:
  void* take(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = idle_.find(bytes);
      if (it != idle_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        idle_bytes_ -= bytes;
        ASAN_UNPOISON_MEMORY_REGION(p, bytes);
        return p;
      }
    }
    return map_plain(bytes);
  }
  void give(void* p, std::size_t bytes) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_bytes_ + bytes <= Buffer::kPoolIdleBytes) {
        idle_[bytes].push_back(p);
        idle_bytes_ += bytes;
        ASAN_POISON_MEMORY_REGION(p, bytes);  // an idle run: a use of its Buffer after it went reports there
        return;
      }
    } catch (...) {  // the list could not grow: the run goes back to the kernel
    }
    ::munmap(p, bytes);
  }
  std::size_t idle_bytes() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return idle_bytes_;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> idle_;
  std::size_t idle_bytes_ = 0;
};

PagePool& page_pool() {
  static PagePool* pool = new PagePool;  // NOLINT: deliberately never destroyed
  return *pool;
}
}  // namespace

void Buffer::Free::operator()(void* p) const noexcept {
  if (pooled)
    page_pool().give(p, mapped_bytes);
  else if (mapped_bytes > 0)
    unmap_pages(p, mapped_bytes);
  else
    std::free(p);
}

Buffer::Buffer(std::size_t numel, DType dtype) { resize(numel, dtype); }

Buffer Buffer::long_lived(std::size_t numel, DType dtype, bool resident_now) {
  Buffer b;
  b.storage_ = resident_now ? Storage::resident_pages : Storage::pages;
  b.resize(numel, dtype);
  if (resident_now && b.capacity_bytes_ > 0) populate_pages(b.data(), b.capacity_bytes_);
  return b;
}

Buffer Buffer::pooled(DType dtype) {
  Buffer b;
  b.storage_ = Storage::pool;
  b.dtype_ = dtype;
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

std::size_t pooled_pages_bytes(std::size_t bytes) noexcept { return whole_pages(std::max<std::size_t>(bytes, 1)); }

void* take_pooled_pages(std::size_t bytes) { return page_pool().take(pooled_pages_bytes(bytes)); }

void give_pooled_pages(void* p, std::size_t bytes) noexcept {
  if (p != nullptr) page_pool().give(p, pooled_pages_bytes(bytes));
}

std::size_t idle_pooled_bytes() noexcept { return page_pool().idle_bytes(); }

void* map_pages(std::size_t bytes, PageUse use) {
  return detail::arena_take(whole_pages(std::max<std::size_t>(bytes, 1)), use);
}

void unmap_pages(void* p, std::size_t bytes) noexcept {
  if (p != nullptr) detail::arena_give(p, whole_pages(std::max<std::size_t>(bytes, 1)));
}

void populate_pages(void* p, std::size_t bytes) noexcept {
#ifdef MADV_POPULATE_WRITE
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
  if (p != nullptr && end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

void Buffer::allocate(std::size_t bytes) {
  const bool pool = storage_ == Storage::pool && bytes >= kPageRunMinBytes;
  if (in_own_pages() || pool) {
    const std::size_t rounded = whole_pages(bytes);
    void* p =
        pool ? page_pool().take(rounded)
             : map_pages(rounded, storage_ == Storage::resident_pages ? PageUse::written_now : PageUse::written_later);
    data_ = std::unique_ptr<void, Free>(p, Free(rounded, pool));  // frees the old one its own way
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
    if (!in_own_pages()) std::memset(data(), 0, capacity_bytes_);  // fresh pages read as zeros
  }
  numel_ = numel;
  dtype_ = dtype;
}

void Buffer::resize_to_overwrite(std::size_t numel, DType dtype) {
  const std::size_t need = numel * size_of(dtype);
  if (need > capacity_bytes_) {
    allocate(need);
    // Only the tail past the elements is zeroed (vectorised loops may read up to the alignment).
    if (!in_own_pages()) std::memset(static_cast<std::byte*>(data()) + need, 0, capacity_bytes_ - need);
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
