#pragma once
// Work: the completion object of every asynchronous operation (send, recv, collective, spawned
// activity). A Work is a shared handle: copies refer to the same operation. Errors raised by the
// operation, on whatever thread, are stored and rethrown by wait().
//
// Contract for operations that read or write caller memory (send/recv of a view): the memory must
// stay valid until the Work completes. Destroying the last handle of an operation that has not
// started yet cancels it; one that is under way is waited for, so memory is never touched after
// the handle is gone.

#include <exception>
#include <memory>
#include <span>
#include <vector>

namespace fast::core {

// Implemented by each runtime backend.
class WorkImpl {
 public:
  virtual ~WorkImpl() = default;
  // True once the operation finished, successfully or with an error.
  virtual bool completed() const = 0;
  // Blocks until completion or until timeout_seconds pass (timeout_seconds < 0: the runtime's
  // own operation time limit, after which TimeoutError is thrown). Returns completed().
  // Throws RemoteError when another worker failed while this one waited.
  virtual bool wait_for(double timeout_seconds) = 0;
  // The operation's error, or null. Only meaningful once completed().
  virtual std::exception_ptr error() const = 0;
};

class Work {
 public:
  // A Work that has already completed successfully.
  Work() = default;
  explicit Work(std::shared_ptr<WorkImpl> impl) : impl_(std::move(impl)) {}
  // A Work that has already completed with the given error.
  static Work failed(std::exception_ptr error);
  // A Work that completes when every one of `parts` has completed; its error is the first part's
  // error (in order). Holds the parts, so none is cancelled while the combined Work lives, and
  // keep_alive (memory the parts use), released only after every part. A wait with a timeout may
  // take up to that timeout per part still running.
  static Work all(std::vector<Work> parts, std::shared_ptr<const void> keep_alive = nullptr);

  bool is_completed() const;
  // Blocks until completion (bounded by the runtime's operation time limit); rethrows the error.
  void wait() const;
  // Waits at most timeout_seconds. Returns false if still incomplete; rethrows the error.
  bool wait(double timeout_seconds) const;
  // The error once completed, else null.
  std::exception_ptr error() const;

 private:
  friend class AllOfWork;
  std::shared_ptr<WorkImpl> impl_;
};

// Waits for every Work, in order; rethrows the first error after all were waited for, so no
// operation is left touching memory when this returns.
void wait_all(std::span<const Work> works);
inline void wait_all(const std::vector<Work>& works) { wait_all(std::span<const Work>(works)); }

}  // namespace fast::core

namespace fast {
using core::Work;
}
