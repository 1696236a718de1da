// The arena of long-lived page runs (src/core/page_arena.hpp): runs are page-aligned, zero-filled
// and disjoint, carved from chunks that hold runs of one PageUse only, never carved again once
// given back; a chunk goes back to the kernel with its last run; large runs are mapped alone on a
// 2 MiB boundary.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <unistd.h>

#include "page_arena.hpp"

namespace fast::core::detail {
namespace {

std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

bool all_bytes(const void* p, std::size_t bytes, unsigned char value) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i] != value) return false;
  return true;
}

bool overlaps(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

TEST(PageArena, RunsArePageAlignedZeroFilledDisjointAndTheirChunkGoesWithTheLast) {
  const std::size_t before = arena_chunks();
  const std::size_t bytes = (std::size_t{1} << 20) + 3 * page();  // not a multiple of 2 MiB
  std::vector<void*> runs;
  for (int i = 0; i < 5; ++i) {
    void* p = arena_take(bytes, PageUse::written_now);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % page(), 0u);
    ASSERT_NE(arena_chunk_of(p), 0u) << "run " << i << " is not carved from a chunk";
    ASSERT_TRUE(all_bytes(p, bytes, 0)) << "run " << i << " is not zero-filled";
    for (void* q : runs) ASSERT_FALSE(overlaps(p, q, bytes)) << "run " << i << " overlaps an earlier one";
    std::memset(p, 0x10 + i, bytes);
    runs.push_back(p);
  }
  EXPECT_LE(arena_chunks(), before + 1);  // 5 MiB fit in one chunk: packed, not a chunk each
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(all_bytes(runs[i], bytes, 0x10 + i)) << "run " << i << " was overwritten";
  for (int i = 0; i < 4; ++i) arena_give(runs[i], bytes);
  void* again = arena_take(bytes, PageUse::written_now);  // never a run given back
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(overlaps(again, runs[i], bytes)) << "carved again over run " << i;
  EXPECT_TRUE(all_bytes(again, bytes, 0));
  arena_give(again, bytes);
  arena_give(runs[4], bytes);
  EXPECT_EQ(arena_chunks(), before);
}

TEST(PageArena, RunsOfDifferentUsesNeverShareAChunk) {
  const std::size_t bytes = 16 * page();
  std::vector<void*> now, later;
  for (int i = 0; i < 3; ++i) {
    now.push_back(arena_take(bytes, PageUse::written_now));
    later.push_back(arena_take(bytes, PageUse::written_later));
  }
  for (void* a : now)
    for (void* b : later) EXPECT_NE(arena_chunk_of(a), arena_chunk_of(b));
  for (int i = 0; i < 3; ++i) {
    arena_give(now[i], bytes);
    arena_give(later[i], bytes);
  }
}

TEST(PageArena, LargeRunsAreMappedAloneOnA2MiBBoundary) {
  const std::size_t before = arena_chunks();
  for (const std::size_t bytes : {kAlignedRunMinBytes, kAlignedRunMinBytes + page()}) {
    void* p = arena_take(bytes, PageUse::written_later);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kHugePageBytes, 0u);
    EXPECT_EQ(arena_chunk_of(p), 0u);
    EXPECT_EQ(arena_chunks(), before);
    EXPECT_TRUE(all_bytes(p, bytes, 0));
    std::memset(p, 1, bytes);
    arena_give(p, bytes);
  }
  void* below = arena_take(kAlignedRunMinBytes - page(), PageUse::written_later);  // carved
  EXPECT_NE(arena_chunk_of(below), 0u);
  arena_give(below, kAlignedRunMinBytes - page());
  EXPECT_EQ(arena_chunks(), before);
}

TEST(PageArena, APointerOfNoChunkIsIgnored) {
  const std::size_t bytes = 4 * page();
  void* p = arena_take(bytes, PageUse::written_now);
  std::memset(p, 7, bytes);
  int local = 0;
  arena_give(&local, bytes);  // not the arena's: nothing happens
  EXPECT_TRUE(all_bytes(p, bytes, 7));
  arena_give(p, bytes);
}

}  // namespace
}  // namespace fast::core::detail
