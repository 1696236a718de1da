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
// "malloc thresholds"). Fixing both thresholds keeps those blocks in the heap,
// reused from step to step.
//
// FAST_MALLOC (core/env.cpp) chooses: `tuned` (the default) or `system` (glibc's own behaviour).
// Settings the user gave glibc (GLIBC_TUNABLES naming glibc.malloc.mmap_threshold or
// glibc.malloc.trim_threshold, MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_) are left alone.

#include <cstddef>
#include <string>

namespace fast::core {

// What tune_malloc() did.
struct MallocTuning {
  bool applied = false;
  std::string reason;  // one line for the log: what was set, or why nothing was
};

// Blocks up to this many bytes come from the heap once tuned (glibc's largest dynamic threshold).
inline constexpr std::size_t kTunedMmapThreshold = std::size_t{32} << 20;
// Free bytes a heap may keep at its top before glibc returns them to the kernel, once tuned.
inline constexpr std::size_t kTunedTrimThreshold = std::size_t{256} << 20;

// Whether FAST_MALLOC asks for the tuning (`tuned`) or not (`system`); InvalidArgument naming the
// variable for any other value. Callers check it with the other settings, before any data is read.
bool malloc_tuning_chosen();

// Applies the tuning above to this process (mallopt M_MMAP_THRESHOLD, M_TRIM_THRESHOLD) unless
// FAST_MALLOC=system, the user set glibc's thresholds, the C library is not glibc, or mallopt
// refuses (a sanitizer's allocator, a preloaded malloc): then it changes nothing and says why.
// InvalidArgument as malloc_tuning_chosen(). Process-wide and not thread-safe against other
// mallopt calls: call it once, before the workers start. The memory a process keeps grows by at
// most kTunedTrimThreshold per malloc arena (glibc gives the threads that allocate up to 8 arenas
// per core).
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
