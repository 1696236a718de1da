#pragma once
// Completion: a Work finished by one call to complete(), from any thread. What the backends share
// for operations that end on another thread than the waiter's: a spawned activity (threads, zmq)
// or a send whose memory a socket layer releases later (zmq). Private header of the runtime layer.
//
// Thread-safety: every method may be called from any thread.

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>

#include "fast/core/work.hpp"

namespace fast::runtime::detail {

class Completion final : public core::WorkImpl {
 public:
  // wait_for(t < 0) waits at most limit_seconds, then throws TimeoutError naming `what`;
  // limit_seconds <= 0: it waits until complete() (an activity runs as long as its work takes).
  Completion(std::string what, double limit_seconds) : what_(std::move(what)), limit_(limit_seconds) {}

  // The first call wins; later ones are ignored.
  void complete(std::exception_ptr error = nullptr);

  bool completed() const override;
  bool wait_for(double timeout_seconds) override;
  std::exception_ptr error() const override;

 private:
  std::string what_;
  double limit_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace fast::runtime::detail
