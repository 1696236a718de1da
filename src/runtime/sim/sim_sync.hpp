#pragma once
// Mutex and CondVar of the sim runtime: SimGrid's own (s4u::Mutex, s4u::ConditionVariable), so a
// waiting activity lets simulated time pass instead of freezing the simulation. Waits notice an
// aborted world (RemoteError) and the loss of their own worker (PeerLost); timeouts are simulated
// seconds.

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include "fast/runtime/sync.hpp"

namespace fast::runtime::sim {

class WorldState;

class SimMutex final : public Mutex {
 public:
  SimMutex() : mutex_(simgrid::s4u::Mutex::create()) {}
  void lock() override { mutex_->lock(); }
  void unlock() override { mutex_->unlock(); }
  bool try_lock() override { return mutex_->try_lock(); }
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
  void notify_one() override { cv_->notify_one(); }
  void notify_all() override { cv_->notify_all(); }

 private:
  WorldState& world_;
  int rank_;
  simgrid::s4u::ConditionVariablePtr cv_;
};

}  // namespace fast::runtime::sim
