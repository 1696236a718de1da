#pragma once
// LocalWorld: the workers of one process, run as threads, with their mailboxes and spawned
// activities. The `threads` runtime is one LocalWorld holding every rank; the `zmq` runtime runs
// one per process holding that process's ranks and gives it a Transport for the others.
//
// Thread-safety: deliver_remote and fail_source may be called from the transport's thread while
// run() is under way; run() itself is called once.

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../interrupt_slot.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/runtime/launcher.hpp"
#include "mailbox.hpp"
#include "shared_board.hpp"
#include "threads_context.hpp"
#include "world_state.hpp"

namespace fast::runtime::engine {

class LocalWorld {
 public:
  // Until it is destroyed, runtime::interrupt_launches(message) aborts it (abort_all).
  LocalWorld(WorldShape shape, double op_timeout_seconds, std::string runtime_name = "threads",
             Transport* transport = nullptr);
  LocalWorld(const LocalWorld&) = delete;
  LocalWorld& operator=(const LocalWorld&) = delete;

  WorldState& state() noexcept { return state_; }

  // Runs fn on every local rank (the first on the calling thread), joins them and every activity
  // they spawned, and returns each local worker's error (null where it returned), by local index.
  // The first worker error aborts the local world: the others' waits throw RemoteError.
  // on_failure(rank, reason) is called on the failing worker's thread, once per failed worker
  // (the zmq runtime tells the other processes).
  using FailureFn = std::function<void(int rank, const std::string& reason)>;
  std::vector<std::exception_ptr> run(const WorkerFn& fn, const FailureFn& on_failure = nullptr);

  // A message from remote worker src to local worker dst arrived: `data` stays valid as long as
  // `owner` lives. Matched with a posted receive or queued, in arrival order per (src, tag);
  // copy_when_queued: a queued message is copied and `owner` released at once (memory that its
  // transport wants back soon, such as a shared-memory ring's).
  void deliver_remote(int src, int dst, Tag tag, core::ConstView data, std::shared_ptr<const void> owner,
                      bool copy_when_queued = false);
  // Ends the local run: every wait of a local worker throws RemoteError(message).
  void abort_all(const std::string& message);
  // Remote worker src is lost: receives from it fail with PeerLost(reason) (Mailbox::fail_source).
  void fail_source(int src, const std::string& reason);
  // Remote worker src rejoined (Mailbox::revive_source).
  void revive_source(int src);

 private:
  Mailbox& mailbox(int rank) { return *mailboxes_[static_cast<std::size_t>(rank - state_.first_rank())]; }

  WorldState state_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
  ActivityList activities_;
  std::unique_ptr<SharedBoard> board_;  // when every worker of the world is local (no transport)
  std::optional<InterruptSlot> interrupt_slot_;  // last: made after, gone before what abort_all touches
};

}  // namespace fast::runtime::engine
