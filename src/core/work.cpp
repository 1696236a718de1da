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

class AllOfWork final : public WorkImpl {
 public:
  AllOfWork(std::vector<Work> parts, std::shared_ptr<const void> keep_alive)
      : keep_alive_(std::move(keep_alive)), parts_(std::move(parts)) {}
  bool completed() const override {
    for (const Work& w : parts_)
      if (!w.is_completed()) return false;
    return true;
  }
  bool wait_for(double timeout_seconds) override {
    for (const Work& w : parts_)
      if (w.impl_ && !w.impl_->wait_for(timeout_seconds)) return false;
    return true;
  }
  std::exception_ptr error() const override {
    for (const Work& w : parts_)
      if (auto e = w.error()) return e;
    return nullptr;
  }

 private:
  std::shared_ptr<const void> keep_alive_;  // declared first: released after the parts
  std::vector<Work> parts_;
};

Work Work::all(std::vector<Work> parts, std::shared_ptr<const void> keep_alive) {
  return Work(std::make_shared<AllOfWork>(std::move(parts), std::move(keep_alive)));
}

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
    } catch (const std::exception&) {
      // Only std exceptions are collected: anything else (the sim runtime's actor kill,
      // simgrid::ForcefulKillException) leaves at once.
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace fast::core
