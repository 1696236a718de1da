#pragma once
// The page runs of long-lived memory (map_pages, long_lived.hpp), carved from large mappings that
// the kernel may back with transparent huge pages. Internal to fast_core.
//
// Why: a simulated run holds hundreds of replicas of a few megabytes each, written in full when
// the run starts. In 4 KiB pages each page's first write costs a fault (on a virtual machine,
// several microseconds, even after MADV_POPULATE_WRITE made the page resident: about 1.5 s per
// gigabyte there against 0.1 s in 2 MiB pages, where the machine had backed the memory). Runs of
// a few megabytes are too small for a huge page each, so they are packed, page-aligned, into
// chunks of kChunkBytes aligned to 2 MiB and marked MADV_HUGEPAGE; a run of kAlignedRunMinBytes
// or more (long_lived.hpp) gets a mapping of its own, aligned and marked the same way. Where the
// kernel has no transparent huge pages (or `never`), the same mappings are served in 4 KiB pages:
// behaviour as before, a little more address space.
//
// Memory: a chunk's pages become resident as they are written (a whole huge page at a time); a
// run given back is unmapped from the process at once (MADV_DONTNEED; its addresses are not
// carved again: the kernel splits a huge page it shares with live runs and frees that part when
// it completes the split, under memory pressure at the latest), and the chunk goes back whole with
// its last run. The memory held beyond the live runs is at most the unused part of the huge pages
// they touch. A lone small run costs a chunk's address space and one huge page once written.
//
// Under ASan the parts of a chunk that are no live run (the tail not carved yet, runs given back)
// are poisoned: a use past a run's end or after its give reports there (it would read zeros).

#include <cstddef>
#include <cstdint>

#include "fast/core/long_lived.hpp"

namespace fast::core::detail {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// 256 MiB: the part of a chunk's last huge page past its last run is resident waste (up to the
// smallest run the chunk holds); 1,024 simulated mlp workers' state filled about 90 chunks of
// 64 MiB, and their tails held about 45 MiB, a quarter of that in chunks four times as large.
inline constexpr std::size_t kChunkBytes = std::size_t{256} << 20;
static_assert(kAlignedRunMinBytes <= kChunkBytes / 4, "a chunk holds at least four of the runs carved from it");

// `bytes` (a multiple of the page size, > 0) of zero-filled memory, page-aligned, from a chunk
// that holds runs of the same `use` only. bad_alloc when the kernel refuses a new mapping.
// Thread-safe.
void* arena_take(std::size_t bytes, PageUse use);
// Gives back a run that arena_take returned, with the same byte count. A pointer in no chunk of
// the arena, or one whose chunk has no run left, is a caller's bug: ignored. Thread-safe.
void arena_give(void* p, std::size_t bytes) noexcept;
// For tests: the number of chunks mapped now, and the start of the chunk that holds `p` (0 when
// none does: a run mapped alone, or not the arena's).
std::size_t arena_chunks() noexcept;
std::uintptr_t arena_chunk_of(const void* p) noexcept;

}  // namespace fast::core::detail
