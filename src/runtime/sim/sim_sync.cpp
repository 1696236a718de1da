#include "sim_sync.hpp"

#include <simgrid/s4u/Actor.hpp>

#include "fast/core/error.hpp"
#include "world_state.hpp"

namespace fast::runtime::sim {

namespace {
void throw_if_aborted(const WorldState& world, int rank) {
  if (world.aborted()) throw core::RemoteError("condition wait abandoned: " + world.abort_message());
  if (world.lost(rank)) throw core::PeerLost("condition wait abandoned: " + world.lost_message(rank));
}

simgrid::s4u::Mutex& native_of(std::unique_lock<Mutex>& lock) {
  auto* m = dynamic_cast<SimMutex*>(lock.mutex());
  FAST_ENFORCE_AS(core::InvalidUsage, m != nullptr && lock.owns_lock(),
                  "sim CondVar: expected a locked Mutex made by the sim Context");
  return m->native();
}
}  // namespace

simgrid::s4u::MutexPtr new_mutex() {
  KeepCaughtExceptions keep;
  return simgrid::s4u::Mutex::create();
}

simgrid::s4u::ConditionVariablePtr new_condition_variable() {
  KeepCaughtExceptions keep;
  return simgrid::s4u::ConditionVariable::create();
}

void yield_to_others() {
  KeepCaughtExceptions keep;
  simgrid::s4u::this_actor::yield();
}

SimCondVar::SimCondVar(WorldState& world, int rank) : world_(world), rank_(rank), cv_(new_condition_variable()) {
  world_.watch(cv_);
}

void SimCondVar::wait(std::unique_lock<Mutex>& lock) {
  throw_if_aborted(world_, rank_);
  std::unique_lock<simgrid::s4u::Mutex> native(native_of(lock), std::adopt_lock);
  {
    KeepCaughtExceptions keep;
    cv_->wait(native);
  }
  native.release();
  throw_if_aborted(world_, rank_);
}

bool SimCondVar::wait_for(std::unique_lock<Mutex>& lock, double timeout_seconds) {
  throw_if_aborted(world_, rank_);
  if (timeout_seconds <= 0) return false;
  std::unique_lock<simgrid::s4u::Mutex> native(native_of(lock), std::adopt_lock);
  bool woken = false;
  {
    KeepCaughtExceptions keep;
    woken = cv_->wait_for(native, timeout_seconds) == std::cv_status::no_timeout;
  }
  native.release();
  throw_if_aborted(world_, rank_);
  return woken;
}

}  // namespace fast::runtime::sim
