#include "transport_run.hpp"

#include <chrono>
#include <mutex>

#include "../deliver.hpp"
#include "fast/core/error.hpp"

namespace fast::runtime::engine {

double run_over_transport(LocalWorld& world, const WorkerFn& fn, const TransportRun& run) {
  std::mutex lost_mutex;
  std::string lost_reason;  // the loss that ended a run which does not tolerate losses
  run.start([&](const std::string& reason) {
    if (run.tolerate_lost) return;
    {
      std::lock_guard<std::mutex> lock(lost_mutex);
      if (lost_reason.empty()) lost_reason = reason;
    }
    world.abort_all(reason);
  });
  // Whether a local worker failed before any loss was reported: its error, a TimeoutError too, is
  // then the run's first, and a loss reported later is most often its echo (the peers that it
  // told failed, and told this process so).
  bool failed_before_a_loss = false;
  const LocalWorld::FailureFn on_failure = [&](int rank, const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(lost_mutex);
      if (lost_reason.empty()) failed_before_a_loss = true;
    }
    if (run.on_failure) run.on_failure(rank, reason);
  };
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::exception_ptr> errors = world.run(fn, on_failure);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.finish(errors);
  // A local worker's own failure is this process's error even where a loss ended the run: the
  // loss a peer reports while this process ends is most often that failure's echo.
  if (const std::exception_ptr own = detail::own_failure(errors)) std::rethrow_exception(own);
  {
    std::lock_guard<std::mutex> lock(lost_mutex);
    if (failed_before_a_loss)
      if (const std::exception_ptr timeout = detail::first_error_of<core::TimeoutError>(errors))
        std::rethrow_exception(timeout);
    if (!lost_reason.empty()) throw core::PeerLost(lost_reason);
  }
  detail::rethrow_root_cause(errors);
  return seconds;
}

}  // namespace fast::runtime::engine
