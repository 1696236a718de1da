#pragma once
// Synchronisation primitives that belong to the runtime. Worker code that needs a lock or a
// condition (a strategy's background activity sharing state with its step) takes them from its
// Context, never from <mutex>: under `sim` they must be SimGrid's, under `threads` they are the
// standard ones. Both are BasicLockable, so std::unique_lock<Mutex> and std::lock_guard<Mutex> work.

#include <mutex>

namespace fast::runtime {

class Mutex {
 public:
  virtual ~Mutex() = default;
  virtual void lock() = 0;
  virtual void unlock() = 0;
  virtual bool try_lock() = 0;
};

class CondVar {
 public:
  virtual ~CondVar() = default;
  // Atomically releases lock, waits for a notification, re-acquires lock. Spurious wake-ups
  // are possible: wait in a loop on the predicate. Throws RemoteError when the world aborted.
  virtual void wait(std::unique_lock<Mutex>& lock) = 0;
  // As wait, at most timeout_seconds; returns false on timeout.
  virtual bool wait_for(std::unique_lock<Mutex>& lock, double timeout_seconds) = 0;
  virtual void notify_one() = 0;
  virtual void notify_all() = 0;
};

}  // namespace fast::runtime
