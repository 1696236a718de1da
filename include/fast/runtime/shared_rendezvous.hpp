#pragma once
// SharedRendezvous: an optional capability of a Context whose workers all live in one address space
// (Context::shared_rendezvous: the threads runtime). Workers publish a pointer to memory of their
// own, wait until every worker of the world has published, read or write each other's memory
// directly, then wait until every worker is done with it. The collectives run their all-reduces
// through it (fast/collective/communicator.hpp): no message is handed between threads, and each
// element is read and written once per worker.
//
// One use, by every worker of the world, with the same ticket number:
//   t = reserve();                 // on the issuing thread, in the order of the collectives
//   void* const* all = meet(t, &mine);   // all[r]: what worker r published
//   ... read all[r]'s memory; write only the parts this worker owns by agreement ...
//   count_as_sent(peer, bytes, messages);   // optional: the traffic this stands in for
//   leave(t);                      // returns once every worker called leave(t)
// Between meet and leave a worker's published memory must stay valid and must not be changed by
// its owner except through the agreed parts. After leave returns nobody touches it any more.
//
// Order: every worker issues its uses in the same order, and its k-th reserve() is everyone's
// k-th use. A worker's uses run in ticket order: meet(t) first waits until this worker's
// leave(t - 1) returned, so several activities of one worker may hold tickets at once.
//
// Thread-safety: any activity of the worker that owns this object. Failure: a wait that outlasts
// the operation time limit throws TimeoutError; a world that aborted (a worker failed) makes
// every wait throw RemoteError; afterwards the rendezvous is unusable (the run is over).

#include <cstdint>

namespace fast::runtime {

class SharedRendezvous {
 public:
  virtual ~SharedRendezvous() = default;
  // The next ticket of this worker (0, 1, 2, ...).
  virtual std::uint64_t reserve() = 0;
  // Publishes `mine` for ticket t and waits until every worker published for t. Returns the
  // published pointers by rank (size(): the world size), valid until leave(t).
  virtual void* const* meet(std::uint64_t ticket, void* mine) = 0;
  // Waits until every worker called leave(t).
  virtual void leave(std::uint64_t ticket) = 0;
  // Counts `messages` messages of `bytes` bytes in all as sent from this worker to `peer` (a rank)
  // in both workers' link statistics (Context::link_stats), as if they had been sent: a collective
  // that stands in for messages reports the traffic its message path would have (bytes on the
  // wire under the other runtimes). Between meet(t) and leave(t) only.
  virtual void count_as_sent(int peer, std::uint64_t bytes, std::uint64_t messages) = 0;
};

}  // namespace fast::runtime
