#pragma once
// Context: everything a worker may use to talk, wait and read time. Worker code (collectives,
// strategies, the tensor mover) uses only this interface, so it runs unchanged on every runtime
// (threads, zmq, mpi, sim). One Context per worker; N workers may share a process.
//
// Thread-safety: a Context may be used concurrently by its worker's own activities (the main
// activity and those it spawned); never by another worker.
//
// THE CONTRACT, the same for every backend (docs/architecture.md; tests/runtime/conformance_test.cpp
// checks it on threads, sim, zmq and mpi):
//  - Bootstrap: ranks are 0..size()-1. threads and sim assign them in-process; zmq through a
//    rendezvous (process p runs workers [p*K, (p+1)*K), K = workers per process); mpi from
//    MPI_COMM_WORLD. local_size() workers share this process.
//  - now(): seconds since this process's world started on the runtime's clock: the launch of the
//    world (threads), simulated time 0 (sim), the end of the rendezvous (zmq: the same instant in
//    every process, within one round trip), the end of a barrier of every rank (mpi). Only
//    differences of now() are meaningful across processes.
//  - Send completion is LOCAL: a send's Work completes when the caller's memory may be reused; the
//    message may still be on its way (threads: once the receiver copied it; sim: once its simulated
//    transfer arrived; zmq: once copied (< 64 KiB) or released by ZeroMQ; mpi: once copied
//    (< 64 KiB) or once MPI_Isend completed).
//  - Order: messages from one worker to another under one tag are received in the order sent.
//    Messages under different tags or from different workers are unordered.
//  - A receive whose dtype or length differs from the message fails THE RECEIVER with
//    InvalidArgument naming both (its destination is unchanged); the send completes normally.
//  - Dropping the last handle of a Work: an unmatched receive is cancelled (a later message waits
//    for the next receive). A send is never recalled once handed over on a backend that cannot
//    recall it (sim, zmq): it is delivered; threads cancels a send not yet matched (its memory is
//    read in place). A matched operation under way is waited for, so memory is never touched after
//    the handle is gone. Portable code waits for its sends.
//  - Blocking waits are bounded by the operation time limit (FAST_OP_TIMEOUT): TimeoutError.
//  - Lost peers (sim: a failed host, or a worker that ended; zmq: a process dead, frozen or silent
//    for the peer timeout, failed, or ended): alive(peer) turns false and never back; receives from it fail and sends
//    to it throw PeerLost naming the worker, where it ran and why, within the peer timeout (zmq: FAST_PEER_TIMEOUT,
//    default 5 s). Messages it sent before are still delivered. A receive from any source is not failed by a loss.
//    threads cannot lose a worker: a failing worker aborts the world and the others' waits throw RemoteError. mpi loses
//    a rank whose worker failed or ended (it said so); a rank that dies ends the whole job (MPI is fail-stop).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fast/core/buffer.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/core/work.hpp"
#include "fast/runtime/network_model.hpp"
#include "fast/runtime/sync.hpp"
#include "fast/runtime/tag.hpp"

namespace fast::runtime {

class NativeCollectives;  // native_collectives.hpp
class SharedRendezvous;   // shared_rendezvous.hpp
class RemoteMemory;       // remote_memory.hpp

// What a receive does with the incoming elements.
enum class Combine : std::uint8_t {
  copy,  // dst = message
  sum,   // dst += message (f32 and f64 only)
};

// A worker lost, or one that rejoined in its place (Context::membership_events).
struct MembershipEvent {
  double at = 0;        // seconds on the observing worker's clock (Context::now)
  int worker = 0;       // the rank
  bool joined = false;  // false: lost; true: a new process took the rank back
  // A loss from before this process took a rank back in a run under way, as the process that let
  // it in told it (zmq rejoin; at: 0). Not seen here: no record is written for it, and
  // lost_since() does not count it; ever_lost() does.
  bool before_join = false;
  // A rank of a run that may grow (--max-workers) that no process held when the run started
  // (zmq): reported as lost before this process came (before_join is set too) until a process
  // takes it (an event with joined).
  bool vacant = false;
  std::string detail;  // where it ran and why (for logs and the metrics)
};

// Traffic of one worker to or from one peer since the world started. Sizes are payload bytes.
struct LinkStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_received = 0;
};

class Context {
 public:
  virtual ~Context() = default;

