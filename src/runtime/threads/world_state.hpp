#pragma once
// Shared state of one run of the in-process engine: which ranks live in this process, the abort
// flag and reason, the clock origin, the operation time limit and the transport to other
// processes (null under `threads`, where every worker is local). Thread-safe.

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace fast::runtime::threads {

class Transport;

struct WorldShape {
  int world_size = 1;   // workers in the whole run
  int first_rank = 0;   // this process runs ranks [first_rank, first_rank + local_size)
  int local_size = 1;
  bool joining = false; // these ranks replace lost ones in a run under way (Context::joins_run_under_way)
};

class WorldState {
 public:
  WorldState(WorldShape shape, double op_timeout_seconds, std::string runtime_name = "threads",
             Transport* transport = nullptr);

  int size() const noexcept { return shape_.world_size; }
  int local_size() const noexcept { return shape_.local_size; }
  int first_rank() const noexcept { return shape_.first_rank; }
  bool is_local(int rank) const noexcept { return rank >= shape_.first_rank && rank < shape_.first_rank + shape_.local_size; }
  bool joining() const noexcept { return shape_.joining; }
  const std::string& runtime_name() const noexcept { return runtime_name_; }
  Transport* transport() const noexcept { return transport_; }
  // Threads of spawned activities (Context::spawn) running now: with the workers, the threads that
  // may want a core at once.
  int activities() const noexcept { return activities_.load(std::memory_order_relaxed); }
  void activity_started() noexcept { activities_.fetch_add(1, std::memory_order_relaxed); }
  void activity_ended() noexcept { activities_.fetch_sub(1, std::memory_order_relaxed); }
  double op_timeout() const noexcept { return op_timeout_; }
  // Whether a waiter should spin before blocking: only when every thread of the world (workers
  // and the threads of their spawned activities, e.g. a parameter server or a window's service)
  // can have a core of its own. Otherwise a spinning waiter holds a core that the thread it waits
  // for may need: measured on 2 cores with 2 workers of an asynchronous strategy (3 to 5
  // threads), spinning cost about 1 ms per step (docs/simulation.md, "Validation").
  // Never with a transport (zmq): other processes of the host want the cores, and a message from
  // another process arrives through the transport's threads, not this world's.
  bool spin_pays() const noexcept;
  // Seconds since this state was made (for zmq: once the rendezvous completed).
  double now() const;

  bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }
  // First call wins: records why and which rank failed.
  void abort(int rank, const std::string& reason);
  // First call wins: records `message` as the whole reason (a lost process under zmq).
  void abort_with(const std::string& message);
  // "worker 2 failed: <reason>".
  std::string abort_message() const;

 private:
  WorldShape shape_;
  double op_timeout_;
  std::string runtime_name_;
  Transport* transport_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> activities_{0};
  mutable std::mutex mutex_;
  std::string message_;
};

}  // namespace fast::runtime::threads
