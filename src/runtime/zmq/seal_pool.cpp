#include "seal_pool.hpp"

#include <algorithm>
#include <utility>

#include "fast/core/error.hpp"

namespace fast::runtime::zmq {

unsigned SealPool::automatic_helpers(unsigned cores, unsigned workers_on_machine) {
  constexpr unsigned kMost = 2, kKept = 2;
  const unsigned per_worker = cores / std::max(1u, workers_on_machine);
  return per_worker > kKept ? std::min(kMost, per_worker - kKept) : 0;
}

SealPool::SealPool(unsigned helpers) : helpers_(helpers) {
  FAST_ENFORCE(helpers < kMaxSlots, "seal pool: expected at most {} helper threads, got {}", kMaxSlots - 1, helpers);
}

SealPool::~SealPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void SealPool::start_helpers() {
  if (!threads_.empty() || helpers_ == 0) return;
  for (unsigned slot = 1; slot <= helpers_; ++slot) threads_.emplace_back([this, slot] { helper(slot); });
}

void SealPool::run(Task& task, unsigned slot, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::exception_ptr error;
  try {
    task.job(slot);
  } catch (...) {
    error = std::current_exception();
  }
  task.job = nullptr;  // what it captured goes before the group may end
  lock.lock();
  Group& group = *task.group;
  if (error && !group.error_) group.error_ = error;
  if (--group.pending_ == 0) group.done_.notify_all();
}

void SealPool::helper(unsigned slot) {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Task task = std::move(queue_.front());
    queue_.pop_front();
    run(task, slot, lock);
  }
}

void SealPool::Group::add(Job job) {
  std::unique_lock lock(pool_.mutex_);
  ++pending_;
  Task task{this, std::move(job)};
  if (pool_.helpers_ == 0) {
    pool_.run(task, 0, lock);
    return;
  }
  pool_.start_helpers();
  pool_.queue_.push_back(std::move(task));
  lock.unlock();
  pool_.work_.notify_one();
}

void SealPool::Group::wait() {
  std::unique_lock lock(pool_.mutex_);
  while (pending_ > 0) {
    auto mine = std::find_if(pool_.queue_.begin(), pool_.queue_.end(), [&](const Task& t) { return t.group == this; });
    if (mine == pool_.queue_.end()) {
      done_.wait(lock);
      continue;
    }
    Task task = std::move(*mine);
    pool_.queue_.erase(mine);
    pool_.run(task, 0, lock);
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

bool SealPool::Group::idle() const {
  std::lock_guard lock(pool_.mutex_);
  return pending_ == 0;
}

SealPool::Group::~Group() {
  try {
    wait();
  } catch (...) {  // the owner is unwinding already, or dropped the group's outcome
  }
}

}  // namespace fast::runtime::zmq
