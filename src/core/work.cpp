#include "fast/core/work.hpp"

namespace fast::core {

namespace {
class FailedWork final : public WorkImpl {
 public:
  explicit FailedWork(std::exception_ptr e) : error_(std::move(e)) {}
  bool completed() const override { return true; }
  bool wait_for(double) override { return true; }
  std::exception_ptr error() const override { return error_; }

 private:
  std::exception_ptr error_;
};
}  // namespace

Work Work::failed(std::exception_ptr error) { return Work(std::make_shared<FailedWork>(std::move(error))); }

bool Work::is_completed() const { return !impl_ || impl_->completed(); }

void Work::wait() const {
  if (!impl_) return;
  impl_->wait_for(-1.0);
  if (auto e = impl_->error()) std::rethrow_exception(e);
}

bool Work::wait(double timeout_seconds) const {
  if (!impl_) return true;
  if (!impl_->wait_for(timeout_seconds < 0 ? 0.0 : timeout_seconds)) return false;
  if (auto e = impl_->error()) std::rethrow_exception(e);
  return true;
}

std::exception_ptr Work::error() const { return impl_ && impl_->completed() ? impl_->error() : nullptr; }

void wait_all(std::span<const Work> works) {
  std::exception_ptr first;
  for (const Work& w : works) {
    try {
      w.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace fast::core
