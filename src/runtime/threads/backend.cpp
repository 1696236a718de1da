// The `threads` runtime's registry entry (runtime/registry.hpp).
#include <chrono>

#include "fast/runtime/registry.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::runtime::threads {

RuntimeBackend backend() {
  return {.name = "threads",
          .description = "workers as threads of this process, in-memory mailboxes, the real clock",
          .launch = [](const LaunchOptions& options, const WorkerFn& fn) {
            const auto start = std::chrono::steady_clock::now();
            World world({.size = options.workers, .op_timeout_seconds = options.op_timeout_seconds});
            world.run(fn);
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          }};
}

}  // namespace fast::runtime::threads
