#pragma once
// How a training process asks glibc's malloc to keep the memory of large blocks between steps.
//
// A training step allocates and frees the same large CPU tensors every time (a cnn's activations
// are megabytes per batch). glibc serves blocks above its mmap threshold (128 KiB at start, raised
// by itself as blocks are freed, up to 32 MiB) with a fresh mmap and returns them to the kernel when
// freed, and it trims the top of a heap once more than 128 KiB is free there: either way the next
// step touches new pages and the kernel zero-fills them, one page fault per 4 KiB. Which of
// glibc's two behaviours a process ends up in depends on the order of its first frees, so the same
// run was either fast or markedly slower, with more than twice the page faults (docs/benchmarks.md,
// "malloc thresholds"). Fixing both thresholds keeps those blocks in the heap, reused from step to
// step. The threshold cannot be set above 32 MiB, and a larger block (a cnn's activations at batch
// 512 are about 50 MB) would still be mapped and unmapped every step, so mappings are turned off as
// well (M_MMAP_MAX 0). Each thread other than the main one would allocate from an arena of its own,
// whose heaps hold at most 64 MiB each, and a larger block asked for there is mapped whatever the
// settings: the workers' threads share the main arena instead (M_ARENA_MAX 1), whose heap has no
// such limit. A cnn at batch 512, 2 workers of `fast train`: about 3x the samples/s, a seventh of
// the page faults (docs/benchmarks.md, "malloc thresholds"). The cost: the threads take one lock
// for the blocks glibc's per-thread cache does not serve (those above 1 KiB); FAST_MALLOC=system
// goes back to glibc's arenas.
//
// FAST_MALLOC (core/env.cpp) chooses: `tuned` (the default) or `system` (glibc's own behaviour).
// Settings the user gave glibc (GLIBC_TUNABLES naming glibc.malloc.mmap_threshold,
// glibc.malloc.trim_threshold, glibc.malloc.mmap_max or glibc.malloc.arena_max;
// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_MAX_, MALLOC_ARENA_MAX) are left alone.

#include <cstddef>
#include <string>

namespace fast::core {

// What tune_malloc() did.
struct MallocTuning {
  bool applied = false;
  std::string reason;  // one line for the log: what was set, or why nothing was
};

// glibc's mmap threshold once tuned (the largest it takes); mappings being off, it only stops
// glibc from moving the trim threshold.
inline constexpr std::size_t kTunedMmapThreshold = std::size_t{32} << 20;
// Free bytes a heap may keep at its top before glibc returns them to the kernel, once tuned.
inline constexpr std::size_t kTunedTrimThreshold = std::size_t{256} << 20;

// Whether FAST_MALLOC asks for the tuning (`tuned`) or not (`system`); InvalidArgument naming the
// variable for any other value. Callers check it with the other settings, before any data is read.
bool malloc_tuning_chosen();

// Applies the tuning above to this process (mallopt M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, M_MMAP_MAX,
// M_ARENA_MAX) unless
// FAST_MALLOC=system, the user set glibc's thresholds, the C library is not glibc, or mallopt
// refuses (a sanitizer's allocator, a preloaded malloc): then it changes nothing and says why.
// InvalidArgument as malloc_tuning_chosen(). Process-wide and not thread-safe against other
// mallopt calls: call it once, before the workers start (a thread that allocated before keeps the
// arena it had). The memory a process keeps grows by at most kTunedTrimThreshold free at the top of
// the heap, plus the blocks freed below its top, which the heap keeps for later blocks
// (release_free_memory gives their whole pages back).
MallocTuning tune_malloc();

// Gives the whole free pages inside this process's malloc heaps back to the kernel (glibc's
// malloc_trim(0); nothing under another C library). Blocks freed in the middle of a heap, below
// blocks still in use, are otherwise kept for good: a worker that built its model and copied its
// parameters into its replica leaves the model's own parameter blocks there, which a process of
// hundreds of simulated workers kept as dead weight (0.8 GB at 1,024 mlp workers). Thread-safe;
// costs a walk over the free blocks.
void release_free_memory() noexcept;

// Bytes a process may leave free in its heaps between two trims of release_freed_memory().
inline constexpr std::size_t kReleaseBatchBytes = std::size_t{64} << 20;

// Counts `freed` bytes as just given back to the heap, and calls release_free_memory() at the
// first call of the process and whenever the bytes counted since its last call reach
// kReleaseBatchBytes; returns whether it did. For a process that builds many workers one after
// another (a simulation): one trim per worker walked the whole heap each time and gave back pages
// the next worker faulted in again; batched, the heap holds at most kReleaseBatchBytes of such
// blocks. Thread-safe.
bool release_freed_memory(std::size_t freed) noexcept;

}  // namespace fast::core
