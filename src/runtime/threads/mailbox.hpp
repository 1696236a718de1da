#pragma once
// The inbox of one rank in the threads runtime: unmatched sends and receives addressed to it,
// keyed by (source rank, tag) and matched in FIFO order. A receive from any source matches the
// oldest queued send with its tag, whatever its source; a new send goes to a receive posted for its
// own source first, then to the oldest receive from any source. Thread-safe.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <mutex>
#include <unordered_map>

#include "op.hpp"

namespace fast::runtime::threads {

class Mailbox {
 public:
  // Returns the matched receive (both now marked matched; the caller transfers) or null after
  // queueing the send. Throws RemoteError when the mailbox was aborted.
  std::shared_ptr<Op> post_send(const std::shared_ptr<Op>& send, const WorldState& world);
  // Same for a receive (its src may be Op::kAnySource): returns the matched send or null after
  // queueing. A matched any-source receive gets the sender's rank in src.
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

 private:
  struct Key {
    int src;
    Tag tag;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<std::uint64_t>()(k.tag * 1000003u + static_cast<std::uint64_t>(k.src));
    }
  };
  using Queues = std::unordered_map<Key, std::deque<std::shared_ptr<Op>>, KeyHash>;

  std::shared_ptr<Op> match(Queues& mine, Queues& theirs, const std::shared_ptr<Op>& op, const WorldState& world);
  std::shared_ptr<Op> match_any_source(const std::shared_ptr<Op>& recv, const WorldState& world);
  static std::shared_ptr<Op> pop_front(Queues& queues, Queues::iterator it);

  std::mutex mutex_;
  bool aborted_ = false;
  std::unordered_map<int, std::string> lost_;  // lost sources and why
  std::uint64_t arrivals_ = 0;  // order of queued sends, for any-source matching
  Queues sends_;
  Queues recvs_;
  Queues any_recvs_;  // receives from any source, keyed by {kAnySource, tag}
};

}  // namespace fast::runtime::threads
