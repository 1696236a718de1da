#pragma once
// ComputePool: OS threads that run the workers' real computations (a gradient) while SimGrid
// simulates their duration (SimContext::compute_overlapped). SimGrid runs one actor at a time on
// one OS thread; an actor hands its computation to the pool, starts its simulated execution and
// yields, the next actor does the same, and so the computations of every actor that is computing
// at the same simulated time run on as many cores as the pool has threads.
//
// The pool knows nothing of SimGrid: a task must never make a simcall (no Context call), only
// compute on memory no other actor touches while it runs (see Context::compute_overlapped).
//
// Thread-safety: submit() may be called from any thread. Tasks run in submission order, each on one
// of the pool's threads. The destructor runs the tasks already queued, then joins the threads.

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace fast::runtime::sim {

class ComputePool {
 public:
  // Starts `threads` OS threads (>= 1; InvalidArgument otherwise).
  explicit ComputePool(int threads);
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  int threads() const noexcept { return static_cast<int>(threads_.size()); }
  // Queues `work`; the future becomes ready when it has run, and its get() rethrows what it threw.
  // work and what it references must stay valid until then.
  std::future<void> submit(std::function<void()> work);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> queue_;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

// The threads a pool gets for `asked` (the sim_threads setting: 0 = the cores this process may
// run on) and `workers` simulated workers: min(asked or cores, workers), at least 1. One means no
// pool: computations run inline, in simulation order.
int compute_threads(int asked, int workers);

}  // namespace fast::runtime::sim
