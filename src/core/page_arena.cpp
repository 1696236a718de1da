#include "page_arena.hpp"

#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <new>

#include <sys/mman.h>

#include <sanitizer/asan_interface.h>  // ASAN_(UN)POISON_MEMORY_REGION: no-ops without ASan

namespace fast::core::detail {

namespace {

// `bytes` (whole pages) of fresh anonymous memory starting on a 2 MiB boundary, marked for huge
// pages: mapped kHugePageBytes longer, then the unaligned head and the tail past `bytes` unmapped.
void* map_aligned(std::size_t bytes) {
  const std::size_t over = bytes + kHugePageBytes;
  void* raw = ::mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t start = (base + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
  if (start > base) ::munmap(raw, start - base);
  const std::uintptr_t end = start + bytes;
  if (base + over > end) ::munmap(reinterpret_cast<void*>(end), base + over - end);
  (void)::madvise(reinterpret_cast<void*>(start), bytes, MADV_HUGEPAGE);  // a hint: 4 KiB pages otherwise
  return reinterpret_cast<void*>(start);
}

// Under ASan, a chunk's memory that is not a live run (its tail not carved yet, the runs given
// back) is poisoned, so that a read or write past a run's end or after its give reports there
// instead of reading zeros; the shadow is cleared before a chunk is unmapped (the kernel may hand
// the addresses to another mapping). Without ASan the macros do nothing.
void poison(std::uintptr_t start, std::size_t bytes) {
  ASAN_POISON_MEMORY_REGION(reinterpret_cast<void*>(start), bytes);
}
void unpoison(std::uintptr_t start, std::size_t bytes) {
  ASAN_UNPOISON_MEMORY_REGION(reinterpret_cast<void*>(start), bytes);
}

// The chunks, by base address; thread-safe. Never destroyed (runs may be given back after static
// destructors ran).
class Arena {
 public:
  void* take(std::size_t bytes, PageUse use) {
    if (bytes >= kAlignedRunMinBytes) return map_aligned(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    // First fit among the chunks' unused tails (a few dozen chunks per gigabyte): runs are only
    // ever carved from never-used memory, so they read as zeros.
    for (auto& [base, chunk] : chunks_) {
      if (chunk.use != use || kChunkBytes - chunk.used < bytes) continue;
      return carve(base, chunk, bytes);
    }
    const auto base = reinterpret_cast<std::uintptr_t>(map_aligned(kChunkBytes));
    poison(base, kChunkBytes);
    try {
      Chunk& chunk = chunks_[base];
      chunk.use = use;
      return carve(base, chunk, bytes);
    } catch (...) {  // the map could not grow
      unpoison(base, kChunkBytes);
      ::munmap(reinterpret_cast<void*>(base), kChunkBytes);
      throw;
    }
  }

  void give(void* p, std::size_t bytes) noexcept {
    if (bytes >= kAlignedRunMinBytes) {
      ::munmap(p, bytes);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = find(p);
    if (it == chunks_.end() || it->second.live == 0) return;  // not a live run of this arena: a caller's bug
    if (--it->second.live > 0) {
      // The chunk lives on: the run's memory goes back to the kernel now (its address range is
      // never carved again), so that a run given back early holds nothing.
      (void)::madvise(p, bytes, MADV_DONTNEED);
      poison(reinterpret_cast<std::uintptr_t>(p), bytes);
      return;
    }
    unpoison(it->first, kChunkBytes);
    ::munmap(reinterpret_cast<void*>(it->first), kChunkBytes);
    chunks_.erase(it);
  }

  std::size_t chunks() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return chunks_.size();
  }

  std::uintptr_t chunk_of(const void* p) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = find(p);
    return it == chunks_.end() ? 0 : it->first;
  }

 private:
  struct Chunk {
    std::size_t used = 0;  // bytes carved from the start
    std::size_t live = 0;  // runs not given back yet
    PageUse use = PageUse::written_later;
  };
  // The chunk whose range holds p, or end(). Called with mutex_ held.
  std::map<std::uintptr_t, Chunk>::iterator find(const void* p) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    auto it = chunks_.upper_bound(address);
    if (it == chunks_.begin()) return chunks_.end();
    --it;
    return address < it->first + kChunkBytes ? it : chunks_.end();
  }
  static void* carve(std::uintptr_t base, Chunk& chunk, std::size_t bytes) {
    void* p = reinterpret_cast<void*>(base + chunk.used);
    unpoison(base + chunk.used, bytes);
    chunk.used += bytes;
    ++chunk.live;
    return p;
  }

  std::mutex mutex_;
  std::map<std::uintptr_t, Chunk> chunks_;
};

Arena& arena() {
  static Arena* a = new Arena;  // NOLINT: deliberately never destroyed
  return *a;
}

}  // namespace

void* arena_take(std::size_t bytes, PageUse use) { return arena().take(bytes, use); }
void arena_give(void* p, std::size_t bytes) noexcept { arena().give(p, bytes); }
std::size_t arena_chunks() noexcept { return arena().chunks(); }
std::uintptr_t arena_chunk_of(const void* p) noexcept { return arena().chunk_of(p); }

}  // namespace fast::core::detail
