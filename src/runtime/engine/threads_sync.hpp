#pragma once
// Mutex and CondVar of the threads runtime: the standard ones, with waits that notice an aborted
// world (RemoteError) instead of blocking forever.

#include <condition_variable>
#include <mutex>

#include "fast/runtime/sync.hpp"

namespace fast::runtime::engine {

class WorldState;

class ThreadsMutex final : public Mutex {
 public:
  void lock() override { mutex_.lock(); }
  void unlock() override { mutex_.unlock(); }
  bool try_lock() override { return mutex_.try_lock(); }

 private:
  std::mutex mutex_;
};

class ThreadsCondVar final : public CondVar {
 public:
  explicit ThreadsCondVar(const WorldState& world) : world_(world) {}
  void wait(std::unique_lock<Mutex>& lock) override;
  bool wait_for(std::unique_lock<Mutex>& lock, double timeout_seconds) override;
  void notify_one() override { cv_.notify_one(); }
  void notify_all() override { cv_.notify_all(); }

 private:
  const WorldState& world_;
  std::condition_variable_any cv_;
};

}  // namespace fast::runtime::engine