  // This worker's rank in [0, size()).
  virtual int rank() const = 0;
  // Number of workers in the world.
  virtual int size() const = 0;
  // Number of workers in this process (all of them under threads and sim; workers_per_process
  // under zmq). Per-process resources (compute threads, files) are sized by this, never by size().
  virtual int local_size() const { return size(); }
  // Seconds since the world started, on the runtime's clock (real or simulated).
  virtual double now() const = 0;
  // Lets `seconds` pass on the runtime's clock.
  virtual void sleep(double seconds) = 0;
  // Declares that this worker just computed `flops` floating-point operations. Real-clock
  // runtimes have already spent that time and do nothing; `sim` advances the simulated clock.
  virtual void compute(double flops) = 0;
  // Runs `work` (this worker's real computation of those flops, such as a gradient) and declares
  // `flops` as compute() does, as if work() ran at the instant of the call, before compute(flops).
  // The default does exactly that, on the calling thread. `sim` with more than one compute thread
  // (LaunchOptions::sim_threads) runs work() on a thread of its pool while the simulated execution
  // lets other actors run, and returns once both are done: the simulated times do not depend on
  // work(), so every simulated event, and every result, is the same for any number of threads.
  // With flops = 0 (work that takes no simulated time, such as an optimizer's step) `sim` lets
  // the other actors of the same simulated instant run before it waits for work(), so that their
  // own such work runs beside it.
  // Thread-safety: work() may run on another OS thread, concurrently with this worker's other
  // activities and with other workers; it must touch only memory that nothing else reads or writes
  // until the call returns (this worker's own replica and loader, read-only shared data), draw
  // no numbers from a process-wide random generator, and make no Context call. Failure: an
  // exception thrown by work() is rethrown here (before the flops are declared by the default; under
  // `sim` with a pool, after they were simulated); otherwise compute()'s errors: a worker lost
  // meanwhile throws PeerLost. Either way work() has ended when the call returns or throws.
  virtual void compute_overlapped(double flops, const std::function<void()>& work);
  // Declares that this activity just streamed `bytes` through memory on its own (bytes read plus
  // bytes written by copies and element-wise passes over tensors: a copy of B bytes streams 2B, an
  // average a = (a + b) / 2 of B-byte tensors streams 3B). Messages are not declared: the runtime
  // accounts for them. Real-clock runtimes have already spent that time and do nothing; `sim`
  // charges bytes / the host's memory_bandwidth on one of its cores (nothing when the cluster
  // gives none; docs/simulation.md, "Memory traffic").
  virtual void memory_traffic(double /*bytes*/) {}

  // Sends the viewed elements to `peer` under `tag`. The memory must stay unmodified and valid
  // until the returned Work completes (the runtime may read it in place). Sending to oneself works.
  virtual core::Work send(int peer, Tag tag, core::ConstView data) = 0;
  // Sends the elements of *data, as send does, from a buffer the runtime holds from now on and lets
  // go of once no delivery needs it: for a message formed in memory of its own (a window's
  // answer), which its sender would otherwise keep until the send completes. The Work completes
  // as send's does; *data must not change. The default sends data's view and keeps data until the
  // Work completes or is dropped; `sim` copies the elements into a receive posted before the send
  // at once (on a compute thread when the world has a pool) and lets go of data then, long before
  // the simulated transfer arrives: the receive still completes when it arrives, with the same
  // outcome as a delivery then (a receive of another dtype or length fails, its destination
  // unchanged). Failure: InvalidArgument when data is null; otherwise as send.
  virtual core::Work send_owned(int peer, Tag tag, std::shared_ptr<const core::Buffer> data);
  // Receives the message `peer` sent under `tag` into dst, which must have the message's dtype and
  // length (the receive fails with InvalidArgument otherwise). With Combine::sum, adds it into dst.
  virtual core::Work recv(int peer, Tag tag, core::MutableView dst, Combine combine = Combine::copy) = 0;
  // Receives a message of any length and dtype into `out` (resized on completion). `out` must
  // stay valid until the Work completes.
  virtual core::Work recv(int peer, Tag tag, core::Buffer& out) = 0;
  // Receives the oldest message sent to this worker under `tag` by any peer, into `out` (resized
  // on completion), and sets `source` to the sender's rank. A message sent under `tag` goes to a
  // receive posted for its own source first. out and source must stay valid until the Work
  // completes. For services that answer whoever asks (one-sided windows, parameter servers).
  virtual core::Work recv_any(Tag tag, core::Buffer& out, int& source) = 0;
  // Non-blocking receive into dst: the message's element count if one was waiting and has been
  // received, std::nullopt ("would block") otherwise.
  virtual std::optional<std::size_t> try_recv(int peer, Tag tag, core::MutableView dst,
                                              Combine combine = Combine::copy) = 0;
  // What recv_each_then hands its reduce: read-only views of the messages' elements, in peers order.
  using ReduceReceived = std::function<void(std::span<const core::ConstView> received)>;
  // Receives one message from each of `peers` under `tag`, each of `dtype` and `numel` elements,
  // then calls reduce(received) once, with views of the messages' elements in `peers` order, valid
  // during the call only: for a pass that reads every message at once (a gossip's sum) instead of
  // a copy or a sum per message into one buffer. reduce runs as a computation of no simulated
  // time, with compute_overlapped's rules (this worker's own memory and the views only, no Context
  // call). The default receives each message into a buffer of its own (a copy each, and the memory
  // of them all at once), then calls reduce; `sim` reads them where they are (receives_in_place).
  // Failure: InvalidArgument naming the sender when a message's dtype or length differs (reduce not
  // called); what the receives throw (PeerLost, TimeoutError). Every receive has ended on return.
  virtual void recv_each_then(std::span<const int> peers, Tag tag, core::DType dtype, std::size_t numel,
                              const ReduceReceived& reduce);
  // Whether recv_each_then reads the messages in place, holding no buffer per message (a caller
  // picks between it and a receive per message into one buffer by this).
  virtual bool receives_in_place() const { return false; }

