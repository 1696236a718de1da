// core::tune_malloc: the choice, the settings it leaves to the user, and, under glibc's own
// allocator, what the thresholds do (each test is a process of its own under CTest).
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

#include "fast/core/error.hpp"
#include "fast/core/malloc_tuning.hpp"

namespace fast::core {
namespace {

// Sets an environment variable for one test and restores the previous state.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_.has_value())
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(MallocTuning, RefusesAnUnknownChoiceNamingTheVariable) {
  ScopedEnv choice("FAST_MALLOC", "jemalloc");
  try {
    (void)tune_malloc();
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("FAST_MALLOC"), std::string::npos) << what;
    EXPECT_NE(what.find("tuned or system"), std::string::npos) << what;
    EXPECT_NE(what.find("'jemalloc'"), std::string::npos) << what;
  }
  EXPECT_THROW((void)malloc_tuning_chosen(), InvalidArgument);
}

TEST(MallocTuning, SystemLeavesGlibcAlone) {
  ScopedEnv choice("FAST_MALLOC", "system");
  EXPECT_FALSE(malloc_tuning_chosen());
  const MallocTuning t = tune_malloc();
  EXPECT_FALSE(t.applied);
  EXPECT_NE(t.reason.find("FAST_MALLOC=system"), std::string::npos) << t.reason;
}

TEST(MallocTuning, LeavesTheUsersOwnGlibcSettings) {
  ScopedEnv choice("FAST_MALLOC", nullptr);
  ScopedEnv mmap("MALLOC_MMAP_THRESHOLD_", nullptr);
  ScopedEnv unset_max("MALLOC_MMAP_MAX_", nullptr);
  ScopedEnv unset_arenas("MALLOC_ARENA_MAX", nullptr);
  {
    ScopedEnv trim("MALLOC_TRIM_THRESHOLD_", "1048576");
    const MallocTuning t = tune_malloc();
    EXPECT_FALSE(t.applied);
    EXPECT_NE(t.reason.find("MALLOC_TRIM_THRESHOLD_"), std::string::npos) << t.reason;
  }
  ScopedEnv trim("MALLOC_TRIM_THRESHOLD_", nullptr);
  {
    ScopedEnv tunables("GLIBC_TUNABLES", "glibc.pthread.rseq=0:glibc.malloc.mmap_threshold=65536");
    const MallocTuning t = tune_malloc();
    EXPECT_FALSE(t.applied);
    EXPECT_NE(t.reason.find("glibc.malloc.mmap_threshold"), std::string::npos) << t.reason;
  }
  {
    ScopedEnv max("MALLOC_MMAP_MAX_", "0");
    const MallocTuning t = tune_malloc();
    EXPECT_FALSE(t.applied);
    EXPECT_NE(t.reason.find("MALLOC_MMAP_MAX_"), std::string::npos) << t.reason;
  }
  {
    ScopedEnv arenas("MALLOC_ARENA_MAX", "2");
    const MallocTuning t = tune_malloc();
    EXPECT_FALSE(t.applied);
    EXPECT_NE(t.reason.find("MALLOC_ARENA_MAX"), std::string::npos) << t.reason;
  }
  ScopedEnv tunables("GLIBC_TUNABLES", "glibc.malloc.mmap_max=4");
  const MallocTuning t = tune_malloc();
  EXPECT_FALSE(t.applied);
  EXPECT_NE(t.reason.find("glibc.malloc.mmap_max"), std::string::npos) << t.reason;
}

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// Bytes glibc holds in mmapped blocks, and in its heaps (mallinfo2's hblkhd and arena).
std::size_t mmapped_bytes() { return mallinfo2().hblkhd; }
std::size_t heap_bytes() { return mallinfo2().arena; }

TEST(MallocTuning, KeepsBlocksOfEverySizeInTheHeapAndTheirMemoryAfterFree) {
  ScopedEnv choice("FAST_MALLOC", nullptr);
  ScopedEnv mmap("MALLOC_MMAP_THRESHOLD_", nullptr);
  ScopedEnv trim("MALLOC_TRIM_THRESHOLD_", nullptr);
  ScopedEnv max("MALLOC_MMAP_MAX_", nullptr);
  ScopedEnv arenas("MALLOC_ARENA_MAX", nullptr);
  ScopedEnv tunables("GLIBC_TUNABLES", nullptr);
  const MallocTuning t = tune_malloc();
  ASSERT_TRUE(t.applied) << t.reason;
  EXPECT_NE(t.reason.find("every size and thread"), std::string::npos) << t.reason;
  EXPECT_NE(t.reason.find("its free memory for the next steps"), std::string::npos) << t.reason;

  // 16 MiB (above glibc's initial 128 KiB threshold) and 40 MiB (above the largest threshold glibc
  // takes, 32 MiB): from the heap, not a mapping of their own, and kept by it once freed.
  const std::size_t mapped_before = mmapped_bytes();
  for (const std::size_t bytes : {std::size_t{16} << 20, std::size_t{40} << 20}) {
    void* block = std::malloc(bytes);
    ASSERT_NE(block, nullptr);
    std::memset(block, 1, bytes);
    EXPECT_EQ(mmapped_bytes(), mapped_before) << bytes;
    const std::size_t heap_with_block = heap_bytes();
    EXPECT_GE(heap_with_block, bytes);
    std::free(block);
    EXPECT_EQ(heap_bytes(), heap_with_block) << bytes;
  }

  // 400 MiB, never touched: from the heap too (not a mapping); freed at its top, it stays in the heap
  // (glibc's default would trim it at once) until release_free_memory() gives it back.
  constexpr std::size_t kHuge = std::size_t{400} << 20;
  void* huge = std::malloc(kHuge);
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(mmapped_bytes(), mapped_before);
  const std::size_t heap_with_huge = heap_bytes();
  EXPECT_GE(heap_with_huge, kHuge);
  std::free(huge);
  EXPECT_EQ(heap_bytes(), heap_with_huge);
  release_free_memory();
  EXPECT_LE(heap_bytes() + kHuge, heap_with_huge);

  // Another thread allocates from the main arena, whose heap ends at the program break (an arena of
  // its own would be mapped elsewhere), and is not mapped on its own: below and above the 64 MiB
  // that a heap of another arena holds.
  std::array<bool, 2> in_main_heap{false, false};
  std::array<std::size_t, 2> mapped{1, 1};
  std::thread([&] {
    const std::array<std::size_t, 2> sizes{std::size_t{48} << 20, std::size_t{100} << 20};
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      void* block = std::malloc(sizes[i]);
      if (block == nullptr) return;
      std::memset(block, 1, sizes[i]);
      in_main_heap[i] = static_cast<char*>(block) + sizes[i] <= static_cast<char*>(::sbrk(0));
      mapped[i] = mmapped_bytes() - mapped_before;
      std::free(block);
    }
  }).join();
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(in_main_heap[i]) << "block " << i;
    EXPECT_EQ(mapped[i], 0u) << "block " << i;
  }
  EXPECT_EQ(mmapped_bytes(), mapped_before);
}
#endif

// A process that builds workers one after another gives their freed blocks back at the first call,
// then once per kReleaseBatchBytes of them. (Nothing else in this test binary calls it.)
TEST(MallocTuning, FreedMemoryIsGivenBackAtTheFirstCallThenOncePerBatch) {
  EXPECT_TRUE(release_freed_memory(1));
  EXPECT_FALSE(release_freed_memory(kReleaseBatchBytes / 2));
  EXPECT_FALSE(release_freed_memory(kReleaseBatchBytes / 2 - 1));  // one byte short of a batch
  EXPECT_TRUE(release_freed_memory(1));
  EXPECT_FALSE(release_freed_memory(0));
  EXPECT_TRUE(release_freed_memory(kReleaseBatchBytes));
}

}  // namespace
}  // namespace fast::core
