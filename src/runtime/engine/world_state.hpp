#pragma once
// Shared state of one run of the in-process engine: which ranks live in this process, the abort
// flag and reason, the clock origin, the operation time limit and the transport to other
// processes (null under `threads`, where every worker is local). Thread-safe.

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "pause.hpp"

namespace fast::runtime::engine {

class Transport;

struct WorldShape {
  int world_size = 1;  // workers in the whole run
  int first_rank = 0;  // this process runs ranks [first_rank, first_rank + local_size)
  int local_size = 1;
  bool joining = false;  // these ranks replace lost ones in a run under way (Context::joins_run_under_way)
};

class WorldState {
 public:
  WorldState(WorldShape shape, double op_timeout_seconds, std::string runtime_name = "threads",
             Transport* transport = nullptr);

  int size() const noexcept { return shape_.world_size; }
  int local_size() const noexcept { return shape_.local_size; }
  int first_rank() const noexcept { return shape_.first_rank; }
  bool is_local(int rank) const noexcept {
    return rank >= shape_.first_rank && rank < shape_.first_rank + shape_.local_size;
  }
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
  // for may need (with 2 workers of an asynchronous strategy, 3 to 5 threads, on 2 cores, spinning
  // made every step slower).
  // Never with a transport (zmq): other processes of the host want the cores, and a message from
  // another process arrives through the transport's threads, not this world's.
  bool spin_pays() const noexcept;
  // What a waiter does before it blocks, until pred() holds (pred: a cheap atomic read): spins
  // (up to 4000 pauses, 20-110 us; 109 us on AMD EPYC Zen 4) when spin_pays(), else gives the core
  // away up to 64 times (sched_yield), so that the thread it waits for runs sooner than after a
  // sleep and a futex wake-up: in a world of this process, the worker that sends the message;
  // with a transport (zmq, mpi), the transport's threads, which deliver it. With nothing else
  // runnable a yield returns at once, so the loop burns at most 64 calls. With a transport it
  // raised 2-process training of the mlp under zmq from 65k to 80k samples/s (docs/benchmarks.md,
  // (f)). Returns pred()'s last value.
  // It first tells the transport (Transport::progress_wanted), whose threads deliver the message.
  // A transport that delivers in the caller (Transport::polls_in_caller) is polled instead, for at
  // most its poll_budget(): poll, check pred(), pause (spin_pays) or yield, again (poll_transport).
  template <typename Pred>
  bool poll_before_blocking(Pred pred) const {
    constexpr int kSpins = 4000, kYields = 64;
    if (transport_ != nullptr) {
      wake_transport();
      if (polls_in_caller_) return poll_transport(pred);
    }
    if (spin_pays()) {
      for (int i = 0; i < kSpins; ++i) {
        if (pred()) return true;
        pause_between_looks(true);
      }
    } else {
      for (int i = 0; i < kYields; ++i) {
        if (pred()) return true;
        pause_between_looks(false);
      }
    }
    return pred();
  }
  // Transport::progress_wanted of the transport (not null).
  void wake_transport() const;
  // The polling loop of poll_before_blocking for a transport that delivers in the caller.
  template <typename Pred>
  bool poll_transport(Pred pred) const {
    // Where the host's workers outnumber its cores (transport_spins() false), a waiter yields its
    // core between looks, so that the processes it waits for run: looking once and sleeping measured
    // slower in 4-process training on 2 cores (docs/launch.md).
    const bool spin = transport_spins();
    const auto deadline = std::chrono::steady_clock::now() + poll_budget_;
    for (unsigned i = 1;; ++i) {
      poll_once(*transport_);
      if (pred()) return true;
      pause_between_looks(spin);
      // Past the budget, it goes on while a message is partly read (receiving()): the rest of it is
      // on its way, and reading it here is what the waiter would otherwise sleep through.
      if (i % 16 == 0 && std::chrono::steady_clock::now() >= deadline && !transport_receiving()) break;
    }
    return pred();
  }
  // Around a waiter's blocking part (after poll_before_blocking found nothing): tells a transport
  // that delivers in the caller that this thread no longer polls (Transport::sleep_begin/end).
  class BlockingScope {
   public:
    explicit BlockingScope(const WorldState& world) : world_(world.polls_in_caller_ ? &world : nullptr) {
      if (world_ != nullptr) sleep_begin(*world_->transport_);
    }
    ~BlockingScope() {
      if (world_ != nullptr) sleep_end(*world_->transport_);
    }
    BlockingScope(const BlockingScope&) = delete;
    BlockingScope& operator=(const BlockingScope&) = delete;

   private:
    const WorldState* world_;
  };
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
  bool polls_in_caller_ = false;                       // transport_->polls_in_caller(), read once
  std::chrono::steady_clock::duration poll_budget_{};  // transport_->poll_budget()
  std::chrono::steady_clock::time_point start_;
  // Out of line, so that this header needs only the Transport's declaration.
  static void sleep_begin(Transport& t);
  static void sleep_end(Transport& t);
  static void poll_once(Transport& t);
  bool transport_spins() const;
  bool transport_receiving() const;
  std::atomic<bool> aborted_{false};
  std::atomic<int> activities_{0};
  mutable std::mutex mutex_;
  std::string message_;
};

}  // namespace fast::runtime::engine
