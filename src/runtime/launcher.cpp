#include "fast/runtime/launcher.hpp"

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/runtime/cluster.hpp"
#include "fast/runtime/sim/world.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::runtime {

std::vector<std::string> runtime_names() { return {"threads", "sim"}; }

double launch(const LaunchOptions& options, const WorkerFn& fn) {
  FAST_ENFORCE(options.workers >= 1, "workers: expected a count >= 1, got {}", options.workers);
  FAST_ENFORCE(options.cluster.empty() || options.runtime == "sim",
               "cluster: a cluster file is for the sim runtime, got runtime '{}' with cluster '{}'", options.runtime,
               options.cluster.string());
  if (options.runtime == "threads") {
    const auto start = std::chrono::steady_clock::now();
    threads::World world({.size = options.workers, .op_timeout_seconds = options.op_timeout_seconds});
    world.run(fn);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (options.runtime == "sim") {
    Cluster cluster = options.cluster.empty() ? default_cluster(options.workers) : load_cluster(options.cluster);
    sim::World world({.size = options.workers, .op_timeout_seconds = options.op_timeout_seconds,
                      .cluster = std::move(cluster), .tolerate_lost = options.tolerate_lost_workers});
    return world.run(fn);
  }
  FAST_THROW(core::InvalidArgument, "runtime: unknown name '{}'; expected one of: {}", options.runtime,
             fmt::join(runtime_names(), ", "));
}

}  // namespace fast::runtime
