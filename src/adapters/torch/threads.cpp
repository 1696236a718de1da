#include "fast/adapters/torch/threads.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>

#include <fmt/format.h>

#include <ATen/Parallel.h>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/training/environment.hpp"

namespace fast::torch {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {
// Debian's libtorch calls the system BLAS; with OpenBLAS's pthread build that library keeps its own
// spinning pool (one thread per core by default) which at::set_num_threads does not reach, so every
// worker's matrix product would fan out over all cores and spin against libtorch's OpenMP threads
// (with both pools at 2 threads an MLP step runs several times slower than under PyTorch DDP or
// in a plain loop; docs/benchmarks.md, benchmarks (a) and (b), measure the result). OpenBLAS is
// therefore kept at one thread; libtorch's intra-op threads do the
// parallel work. openblas_set_num_threads is looked up at run time because the BLAS behind
// libblas.so.3 is the machine's choice. Returns false when the loaded BLAS is not OpenBLAS.
bool set_openblas_threads(int threads) {
  using SetThreads = void (*)(int);
  auto* set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set == nullptr) return false;
  set(threads);
  return true;
}
}  // namespace

namespace {
// Sets `threads` intra-op threads (and, once, 1 inter-op thread; OpenBLAS 1) and logs it with `why`;
// warns when libtorch keeps another count (its native pool, unlike OpenMP, cannot be resized once
// it started).
int apply_threads(int threads, const std::string& why, bool provisional) {
  static std::once_flag interop_once;
  std::call_once(interop_once, [] {
    try {
      ::at::set_num_interop_threads(1);
    } catch (const std::exception& e) {  // c10::Error: the inter-op pool already started
      core::log(core::LogLevel::warn, "libtorch inter-op threads left at {}: {}", ::at::get_num_interop_threads(),
                e.what());
    }
  });
  ::at::set_num_threads(threads);
  const bool openblas = set_openblas_threads(1);
  const int kept = ::at::get_num_threads();
  if (kept != threads)
    core::log(core::LogLevel::warn,
              "libtorch kept {} intra-op threads where {} were asked ({}): its thread pool had started; set "
              "FAST_TORCH_THREADS",
              kept, threads, why);
  core::log(provisional ? core::LogLevel::debug : core::LogLevel::info, "libtorch intra-op threads: {}{} ({})", kept,
            openblas ? ", OpenBLAS 1" : "", why);
  return kept;
}

long long threads_from_environment() { return core::env_int(training::training_environment(), "FAST_TORCH_THREADS"); }
}  // namespace

int configure_torch_threads(int workers_on_host, bool provisional) {
  FAST_ENFORCE(workers_on_host >= 1, "configure_torch_threads: expected workers_on_host >= 1, got {}", workers_on_host);
  const long long from_env = threads_from_environment();
  const int cores = available_cores();
  const int threads = from_env > 0 ? static_cast<int>(from_env) : std::max(1, cores / workers_on_host);
  return apply_threads(threads,
                       fmt::format("{}; {} cores, {} workers on this host",
                                   from_env > 0 ? "FAST_TORCH_THREADS" : "cores / workers", cores, workers_on_host),
                       provisional);
}

int configure_torch_threads_on_machine(int workers_on_machine) {
  FAST_ENFORCE(workers_on_machine >= 1, "configure_torch_threads_on_machine: expected workers_on_machine >= 1, got {}",
               workers_on_machine);
  const long long from_env = threads_from_environment();
  const int cores = available_cores();
  const int machine = std::max(cores, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  const int threads =
      from_env > 0 ? static_cast<int>(from_env) : std::max(1, std::min(cores, machine / workers_on_machine));
  return apply_threads(threads,
                       fmt::format("{}; {} cores of the machine's {}, {} workers on this host",
                                   from_env > 0 ? "FAST_TORCH_THREADS"
                                                : "the machine's cores / workers, at most this "
                                                  "process's",
                                   cores, machine, workers_on_machine),
                       false);
}

}  // namespace fast::torch
