#include "fast/runtime/threads/world.hpp"

#include <thread>
#include <vector>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "mailbox.hpp"
#include "threads_context.hpp"
#include "world_state.hpp"
#include "../deliver.hpp"

namespace fast::runtime::threads {

World::World(WorldOptions options) : options_(options) {
  FAST_ENFORCE(options_.size >= 1, "threads World: expected at least 1 worker, got {}", options_.size);
  if (options_.op_timeout_seconds < 0) options_.op_timeout_seconds = core::env_number("FAST_OP_TIMEOUT");
  FAST_ENFORCE(options_.op_timeout_seconds > 0, "threads World: operation time limit must be positive, got {} s",
               options_.op_timeout_seconds);
}

World::~World() = default;

void World::run(const WorkerFn& fn) {
  const int n = options_.size;
  WorldState state(n, options_.op_timeout_seconds);
  std::vector<std::unique_ptr<Mailbox>> mailboxes;
  mailboxes.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) mailboxes.push_back(std::make_unique<Mailbox>());
  ActivityList activities;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));

  auto body = [&](int rank) {
    try {
      ThreadsContext ctx(rank, state, mailboxes, activities);
      fn(ctx);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(rank)] = std::current_exception();
      state.abort(rank, e.what());
      for (auto& box : mailboxes) box->abort();
    } catch (...) {
      errors[static_cast<std::size_t>(rank)] = std::current_exception();
      state.abort(rank, "unknown exception");
      for (auto& box : mailboxes) box->abort();
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int r = 1; r < n; ++r) threads.emplace_back(body, r);
  body(0);  // rank 0 runs on the calling thread
  for (auto& t : threads) t.join();
  activities.join_all();

  detail::rethrow_root_cause(errors);
}

}  // namespace fast::runtime::threads
