#include "fast/runtime/launcher.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::runtime {

std::vector<std::string> runtime_names() { return {"threads"}; }

void launch(const LaunchOptions& options, const WorkerFn& fn) {
  FAST_ENFORCE(options.workers >= 1, "workers: expected a count >= 1, got {}", options.workers);
  if (options.runtime == "threads") {
    threads::World world({.size = options.workers, .op_timeout_seconds = options.op_timeout_seconds});
    world.run(fn);
    return;
  }
  FAST_THROW(core::InvalidArgument, "runtime: unknown name '{}'; expected one of: {}", options.runtime,
             fmt::join(runtime_names(), ", "));
}

}  // namespace fast::runtime
