#pragma once
// One point-to-point operation (a send or a receive) of the engine, and the Work handle
// that waits on it. An Op is matched with its counterpart under the destination mailbox's lock.
// The transfer then runs outside any lock, on the receiver's thread when it can: a receive whose
// owner is already blocked in wait() is handed the matched send and copies (or adds) into its own
// memory itself, so in a ring every worker reduces its own data in parallel; otherwise whoever
// matched performs it. Either way both ops complete when the transfer ends.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "../matcher.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/work.hpp"
#include "fast/runtime/context.hpp"

namespace fast::runtime::engine {

class Mailbox;
class WorldState;

// Traffic counters of one worker towards one peer (ThreadsContext keeps one per peer).
struct LinkCounters {
  std::atomic<std::uint64_t> bytes_sent{0}, messages_sent{0}, bytes_received{0}, messages_received{0};
};

struct Op {
  enum class Kind { send, recv_view, recv_buffer };

  // Immutable after creation.
  Kind kind = Kind::send;
  int src = 0;  // receives from any source: kAnySource until matched
  int dst = 0;
  Tag tag = 0;
  core::ConstView send_data;                  // Kind::send
  std::shared_ptr<const void> payload_owner;  // sends from another process: keeps send_data's memory
  bool copy_when_queued = false;              // sends from another process: a send that finds no receive is
                                              // copied out of payload_owner's memory (Mailbox::post_send)
  core::MutableView recv_dst;                 // Kind::recv_view
  Combine combine = Combine::copy;            // Kind::recv_view
  core::Buffer* recv_out = nullptr;           // Kind::recv_buffer
  int* recv_source = nullptr;                 // receives from any source: where the matched sender's rank goes
  LinkCounters* receiver_counters = nullptr;  // receives: the receiver's per-peer counters, bumped by transfer

  static constexpr int kAnySource = detail::kAnySource;

  // Guarded by the destination mailbox's lock.
  bool matched = false;
  bool cancelled = false;

  // Guarded by mutex.
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  bool waiting = false;          // receives: the owner is blocked in wait() and takes hand-overs
  std::shared_ptr<Op> handover;  // receives: a matched send whose transfer the owner performs
  int sleepers = 0;              // threads blocked on cv: complete() and offer() notify only then,
                                 // so a spinning owner's op never has its cv touched by another core

  // Set (release) together with done or handover, for waiters that spin before blocking.
  std::atomic<bool> ready{false};
  // Set (release) with done, after error: once a thread reads it true (acquire), done and error
  // may be read without the lock (nothing writes them again but the owner's handle, on its thread).
  std::atomic<bool> finished{false};

  void complete(std::exception_ptr e);
  // Blocks on cv (lock held) until notified (or `until`); counts itself in sleepers meanwhile.
  template <typename Lock>
  void sleep(Lock& lock) {
    ++sleepers;
    cv.wait(lock);
    --sleepers;
  }
  template <typename Lock, typename TimePoint>
  void sleep(Lock& lock, TimePoint until) {
    ++sleepers;
    cv.wait_until(lock, until);
    --sleepers;
  }
  // Called by a sender that matched this (receive) op: hands `send` to the waiting owner and
  // returns true, or returns false when the owner is not waiting (the caller transfers).
  bool offer(const std::shared_ptr<Op>& send);
  std::string describe() const;  // "recv from 1 to 2 (tag 0x...)"
};

// Moves the message of `send` into `recv` (copy or sum), then completes both with the outcome.
// Returns the number of elements moved (0 on error).
std::size_t transfer(Op& send, Op& recv);

// The user's handle on an Op. Destroying the last handle of an unmatched op cancels it; of a
// matched, unfinished op, waits for the transfer to finish.
class OpWork final : public core::WorkImpl {
 public:
  OpWork(std::shared_ptr<Op> op, Mailbox& mailbox, WorldState& world)
      : op_(std::move(op)), mailbox_(mailbox), world_(world) {}
  ~OpWork() override;

  bool completed() const override;
  bool wait_for(double timeout_seconds) override;
  std::exception_ptr error() const override;

 private:
  std::shared_ptr<Op> op_;
  Mailbox& mailbox_;
  WorldState& world_;
};

}  // namespace fast::runtime::engine
