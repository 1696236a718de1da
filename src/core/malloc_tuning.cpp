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
  // In this order (the header says why each): a refusal stops at the setting it names.
  struct Setting {
    int param;
    int value;
    const char* name;
  };
  for (const Setting& s : {Setting{M_TRIM_THRESHOLD, -1, "M_TRIM_THRESHOLD"}, Setting{M_MMAP_MAX, 0, "M_MMAP_MAX"},
                           Setting{M_ARENA_MAX, 1, "M_ARENA_MAX"}})
    if (mallopt(s.param, s.value) != 1)
      return {.applied = false,
              .reason =
                  fmt::format("malloc: not tuned (this process's allocator refused mallopt({}, {}))", s.name, s.value)};
  return {.applied = true,
          .reason =
              "malloc: blocks of every size and thread kept in one heap, and its free memory for the next "
              "steps (FAST_MALLOC=system: glibc's defaults)"};
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
