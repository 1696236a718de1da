#pragma once
// Shared state of one run of a threads World: the abort flag and reason, the clock origin and the
// operation time limit. Thread-safe.

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace fast::runtime::threads {

class Mailbox;

class WorldState {
 public:
  WorldState(int size, double op_timeout_seconds);

  int size() const noexcept { return size_; }
  // Threads of spawned activities (Context::spawn) running now: with the workers, the threads that
  // may want a core at once.
  int activities() const noexcept { return activities_.load(std::memory_order_relaxed); }
  void activity_started() noexcept { activities_.fetch_add(1, std::memory_order_relaxed); }
  void activity_ended() noexcept { activities_.fetch_sub(1, std::memory_order_relaxed); }
  double op_timeout() const noexcept { return op_timeout_; }
  double now() const;

  bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }
  // First call wins: records why and which rank failed.
  void abort(int rank, const std::string& reason);
  // "worker 2 failed: <reason>".
  std::string abort_message() const;

 private:
  int size_;
  double op_timeout_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> activities_{0};
  mutable std::mutex mutex_;
  std::string message_;
};

}  // namespace fast::runtime::threads
