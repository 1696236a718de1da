#pragma once
// The inbox of one rank in the engine: unmatched sends and receives addressed to it,
// matched by the runtime's one Matcher (../matcher.hpp: per (source, tag) FIFO, receives from any
// source by arrival order), under this mailbox's lock. Thread-safe.

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../matcher.hpp"
#include "buffer_pool.hpp"
#include "op.hpp"

namespace fast::runtime::engine {

class Mailbox {
 public:
  // Returns the matched receive (both now marked matched; the caller transfers) or null after
  // queueing the send (with a copy of its payload when send->copy_when_queued). Throws
  // RemoteError when the mailbox was aborted.
  std::shared_ptr<Op> post_send(const std::shared_ptr<Op>& send, const WorldState& world);
  // Same for a receive (its src may be Op::kAnySource): returns the matched send or null after
  // queueing. A matched any-source receive gets the sender's rank in src and *recv_source. A
  // receive from a lost source that finds no queued message throws PeerLost.
  std::shared_ptr<Op> post_recv(const std::shared_ptr<Op>& recv, const WorldState& world);
  // Takes the first queued send from (src, tag), marking it matched, or returns null.
  std::shared_ptr<Op> take_send(int src, Tag tag, const WorldState& world);
  // Cancels an unmatched op (removing it from its queue): true. False when already matched.
  bool cancel(Op& op);
  // After this, posting throws RemoteError. Called once the world's abort flag is set.
  void abort();
  // Source `src` (a worker of another process) is lost: its queued receives complete with
  // PeerLost(reason) and later receives from it throw that, unless a message it sent before it
  // was lost is still queued (those are delivered). Receives from any source are left alone.
  void fail_source(int src, const std::string& reason);
  // A new process took lost source `src`'s rank (zmq rejoin): receives from it work again, and
  // the messages its predecessor sent that are still queued are dropped (they belong to requests
  // and collectives of a process that no longer exists).
  void revive_source(int src);

 private:
  void check_open(const Op& op, const WorldState& world) const;
  // Gives a queued send its own copy of the payload, from copies_, and lets go of the memory it
  // came in (mutex_ held).
  void detach_payload(Op& send);

  // The idle copies kept for reuse, per mailbox: queued copies live until their receive is posted.
  static constexpr std::size_t kMaxCachedCopyBytes = std::size_t{64} << 20;

  std::mutex mutex_;
  std::shared_ptr<BufferPool> copies_;  // under mutex_; made at the first copy
  bool aborted_ = false;
  std::unordered_map<int, std::string> lost_;  // lost sources and why
  detail::Matcher<Op, Op> matcher_;            // sends are the messages
};

}  // namespace fast::runtime::engine
