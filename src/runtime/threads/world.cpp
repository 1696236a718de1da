#include "fast/runtime/threads/world.hpp"

#include "../deliver.hpp"
#include "../engine/local_world.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/environment.hpp"

namespace fast::runtime::threads {

World::World(WorldOptions options) : options_(options) {
  FAST_ENFORCE(options_.size >= 1, "threads World: expected at least 1 worker, got {}", options_.size);
  if (options_.op_timeout_seconds < 0)
    options_.op_timeout_seconds = core::env_number(runtime_environment(), "FAST_OP_TIMEOUT");
  FAST_ENFORCE(options_.op_timeout_seconds > 0, "threads World: operation time limit must be positive, got {} s",
               options_.op_timeout_seconds);
}

World::~World() = default;

void World::run(const WorkerFn& fn) {
  engine::LocalWorld world({.world_size = options_.size, .first_rank = 0, .local_size = options_.size},
                           options_.op_timeout_seconds);
  const std::vector<std::exception_ptr> errors = world.run(fn);
  detail::rethrow_root_cause(errors);
}

}  // namespace fast::runtime::threads
