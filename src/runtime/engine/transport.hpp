#pragma once
// Transport: how the in-process engine of this folder reaches workers of OTHER processes. The
// `threads` runtime has none (every worker is local); the `zmq` and `mpi` runtimes plug theirs in
// here, so all three share the mailboxes, the matcher, the Work handles and the activities of this
// folder, and differ only in what crosses a process boundary.
//
// Incoming messages are handed to the engine by the transport through LocalWorld::deliver_remote
// (local_world.hpp). Thread-safety: every method may be called from any worker thread at once.

#include "fast/core/tensor_view.hpp"
#include "fast/core/work.hpp"
#include "fast/runtime/context.hpp"
#include "fast/runtime/native_collectives.hpp"
#include "fast/runtime/tag.hpp"

namespace fast::runtime::engine {

struct LinkCounters;  // op.hpp

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends data from local worker `src` to remote worker `dst`. The Work completes when the
  // caller's memory may be reused (the message may still be on its way): at once when the
  // transport copied it, or when the socket layer released it. Throws PeerLost when dst is lost.
  virtual core::Work send(int src, int dst, Tag tag, core::ConstView data) = 0;
  // False once dst is known lost (dead, frozen, failed or gone); true again only if a new process
  // took its rank back (zmq rejoin).
  virtual bool alive(int rank) const = 0;
  // Throws PeerLost naming the worker, its process and host, and why, when it is lost.
  virtual void ensure_alive(int rank) const = 0;
  // An activity of this process is about to wait (for a message, a send's completion or its turn)
  // or looked for a message of another process and found none (try_recv): a transport that polls
  // lazily at times (mpi, inside a native collective) polls now. Called that often: must cost no
  // more than an atomic operation when there is nothing to do.
  virtual void progress_wanted() {}
  // Progress in the waiting thread, as MPI's progress engine does it: a transport whose messages can
  // be delivered by the thread that waits for them (the zmq runtime's shared-memory rings) says so
  // with polls_in_caller(). A waiter then calls poll() in a bounded loop (poll_budget() seconds)
  // until what it waits for is there; poll() delivers what has arrived (a few atomic reads when
  // nothing has). A waiter that must block after that calls sleep_begin() before it blocks and
  // sleep_end() after: while no thread of the process blocks, the transport may leave its own
  // delivery threads asleep (the next waiter polls anyway), and sleep_begin() hands back to them.
  // spin_pays(): every worker of this host has a core, so a waiter may spin (pause) between polls
  // rather than yield its core. Every method may be called from any worker thread at once.
  // receiving(): a message is partly read by poll() (its rest is on its way): a waiter past its
  // budget polls on rather than sleep.
  virtual bool polls_in_caller() const { return false; }
  virtual bool receiving() const { return false; }
  virtual void poll() {}
  virtual void sleep_begin() {}
  virtual void sleep_end() {}
  virtual bool spin_pays() const { return false; }
  virtual double poll_budget() const { return 0; }
  // Context::settle_lost_peers for the workers of other processes.
  virtual void settle_lost_peers() = 0;
  // Context::membership_events: losses and rejoins seen so far (at: WorldState::now()).
  virtual std::vector<MembershipEvent> membership_events() const { return {}; }
  // Context::native_collectives for the workers of this process (null: none).
  virtual NativeCollectives* native_collectives() { return nullptr; }
  // Context::remote_memory for the worker of this process whose per-peer counters are `counters`
  // (where its one-sided traffic is counted), or null: none.
  virtual RemoteMemory* remote_memory(LinkCounters* /*counters*/) { return nullptr; }
  // Context::pair_network_model for workers a and b, at least one of them of another process.
  virtual std::optional<NetworkModel> pair_network_model(int /*a*/, int /*b*/) const { return std::nullopt; }
};

}  // namespace fast::runtime::engine
