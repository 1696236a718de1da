#pragma once
// Mutex and CondVar of the sim runtime: SimGrid's own (s4u::Mutex, s4u::ConditionVariable), so a
// waiting activity lets simulated time pass instead of freezing the simulation. Waits notice an
// aborted world (RemoteError) and the loss of their own worker (PeerLost); timeouts are simulated
// seconds. Also the runtime's one way to make SimGrid's mutexes and condition variables and to
// yield, each keeping the calling actor's caught exceptions (actor_exceptions.hpp).

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include "actor_exceptions.hpp"
#include "fast/runtime/sync.hpp"

namespace fast::runtime::sim {

class WorldState;

// SimGrid's objects made and its calls that may switch actors made from an actor keep the actor's
// caught exceptions (actor_exceptions.hpp): every call of the runtime to SimGrid goes through these
// or declares a KeepCaughtExceptions itself.
simgrid::s4u::MutexPtr new_mutex();
simgrid::s4u::ConditionVariablePtr new_condition_variable();
// Lets every other actor that is ready at this simulated instant run before the caller goes on.
void yield_to_others();

class SimMutex final : public Mutex {
 public:
  SimMutex() : mutex_(new_mutex()) {}
  void lock() override {
    KeepCaughtExceptions keep;
    mutex_->lock();
  }
  void unlock() override {
    KeepCaughtExceptions keep;
    mutex_->unlock();
  }
  bool try_lock() override {
    KeepCaughtExceptions keep;
    return mutex_->try_lock();
  }
  simgrid::s4u::Mutex& native() { return *mutex_; }

 private:
  simgrid::s4u::MutexPtr mutex_;
};

// Works with SimMutex locks only (InvalidUsage otherwise).
class SimCondVar final : public CondVar {
 public:
  // rank: the worker whose activities wait on it; its waits throw PeerLost once it is lost.
  SimCondVar(WorldState& world, int rank);
  void wait(std::unique_lock<Mutex>& lock) override;
  bool wait_for(std::unique_lock<Mutex>& lock, double timeout_seconds) override;
  void notify_one() override {
    KeepCaughtExceptions keep;
    cv_->notify_one();
  }
  void notify_all() override {
    KeepCaughtExceptions keep;
    cv_->notify_all();
  }

 private:
  WorldState& world_;
  int rank_;
  simgrid::s4u::ConditionVariablePtr cv_;
};

}  // namespace fast::runtime::sim
