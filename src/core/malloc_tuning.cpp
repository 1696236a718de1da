#include "fast/core/malloc_tuning.hpp"

#include <cstdlib>
#include <mutex>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fmt/format.h>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"

namespace fast::core {

namespace {
// The glibc settings of the user's own that tune_malloc() must not override, or "" when none.
std::string users_setting() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX"})
    if (std::getenv(name) != nullptr) return name;
  if (const char* tunables = std::getenv("GLIBC_TUNABLES")) {
    const std::string_view text(tunables);
    for (std::string_view key : {"glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold", "glibc.malloc.mmap_max",
                                 "glibc.malloc.arena_max"})
      if (text.find(key) != std::string_view::npos) return fmt::format("GLIBC_TUNABLES ({})", key);
  }
  return "";
}
}  // namespace

bool malloc_tuning_chosen() {
  const std::string choice = env_string("FAST_MALLOC");
  FAST_ENFORCE(choice == "tuned" || choice == "system",
               "environment variable FAST_MALLOC: expected tuned or system, got '{}'", choice);
  return choice == "tuned";
}

MallocTuning tune_malloc() {
  if (!malloc_tuning_chosen()) return {.applied = false, .reason = "malloc: glibc's defaults (FAST_MALLOC=system)"};
  if (const std::string user = users_setting(); !user.empty())
    return {.applied = false, .reason = fmt::format("malloc: left as {} sets it", user)};
#if defined(__GLIBC__)
  // M_MMAP_THRESHOLD first: setting it also stops glibc from moving either threshold itself. The
  // threshold cannot exceed 32 MiB; M_MMAP_MAX 0 keeps the larger blocks out of mappings too, and
  // M_ARENA_MAX 1 the threads' blocks in the one heap that has no size limit (the header says why).
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kTunedMmapThreshold)) != 1 ||
      mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTunedTrimThreshold)) != 1 || mallopt(M_MMAP_MAX, 0) != 1 ||
      mallopt(M_ARENA_MAX, 1) != 1)
    return {.applied = false, .reason = "malloc: not tuned (this process's allocator refused mallopt)"};
  return {.applied = true,
          .reason =
              fmt::format("malloc: blocks of every size and thread kept in one heap, up to {} MiB free kept at its top "
                          "(FAST_MALLOC=system: glibc's defaults)",
                          kTunedTrimThreshold >> 20)};
#else
  return {.applied = false, .reason = "malloc: not tuned (the C library is not glibc)"};
#endif
}

void release_free_memory() noexcept {
#if defined(__GLIBC__)
  (void)malloc_trim(0);
#endif
}

bool release_freed_memory(std::size_t freed) noexcept {
  static std::mutex mutex;
  static bool trimmed_once = false;
  static std::size_t since_trim = 0;
  {
    const std::lock_guard lock(mutex);
    since_trim += freed;
    if (trimmed_once && since_trim < kReleaseBatchBytes) return false;
    trimmed_once = true;
    since_trim = 0;
  }
  release_free_memory();
  return true;
}

}  // namespace fast::core
