#pragma once
// libtorch's CPU allocator for simulated runs: tensors of kPooledTensorBytes or more from FAST's
// pool of page runs (fast/core/page_pool.hpp), the smaller ones from libtorch's own allocator.
//
// Why: a simulation trains hundreds of workers in one process, and every gradient computes
// blocks of a layer's size that live for one step (mlp: the 784 x 256 weight's gradient, 0.8 MB).
// From the malloc heap, which FAST's tuning never trims (fast/core/malloc_tuning.hpp), the holes they
// leave between steps are split by the small blocks of other workers, the next ones come from
// fresh heap, and the heap grew by up to one such block per worker (adpsgd at 1,024 workers: 0.7
// to 1.2 GB more at the peak, in some runs and not others). The pool reuses a freed run whole for
// the next block of its length.

#include <cstddef>

namespace fast::torch {

inline constexpr std::size_t kPooledTensorBytes = std::size_t{256} << 10;

// Makes libtorch's CPU allocations in this process go through the pooled allocator from now on,
// for the rest of the process (libtorch has no way back; tensors allocated before keep their own
// deleters). Idempotent and thread-safe. A libtorch whose CPU allocator frees nothing from its
// address alone (no raw deleter, which libtorch's raw_deallocate needs) is left as it is.
void use_pooled_cpu_allocator();
// Whether use_pooled_cpu_allocator() installed the pooled allocator in this process.
bool pooled_cpu_allocator_in_use() noexcept;

}  // namespace fast::torch
