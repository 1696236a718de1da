#include "completion.hpp"

#include <chrono>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/runtime/time_limit.hpp"

namespace fast::runtime::detail {

void Completion::complete(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

bool Completion::completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

std::exception_ptr Completion::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

bool Completion::wait_for(double timeout_seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool default_limit = timeout_seconds < 0;
  if (default_limit && limit_ <= 0) {
    cv_.wait(lock, [&] { return done_; });
    return true;
  }
  const double limit = default_limit ? limit_ : timeout_seconds;
  if (cv_.wait_for(lock, std::chrono::duration<double>(limit), [&] { return done_; })) return true;
  if (default_limit) FAST_THROW(core::TimeoutError, "{}", time_limit_message(what_, limit_));
  return false;
}

}  // namespace fast::runtime::detail
