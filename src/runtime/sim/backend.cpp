// The `sim` runtime's registry entry (runtime/registry.hpp).
#include "fast/runtime/cluster.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/runtime/sim/world.hpp"

namespace fast::runtime::sim {

RuntimeBackend backend() {
  return {.name = "sim",
          .description = "workers as SimGrid actors on a simulated cluster (--cluster), the simulated clock",
          .launch =
              [](const LaunchOptions& options, const WorkerFn& fn) {
                Cluster cluster =
                    options.cluster.empty() ? default_cluster(options.workers) : load_cluster(options.cluster);
                World world({.size = options.workers,
                             .op_timeout_seconds = options.op_timeout_seconds,
                             .cluster = std::move(cluster),
                             .tolerate_lost = options.tolerate_lost_workers,
                             .thread_per_actor = options.thread_per_worker,
                             .compute_threads = options.sim_threads});
                return world.run(fn);
              },
          .simulated_clock = true,
          .loses_workers = true};
}

}  // namespace fast::runtime::sim
