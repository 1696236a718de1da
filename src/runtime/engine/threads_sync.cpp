#include "threads_sync.hpp"

#include <chrono>

#include "fast/core/error.hpp"
#include "world_state.hpp"

namespace fast::runtime::engine {

namespace {
constexpr auto kPoll = std::chrono::milliseconds(50);  // how often a waiter checks for abort

void throw_if_aborted(const WorldState& world) {
  if (world.aborted()) throw core::RemoteError("condition wait abandoned: " + world.abort_message());
}
}  // namespace

void ThreadsCondVar::wait(std::unique_lock<Mutex>& lock) {
  throw_if_aborted(world_);
  cv_.wait_for(lock, kPoll);  // a spurious wake-up is allowed by the contract
  throw_if_aborted(world_);
}

bool ThreadsCondVar::wait_for(std::unique_lock<Mutex>& lock, double timeout_seconds) {
  using clock = std::chrono::steady_clock;
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_seconds));
  throw_if_aborted(world_);
  const auto now = clock::now();
  if (now >= deadline) return false;
  const auto slice = std::min<clock::duration>(kPoll, deadline - now);
  cv_.wait_for(lock, slice);
  throw_if_aborted(world_);
  return clock::now() < deadline;
}

}  // namespace fast::runtime::engine