  // Writes data's new contents element by element: out[i] from data[i] and scratch[i] only
  // (finish_sends_then_write). No Context call; must not throw.
  using ElementWrite = std::function<void(core::MutableView out)>;
  // Waits for `sends`, which must be every send of data's memory this worker has under way (and
  // only those), then has `write` produce data's new contents from its old ones and `scratch`
  // (data's dtype and length): for an exchange that replaces what it sent with what it computed
  // meanwhile (Communicator::neighbor_average). The default waits (core::wait_all), then calls
  // write(data) in place as a computation of no simulated time (compute_overlapped(0, ...)).
  // `sim`, when a message not yet delivered still needs data's old contents as a send completes,
  // calls write(scratch) instead, on the worker's actor during that wait, and swaps the contents
  // of data and scratch: data holds the new contents, scratch's storage the old ones for those
  // messages (scratch is left empty), and nothing is copied for them. An empty scratch lends
  // nothing: write(data) after the waits, and under sim such messages keep a copy of data.
  // Failure: InvalidArgument at once when scratch is not empty and its dtype or length differs
  // from data's (nothing waited); otherwise what the waits throw, after every send ended (an actor killed under sim
  // leaves at once), and data holds its old contents then.
  virtual void finish_sends_then_write(std::vector<core::Work>& sends, core::MutableView data, core::Buffer& scratch,
                                       const ElementWrite& write);

  // Runs fn as a concurrent activity of this worker (a thread, an actor). The Work completes when
  // fn returns; an exception thrown by fn is its error.
  virtual core::Work spawn(std::string name, std::function<void()> fn) = 0;

  // The runtime's own lock and condition variable.
  virtual std::unique_ptr<Mutex> make_mutex() = 0;
  virtual std::unique_ptr<CondVar> make_condvar() = 0;

  // Traffic between this worker and `peer` (send side counts when send is called).
  virtual LinkStats link_stats(int peer) const = 0;
  // Sum over the other workers of link_stats(peer).bytes_sent (what this worker sends itself, e.g.
  // to a co-located ps server, crosses no link and is not counted, as in the summary).
  std::uint64_t bytes_sent() const;

  // Name of the runtime ("threads", "sim", ...).
  virtual std::string runtime_name() const = 0;
  // The operation time limit of this world's blocking waits, in seconds on now()'s clock
  // (LaunchOptions::op_timeout_seconds, else FAST_OP_TIMEOUT): for code that waits in slices of
  // its own (Work::wait(seconds)) and must still end a wait at the runtime's limit.
  virtual double operation_time_limit() const;

