#include "op.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "../deliver.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/time_limit.hpp"
#include "mailbox.hpp"
#include "world_state.hpp"

namespace fast::runtime::engine {

void Op::complete(std::exception_ptr e) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    error = std::move(e);
    done = true;
    ready.store(true, std::memory_order_release);
    finished.store(true, std::memory_order_release);
    wake = sleepers > 0;
  }
  if (wake) cv.notify_all();
}

bool Op::offer(const std::shared_ptr<Op>& send) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!waiting) return false;
    handover = send;
    ready.store(true, std::memory_order_release);
    wake = sleepers > 0;
  }
  if (wake) cv.notify_all();
  return true;
}

std::string Op::describe() const {
  const char* what = kind == Kind::send ? "send" : "recv";
  if (src == kAnySource) return fmt::format("{} from any rank to rank {} (tag {:#x})", what, dst, tag);
  return fmt::format("{} from rank {} to rank {} (tag {:#x})", what, src, dst, tag);
}

namespace {
void move_payload(const Op& send, Op& recv) {
  const core::ConstView in = send.send_data;
  if (recv.kind == Op::Kind::recv_buffer)
    detail::deliver_into(in, *recv.recv_out);
  else
    detail::deliver_into(in, recv.recv_dst, recv.combine, send.src, send.dst, send.tag);
}
}  // namespace

std::size_t transfer(Op& send, Op& recv) {
  // A mismatch fails the receiver only (the contract of context.hpp); the send has completed
  // locally either way: its memory was read, or will never be.
  std::exception_ptr error;
  try {
    move_payload(send, recv);
  } catch (...) {
    error = std::current_exception();
  }
  const bool failed = error != nullptr;
  if (!failed && recv.receiver_counters != nullptr) {
    LinkCounters& c = recv.receiver_counters[static_cast<std::size_t>(send.src)];
    c.bytes_received.fetch_add(send.send_data.bytes(), std::memory_order_relaxed);
    c.messages_received.fetch_add(1, std::memory_order_relaxed);
  }
  // Moved, not copied: once published, the error belongs to the receiver's op alone, so the
  // exception is destroyed by whichever thread releases that op last (a release ordered by the
  // op's shared_ptr). A copy kept here could be the last reference and destroy the exception on
  // this thread after the receiver read it, ordered only by exception_ptr's count inside
  // libstdc++, which ThreadSanitizer cannot see (it reported a "data race on vptr").
  recv.complete(std::move(error));
  send.complete(nullptr);
  return failed ? 0 : send.send_data.numel();
}

namespace {
// With the op's lock held: performs a handed-over transfer (releasing the lock meanwhile) and
// returns true, or returns false when there is none.
bool take_handover(Op& op, std::unique_lock<std::mutex>& lock) {
  if (!op.handover) return false;
  std::shared_ptr<Op> send = std::move(op.handover);
  op.waiting = false;
  lock.unlock();
  transfer(*send, op);
  lock.lock();
  return true;
}

// Waits, lock held, until the matched op is done, performing a hand-over if one arrives.
void finish_matched(Op& op, std::unique_lock<std::mutex>& lock) {
  while (!op.done) {
    if (take_handover(op, lock)) continue;
    op.waiting = true;
    op.sleep(lock);
  }
  op.waiting = false;
}

}  // namespace

// The op's error is released here, on the owner's thread: the op itself may outlive this handle
// in another thread (a transport's, which matched it), and an exception object must not be
// destroyed there while the owner still reads the copy it caught.
OpWork::~OpWork() {
  if (op_->finished.load(std::memory_order_acquire)) {  // fast path: no other thread writes error now
    op_->error = nullptr;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(op_->mutex);
    if (op_->done) {
      op_->error = nullptr;
      return;
    }
  }
  if (mailbox_.cancel(*op_)) return;
  std::unique_lock<std::mutex> lock(op_->mutex);
  finish_matched(*op_, lock);  // matched: the transfer is under way or handed to us
  op_->error = nullptr;
}

bool OpWork::completed() const {
  if (op_->finished.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(op_->mutex);
  return op_->done;
}

std::exception_ptr OpWork::error() const {
  if (op_->finished.load(std::memory_order_acquire)) return op_->error;
  std::lock_guard<std::mutex> lock(op_->mutex);
  return op_->error;
}

bool OpWork::wait_for(double timeout_seconds) {
  using clock = std::chrono::steady_clock;
  if (op_->finished.load(std::memory_order_acquire)) return true;
  constexpr auto kPoll = std::chrono::milliseconds(50);  // how often an idle waiter checks for abort
  world_.poll_before_blocking([&] { return op_->ready.load(std::memory_order_acquire); });
  if (op_->finished.load(std::memory_order_acquire)) return true;
  const bool default_limit = timeout_seconds < 0;
  const double limit = default_limit ? world_.op_timeout() : timeout_seconds;
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(limit));
  const WorldState::BlockingScope blocking(world_);  // may deliver our message itself: before the lock
  std::unique_lock<std::mutex> lock(op_->mutex);
  // `waiting` is true only while this loop may block; every exit clears it under the lock, so a
  // later sender transfers by itself.
  for (;;) {
    if (op_->done) {
      op_->waiting = false;
      return true;
    }
    if (take_handover(*op_, lock)) continue;
    const auto now = clock::now();
    const bool expired = now >= deadline;
    if (world_.aborted() || (expired && default_limit)) {
      op_->waiting = false;
      lock.unlock();
      if (mailbox_.cancel(*op_)) {
        const std::string what = op_->describe();
        std::exception_ptr e =
            world_.aborted()
                ? std::make_exception_ptr(
                      core::RemoteError(fmt::format("{} abandoned: {}", what, world_.abort_message())))
                : std::make_exception_ptr(core::TimeoutError(time_limit_message(what, world_.op_timeout())));
        op_->complete(e);
        return true;
      }
      lock.lock();  // matched: the transfer finishes promptly
      finish_matched(*op_, lock);
      return true;
    }
    if (expired) {
      op_->waiting = false;
      return false;
    }
    op_->waiting = op_->kind != Op::Kind::send;
    op_->sleep(lock, now + std::min<clock::duration>(kPoll, deadline - now));
  }
}

}  // namespace fast::runtime::engine
