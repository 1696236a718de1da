#pragma once
// The inbox of one rank in the sim runtime: messages sent to it and not yet received, and its
// receives not yet matched, matched by the runtime's one Matcher (../matcher.hpp), as every
// backend: per (source, tag) in send order, receives from any source by arrival order. Waiters sleep on the inbox's
// SimGrid condition variable, woken when a message is matched, on abort and when a worker is lost. Not locked (one
// actor runs at a time).

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>

#include "../matcher.hpp"
#include "op.hpp"

namespace fast::runtime::sim {

class WorldState;

class Inbox {
 public:
  explicit Inbox(WorldState& world);

  // Queues the message or hands it to a waiting receive (then returns that receive).
  std::shared_ptr<RecvOp> post_message(const std::shared_ptr<Message>& message);
  // Matches the receive with a queued message (setting recv->message) or queues it. Returns
  // whether it matched.
  bool post_recv(const std::shared_ptr<RecvOp>& recv);
  // The first queued message from (src, tag) if its transfer has arrived, removed; else null.
  std::shared_ptr<Message> take_arrived(int src, Tag tag);
  // Removes an unmatched receive from its queue.
  void cancel(RecvOp& recv);

  // Sleeps until woken or until timeout_seconds (simulated, < 0: no limit) pass, unless ready()
  // holds once the inbox's mutex is taken; false on timeout.
  bool sleep(double timeout_seconds, const std::function<bool()>& ready);
  void wake();

 private:
  WorldState& world_;
  simgrid::s4u::MutexPtr mutex_;
  simgrid::s4u::ConditionVariablePtr cv_;
  detail::Matcher<Message, RecvOp> matcher_;
};

}  // namespace fast::runtime::sim
