#pragma once
// Sizing of libtorch's thread pools for a process that runs several workers.

namespace fast::torch {

// Sets libtorch's intra-op threads (at::set_num_threads) to FAST_TORCH_THREADS when it is > 0,
// else to max(1, cores / workers_on_host), cores = the CPUs this process may run on
// (sched_getaffinity, falling back to std::thread::hardware_concurrency). The first call also sets
// the inter-op pool to 1 thread (libtorch allows that once per process, before any inter-op work;
// later calls leave it alone, and if libtorch refuses it is logged as a warning). When the BLAS
// libtorch calls is OpenBLAS, its own pool is set to 1 thread (it ignores libtorch's setting, and
// its spinning threads fight libtorch's: see threads.cpp for the measurements). Logs (at debug
// when `provisional`: a later call with the count found meanwhile follows) and returns the
// intra-op thread count (libtorch's, warned about when it kept another). InvalidArgument when
// workers_on_host < 1. Thread-safe, but the setting is
// process-wide and a thread keeps the count it found at its first parallel operation: call it on
// the thread that starts the workers, before they start; the last call wins.
int configure_torch_threads(int workers_on_host, bool provisional = false);

// The same for `workers_on_machine` workers of several processes on this machine, each of which may
// be pinned to a part of it (numactl, taskset, a container's cpuset): max(1, min(cores, the
// machine's online cores / workers_on_machine)), FAST_TORCH_THREADS first. Logged at info; a
// warning when libtorch keeps another count (a native thread pool that already started cannot be
// resized: set FAST_TORCH_THREADS). Returns the count libtorch keeps.
int configure_torch_threads_on_machine(int workers_on_machine);

// The CPUs this process may run on (>= 1).
int available_cores();

}  // namespace fast::torch