  // Lost peers (see the contract above). alive(peer) is false only once this runtime knows the
  // peer is lost. Runtimes that cannot lose a worker (threads: a failing worker aborts the whole
  // world instead) keep the defaults: always alive. A lost peer stays lost, except under zmq when
  // a new process takes its place in an asynchronous run (rejoin, docs/faults.md): alive(peer) is
  // true again from then on, and what the old process had sent but nobody had received is dropped.
  virtual bool alive(int /*peer*/) const { return true; }
  // Throws PeerLost naming the peer, where it ran, when and why it was lost, if it is lost.
  virtual void ensure_alive(int /*peer*/) const {}
  // Waits until every peer is known alive or lost: when it returns, every peer that died or froze
  // before the call is reported lost by alive(). For agreeing on the survivors before a closing
  // collective (Communicator::exclude_lost). zmq waits until each peer is heard from again or
  // declared lost (up to the peer timeout); sim and threads return at once (sim loses workers at
  // known instants, threads loses none).
  virtual void settle_lost_peers() {}

  // Whether this worker joins a run already under way, in place of a lost one (zmq rejoin): the
  // others are past their set-up, so this worker must not run set-up collectives with them
  // (Communicator's joining mode) and takes its model from a live peer. False everywhere else.
  virtual bool joins_run_under_way() const { return false; }
  // The workers this runtime saw lost or rejoin, in the order seen (at: seconds on this
  // worker's clock, now()). Empty for runtimes without losses. Thread-safe.
  virtual std::vector<MembershipEvent> membership_events() const { return {}; }

  // The runtime's own world-wide collectives (native_collectives.hpp), or null when it offers none
  // or the run chose FAST's (LaunchOptions::collectives = "fast"). Owned by the runtime; valid
  // while the worker runs. mpi offers them; threads, sim and zmq do not.
  virtual NativeCollectives* native_collectives() { return nullptr; }

  // A rendezvous in one address space shared by every worker of the world (shared_rendezvous.hpp),
  // or null: threads offers it; sim, zmq and mpi do not (their workers' memory is not shared,
  // even where some of them share a process). Owned by the runtime; valid while the worker runs.
  // Every worker of a world must see the same answer (the collectives choose their path by it): a
  // Context that wraps another forwards it.
  virtual SharedRendezvous* shared_rendezvous() { return nullptr; }

  // One-sided access to memory other workers expose (remote_memory.hpp), or null: mpi offers it
  // on MPI RMA unless the run chose FAST's service (LaunchOptions::windows = "service"); threads,
  // sim and zmq do not. Owned by the runtime; valid while the worker runs. Every worker of a world
  // sees the same answer; a Context that wraps another forwards it.
  virtual RemoteMemory* remote_memory() { return nullptr; }

  // What this runtime knows of its network (network_model.hpp), the same on every worker, or
  // nothing: sim derives it from its cluster (the slowest of the routes it samples); the real
  // runtimes know nothing and the collectives assume a configured or default model.
  virtual std::optional<NetworkModel> network_model() const { return std::nullopt; }

  // What a message between workers a and b costs, where the runtime knows it and it is not
  // network_model()'s fixed default: zmq's workers of two processes that exchange their data through
  // anything but shared memory (TCP streams, ZeroMQ's sockets), whose messages cost tens of
  // microseconds each. The same on both workers (derived from what every process of the world was
  // told at the rendezvous, never measured). Only for choices that cannot change a result, so that
  // a seed still gives the same bits on every runtime: the all-reduce of a group of two, whose
  // algorithms all compute a + b once per element (docs/collectives.md). Nothing: the choice uses
  // network_model() or the default.
  virtual std::optional<NetworkModel> pair_network_model(int /*a*/, int /*b*/) const { return std::nullopt; }
};

// Checks peer is a valid rank of ctx, naming `what` in the error.
void check_peer(const Context& ctx, int peer, const char* what);

// Whether `peer` was lost at some point since `since` (seconds of ctx.now()): it is not alive now,
// or its loss was seen at or after `since` and a new process has taken the rank back since (zmq
// rejoin). An operation issued at `since` that failed with PeerLost failed because of that loss
// when this is true (drop it, as for a lost peer), and for another reason when it is false.
bool lost_since(const Context& ctx, int peer, double since);

// Whether `peer` was ever lost in this run: it is not alive now, or a loss of it was seen here or,
// for a process that took a rank back in a run under way, before it came (MembershipEvent::
// before_join). Every process that saw the same losses agrees on it, newcomers included (what a
// rank held for all went with the process that was lost: runtime::successor passes it over).
bool ever_lost(const Context& ctx, int peer);

}  // namespace fast::runtime
