#pragma once
// Channel<T>: a bounded FIFO between activities of one worker, built on the runtime's Mutex and
// CondVar so it works under every runtime. Thread-safe. close() wakes every waiter; pop() on a
// closed, empty channel returns std::nullopt.

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>

#include "fast/core/error.hpp"
#include "fast/runtime/context.hpp"

namespace fast::runtime {

template <typename T>
class Channel {
 public:
  Channel(Context& ctx, std::size_t capacity)
      : mutex_(ctx.make_mutex()), not_empty_(ctx.make_condvar()), not_full_(ctx.make_condvar()), capacity_(capacity) {
    FAST_ENFORCE(capacity > 0, "Channel capacity must be positive, got {}", capacity);
  }

  // Blocks while full. Throws InvalidUsage when the channel is closed.
  void push(T value) {
    std::unique_lock<Mutex> lock(*mutex_);
    while (items_.size() >= capacity_ && !closed_) not_full_->wait(lock);
    if (closed_) throw core::InvalidUsage("push on a closed Channel");
    items_.push_back(std::move(value));
    not_empty_->notify_one();
  }

  // Would-block is an empty optional.
  std::optional<T> try_pop() {
    std::unique_lock<Mutex> lock(*mutex_);
    return take(lock);
  }

  // Blocks until an item arrives or the channel is closed and drained.
  std::optional<T> pop() {
    std::unique_lock<Mutex> lock(*mutex_);
    while (items_.empty() && !closed_) not_empty_->wait(lock);
    return take(lock);
  }

  void close() {
    std::unique_lock<Mutex> lock(*mutex_);
    closed_ = true;
    not_empty_->notify_all();
    not_full_->notify_all();
  }

 private:
  std::optional<T> take(std::unique_lock<Mutex>&) {
    if (items_.empty()) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    not_full_->notify_one();
    return value;
  }

  std::unique_ptr<Mutex> mutex_;
  std::unique_ptr<CondVar> not_empty_;
  std::unique_ptr<CondVar> not_full_;
  std::deque<T> items_;
  std::size_t capacity_;
  bool closed_ = false;
};

}  // namespace fast::runtime
