#include "compute_pool.hpp"

#include <sched.h>

#include <algorithm>

#include "fast/core/error.hpp"

namespace fast::runtime::sim {

ComputePool::ComputePool(int threads) {
  FAST_ENFORCE(threads >= 1, "ComputePool: expected at least 1 thread, got {}", threads);
  threads_.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { run(); });
}

ComputePool::~ComputePool() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::future<void> ComputePool::submit(std::function<void()> work) {
  std::packaged_task<void()> task(std::move(work));
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return done;
}

void ComputePool::run() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // an exception is stored in the task's future
  }
}

int compute_threads(int asked, int workers) {
  FAST_ENFORCE(asked >= 0, "sim_threads: expected 0 (the cores) or more threads, got {}", asked);
  int threads = asked;
  if (threads == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    threads = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  }
  return std::clamp(threads, 1, std::max(1, workers));
}

}  // namespace fast::runtime::sim
