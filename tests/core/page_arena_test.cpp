// The arena of long-lived page runs (src/core/page_arena.hpp): runs are page-aligned, zero-filled
// and disjoint, carved from chunks that hold runs of one PageUse only, never carved again once
// given back; a chunk goes back to the kernel with its last run; large runs are mapped alone on a
// 2 MiB boundary.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <sanitizer/asan_interface.h>  // __asan_address_is_poisoned (ASan builds)

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

// Threads take and give runs at once (the arena is shared by every worker of a process): each
// thread's runs keep the bytes it wrote while the others carve and give back theirs, so no two
// live runs overlap. Under TSan this is the arena's race check.
TEST(PageArena, ThreadsTakeAndGiveAtOnceWithoutSharingARun) {
  constexpr int kThreads = 4, kRounds = 3, kRuns = 24;
  std::vector<std::thread> threads;
  std::vector<int> broken(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &broken] {
      const auto mark = static_cast<unsigned char>(0x11 * (t + 1));
      for (int round = 0; round < kRounds; ++round) {
        std::vector<std::pair<void*, std::size_t>> runs;
        for (int i = 0; i < kRuns; ++i) {
          const std::size_t bytes = (1 + (i * 7 + t) % 13) * page();
          void* p = arena_take(bytes, i % 2 == 0 ? PageUse::written_now : PageUse::written_later);
          if (!all_bytes(p, bytes, 0)) ++broken[static_cast<std::size_t>(t)];  // carved before
          std::memset(p, mark, bytes);
          runs.emplace_back(p, bytes);
        }
        for (const auto& [p, bytes] : runs)
          if (!all_bytes(p, bytes, mark)) ++broken[static_cast<std::size_t>(t)];  // another thread wrote it
        for (const auto& [p, bytes] : runs) arena_give(p, bytes);
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(broken[static_cast<std::size_t>(t)], 0) << "thread " << t;
}

// Under ASan what is not a live run of a chunk (its uncarved tail, a run given back) is poisoned.
TEST(PageArena, UnderAsanOnlyLiveRunsAreAddressable) {
#if defined(__SANITIZE_ADDRESS__)
  const std::size_t bytes = 8 * page();
  auto* a = static_cast<char*>(arena_take(bytes, PageUse::written_later));
  auto* b = static_cast<char*>(arena_take(bytes, PageUse::written_later));
  if (arena_chunk_of(a) != arena_chunk_of(b)) {  // a filled its chunk's tail exactly: no neighbour to check
    arena_give(a, bytes);
    arena_give(b, bytes);
    GTEST_SKIP() << "the two runs landed in different chunks";
  }
  EXPECT_EQ(__asan_region_is_poisoned(a, bytes), nullptr);
  EXPECT_EQ(__asan_region_is_poisoned(b, bytes), nullptr);
  // Past the last run carved: the chunk's tail, or runs other tests gave back.
  const char* after = (b > a ? b : a) + bytes;
  if (arena_chunk_of(after) == arena_chunk_of(a)) EXPECT_TRUE(__asan_address_is_poisoned(after));
  arena_give(a, bytes);
  EXPECT_TRUE(__asan_address_is_poisoned(a));
  EXPECT_TRUE(__asan_address_is_poisoned(a + bytes - 1));
  EXPECT_EQ(__asan_region_is_poisoned(b, bytes), nullptr);  // its neighbour lives on
  arena_give(b, bytes);
#else
  GTEST_SKIP() << "checks ASan's shadow: run by `make sanitize`";
#endif
}

}  // namespace
}  // namespace fast::core::detail
