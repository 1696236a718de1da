#pragma once
// How a training process asks glibc's malloc to keep the memory of large blocks between steps.
//
// A training step allocates and frees the same large CPU tensors every time (a cnn's activations
// are megabytes per batch). glibc serves blocks above its mmap threshold (128 KiB at start, raised
// by itself as blocks are freed, up to 32 MiB) with a fresh mmap and returns them to the kernel when
// freed, and it trims the top of a heap once more than 128 KiB is free there: either way the next
// step touches new pages and the kernel zero-fills them, one page fault per 4 KiB. How often
// depends on the order of its first frees; a cnn at batch 512 with 2 workers ran 8-10 times
// slower with glibc's defaults, with 30 times the page faults (docs/benchmarks.md, "malloc
// thresholds"). The tuning keeps those blocks in the heap, reused from step to step:
//   - M_TRIM_THRESHOLD -1: no automatic trim; what is free at the top of the heap stays there for
//     the next step (setting it also stops glibc from moving its thresholds). Any fixed threshold
//     is crossed by some batch: at 256 MiB, two workers whose activations were freed together
//     left more free than that in some runs, and the heap gave it back and took it again every
//     step (a cnn at batch 512: 0.4-1.6 million page faults against 0.15 million);
//   - M_MMAP_MAX 0: no block is a mapping of its own, whatever its size (the mmap threshold cannot
//     be raised above 32 MiB, and a cnn's activations at batch 512 are about 50 MB);
//   - M_ARENA_MAX 1: the threads share the main arena. In an arena of its own, a thread's block
//     above 64 MiB is mapped whatever the settings, and one below it that needs a new heap (at most
//     64 MiB each) has it unmapped again once it is wholly free: the main arena's heap has neither.
// The gain is in docs/benchmarks.md, "malloc thresholds". The costs: the threads take one lock for
// the blocks that glibc's small per-thread cache does not hold, and the heap keeps its peak until
// release_free_memory(); FAST_MALLOC=system goes back to glibc's behaviour.
//
// FAST_MALLOC (core/env.cpp) chooses: `tuned` (the default) or `system` (glibc's own behaviour).
// A process where the user set any of glibc's malloc settings named above (GLIBC_TUNABLES naming
// glibc.malloc.mmap_threshold, glibc.malloc.trim_threshold, glibc.malloc.mmap_max or
// glibc.malloc.arena_max; MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_MAX_,
// MALLOC_ARENA_MAX) is left entirely as the user set it.

#include <cstddef>
#include <string>

namespace fast::core {

// What tune_malloc() did.
struct MallocTuning {
  bool applied = false;
  std::string reason;  // one line for the log: what was set, or why nothing was
};

// Whether FAST_MALLOC asks for the tuning (`tuned`) or not (`system`); InvalidArgument naming the
// variable for any other value. Callers check it with the other settings, before any data is read.
bool malloc_tuning_chosen();

// Applies the tuning above to this process (mallopt M_TRIM_THRESHOLD, M_MMAP_MAX, M_ARENA_MAX)
// unless FAST_MALLOC=system, the user set one of glibc's malloc settings, or the C library is not
// glibc: then it changes nothing and says why. Where mallopt refuses a setting (a sanitizer's
// allocator, a preloaded malloc), applied is false and the reason names it; the settings before it
// stay applied. InvalidArgument as malloc_tuning_chosen(). Process-wide: call it once, before any
// other thread allocates; arenas made before the call stay in use, and threads started later may
// be given them. The memory a tuned process keeps is its heap's peak: what is freed stays in the
// heap for later blocks until release_free_memory() gives its whole pages back (fast::torch::train
// calls it as it returns or throws).
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
