#include "member_watch.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/runtime/time_limit.hpp"

namespace fast::collective::detail {

namespace {

// The Work of one send or receive, waited for in slices with a check of the group's members
// between them. When a member is lost (or the time limit passes) before the operation completes,
// the inner Work is dropped (an unmatched receive is cancelled; one under way is waited for, so
// the caller's memory is not touched afterwards) and this Work completes with the error.
class WatchedWork final : public core::WorkImpl {
 public:
  WatchedWork(MemberWatch& watch, core::Work inner) : watch_(watch), inner_(std::move(inner)) {}

  bool completed() const override { return error_ != nullptr || inner_.is_completed(); }
  std::exception_ptr error() const override { return error_ != nullptr ? error_ : inner_.error(); }

  bool wait_for(double timeout_seconds) override {
    if (completed()) return true;
    const bool default_limit = timeout_seconds < 0;
    const double limit = default_limit ? watch_.operation_time_limit() : timeout_seconds;
    const double start = watch_.now();
    for (;;) {
      const double left = start + limit - watch_.now();
      if (left <= 0) {
        if (!default_limit) return false;
        return abandon(std::make_exception_ptr(
            core::TimeoutError(runtime::time_limit_message("a message of a collective", limit))));
      }
      if (slice(std::min(MemberWatch::kSlice, left))) return true;
      try {
        watch_.check_members("a message of a collective");
      } catch (const core::PeerLost&) {
        return abandon(std::current_exception());
      }
    }
  }

 private:
  // One bounded wait of the inner Work: true once it completed (with or without an error: the
  // error is read through error()). An error of the wait itself (RemoteError: the world was
  // aborted) completes this Work with it.
  bool slice(double seconds) {
    try {
      return inner_.wait(seconds);
    } catch (...) {
      if (!inner_.is_completed()) error_ = std::current_exception();
      return true;
    }
  }

  bool abandon(std::exception_ptr error) {
    inner_ = core::Work();  // cancels an unmatched receive; waits for a transfer under way
    error_ = std::move(error);
    return true;
  }

  MemberWatch& watch_;
  core::Work inner_;
  std::exception_ptr error_;
};

}  // namespace

void MemberWatch::check_members(const char* what) const {
  for (int m : members_) {
    if (!runtime::lost_since(inner_, m, formed_at_)) continue;
    try {
      inner_.ensure_alive(m);
    } catch (const core::PeerLost& e) {
      FAST_THROW(core::PeerLost, "{} abandoned: worker {} of the group was lost: {}", what, m, e.what());
    }
    FAST_THROW(core::PeerLost, "{} abandoned: worker {} of the group was lost", what, m);
  }
}

core::Work MemberWatch::watched(core::Work work) {
  if (work.is_completed()) return work;
  return core::Work(std::make_shared<WatchedWork>(*this, std::move(work)));
}

core::Work MemberWatch::send(int peer, runtime::Tag tag, core::ConstView data) {
  core::Work work = inner_.send(peer, tag, data);
  if (after_next_send_) {
    const std::function<void()> then = std::move(after_next_send_);
    after_next_send_ = nullptr;
    (void)work.wait(inner_.operation_time_limit());
    then();
  }
  return watched(std::move(work));
}

core::Work MemberWatch::recv(int peer, runtime::Tag tag, core::MutableView dst, runtime::Combine combine) {
  return watched(inner_.recv(peer, tag, dst, combine));
}

core::Work MemberWatch::recv(int peer, runtime::Tag tag, core::Buffer& out) {
  return watched(inner_.recv(peer, tag, out));
}

core::Work MemberWatch::recv_any(runtime::Tag tag, core::Buffer& out, int& source) {
  return watched(inner_.recv_any(tag, out, source));
}

std::optional<std::size_t> MemberWatch::try_recv(int peer, runtime::Tag tag, core::MutableView dst,
                                                 runtime::Combine combine) {
  return inner_.try_recv(peer, tag, dst, combine);
}

// A spawned activity's Work is not watched: it cannot be abandoned while it runs, and the
// collectives it runs use this Context, whose waits are.
core::Work MemberWatch::spawn(std::string name, std::function<void()> fn) {
  return inner_.spawn(std::move(name), std::move(fn));
}

}  // namespace fast::collective::detail
