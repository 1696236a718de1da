#pragma once
// Collectives over a Context's point-to-point messages: ring all-reduce (chunked and pipelined),
// broadcast, all-gather and barrier. They work on every runtime because they use only Context.
// Where the Context offers native collectives (Context::native_collectives: the mpi runtime) and
// the group is the whole world, allreduce, broadcast, allgather and barrier call those instead
// (the same results up to the order of floating-point additions). Where it offers a shared
// address space (Context::shared_rendezvous: threads), an all-reduce over the whole world runs
// its algorithm's additions through it instead of messages, with the same results bit for bit
// (CommunicatorOptions::shared_memory).
//
// Contract (as in MPI): every worker of the world calls the same collectives in the same order
// with compatible arguments (same length, dtype, root). Each call takes the next sequence number
// of this Communicator, which goes into the tag (see collective/tags below), so collectives never
// match each other's messages. One Communicator per worker; its methods may be called from
// several activities of that worker only if all workers issue them in the same order.
//
// Group. The collectives run among the group's members, at first every worker. After
// exclude_lost() the members are the workers still alive then (Context::alive): asynchronous
// strategies call it when they finish, so that their closing collectives (window close, the
// final representative and evaluation) run among the survivors of lost hosts. All members must
// call exclude_lost() at the same point of their collective sequence and see the same lost set
// (exclude_lost() first settles the runtime's view: Context::settle_lost_peers);
// one that still counts a lost worker as a member gets PeerLost from its next collective. Ring
// neighbours, broadcast chains, all-gather blocks and averages are over the members, in rank
// order. neighbor_average takes explicit neighbour lists and ignores the group. CodecAllreduce
// runs over the members too; ChocoGossip (dpsgd with a codec) over the neighbour lists it was given.
//
// Tags: make_tag(TagKind::collective, sequence, detail), detail = step * pieces + piece for the
// ring algorithms, piece for broadcast, round for the barrier, 0 for neighbor_average (one message
// per directed edge).

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fast/collective/allreduce_algorithm.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/core/work.hpp"
#include "fast/runtime/context.hpp"

namespace fast::collective {

enum class ReduceOp : std::uint8_t { sum, avg };

struct AllreduceOptions {
  ReduceOp op = ReduceOp::sum;
  // Largest message of the pipeline, in bytes. Each ring segment is cut into pieces of at most
  // this size, so a piece is forwarded while the next is still arriving. 4 MiB measured best for
  // the threads runtime (docs/benchmarks.md): in one process a piece costs a wake-up and there is
  // no link latency to hide.
  std::size_t chunk_bytes = std::size_t{4} << 20;
  // automatic: the Communicator's allreduce_algorithm (CommunicatorOptions), itself automatic by
  // default: choose_allreduce by the message size, the group size and the network.
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::automatic;
};

struct CommunicatorOptions {
  // The all-reduce algorithm when a call leaves it automatic (allreduce_algorithm = ... in
  // `fast train`); automatic chooses per call (fast/collective/allreduce_algorithm.hpp).
  AllreduceAlgorithm allreduce_algorithm = AllreduceAlgorithm::automatic;
  // The network the automatic choice assumes: the runtime's (Context::network_model: sim reads its
  // cluster), else default_network(), with these fields replaced where set (seconds, bytes/s;
  // `network_latency`, `network_bandwidth` in `fast train`). Must be the same on every worker.
  // Neither set, a group of two whose runtime knows what a message between them costs
  // (Context::pair_network_model: zmq processes without shared memory between them) chooses by
  // that instead: every algorithm gives a group of two the same bits.
  std::optional<double> latency_seconds;
  std::optional<double> bandwidth_bytes_per_second;
  // Where the runtime offers a shared address space (Context::shared_rendezvous: threads), an
  // all-reduce among the whole world computes its algorithm's sums in place, reading and writing
  // the other workers' memory directly: the same additions in the same order as the algorithm's
  // messages, so the same bits (docs/collectives.md, "All-reduce in shared memory"). false:
  // always messages. Must be the same on every worker.
  bool shared_memory = true;
  // Elastic groups (docs/faults.md, "Elastic synchronous training"): every collective runs on
  // messages (never native collectives or shared memory), and each of its waits fails with
  // PeerLost as soon as ANY member of the group is lost, not only the peer it waits for; the
  // survivors then agree on a new group (collective/membership.hpp) and call regroup(). For
  // runtimes that lose workers (zmq, sim). Must be the same on every worker.
  bool elastic = false;
};

namespace detail {
class MemberWatch;  // member_watch.hpp
}

class Communicator {
 public:
  explicit Communicator(runtime::Context& ctx, CommunicatorOptions options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // The Context the collectives use: the worker's own, or in an elastic group the watch around it
  // (CommunicatorOptions::elastic), which behaves the same but for its waits.
  runtime::Context& context() const noexcept { return *ctx_; }
  // The worker's own Context, never watched (the membership agreement talks through it).
  runtime::Context& own_context() const noexcept { return own_; }
  bool elastic() const noexcept { return watch_ != nullptr; }
  // From now on the collectives run on a watch of the group, as in an elastic group: each wait
  // fails with PeerLost as soon as any member is lost, and the collectives run on messages. For the
  // end of an asynchronous run, whose survivors then agree on the group as an elastic group's do
  // (training/run_end.hpp). elastic() is true from then on. Idempotent. The worker's main
  // activity, between collectives (no collective under way).
  void watch_members();
  // Elastic groups, a testing aid (fault injection, docs/faults.md): the next message a collective
  // sends waits until it left, then calls `then` once (which may end the process). InvalidUsage
  // without an elastic group.
  void after_next_send(std::function<void()> then);
  // This worker's rank and the number of workers in the world (not in the group).
  int rank() const { return ctx_->rank(); }
  int size() const { return ctx_->size(); }

  // The members of the group, in rank order (every rank until exclude_lost() drops some).
  const std::vector<int>& members() const noexcept { return members_; }
  // Number of members; this worker's index among them.
  int group_size() const noexcept { return static_cast<int>(members_.size()); }
  int group_index() const noexcept { return index_; }
  // Drops the workers the runtime reports lost from the group (see the contract above).
  // InvalidUsage if this worker itself is lost.
  void exclude_lost();
  // Elastic groups: the group becomes `members` (rank order, this worker among them) and the next
  // collective takes sequence number `next_sequence`, on every member alike: what the survivors
  // agreed on (collective/membership.hpp). InvalidUsage when this worker is not in `members`.
  // `formed_at` (own_context().now() seconds, at most now; default now): losses seen since then
  // count for lost_since_formed(). A join passes the time its admission began, so a member lost
  // during it stays lost even when a new process has taken its rank back before the next collective.
  void regroup(std::vector<int> members, std::uint32_t next_sequence, std::optional<double> formed_at = std::nullopt);
  // The sequence number the next collective will take.
  std::uint32_t next_sequence_number() const noexcept { return sequence_.load(std::memory_order_relaxed); }
  // Whether member `rank` was lost since the group was formed (the construction or the last
  // regroup(), on this worker's clock): not alive now, or lost and taken back by a new process
  // since (runtime::lost_since). The new process is not the member the group had.
  bool lost_since_formed(int rank) const;

  // In place: data = op over all members of data (f32 or f64; avg divides by group_size()).
  // Blocking.
  void allreduce(core::MutableView data, const AllreduceOptions& options = {});
  // As allreduce, run as a concurrent activity; data must stay valid until the Work completes.
  core::Work allreduce_async(core::MutableView data, AllreduceOptions options = {});
  // data on every member = data of `root` (a member's rank; any dtype). A binomial tree or a
  // pipelined chain, whichever the network model predicts faster (docs/collectives.md). Blocking.
  void broadcast(core::MutableView data, int root, std::size_t chunk_bytes = std::size_t{256} << 10);
  // out = concatenation over the members, in rank order, of each one's `in`
  // (out.numel() == in.numel() * group_size()). Bruck's algorithm or the ring, whichever the
  // network model predicts faster.
  void allgather(core::ConstView in, core::MutableView out);
  // Each member's `in` (any length, the same dtype everywhere, at least one element) arrives at
  // `root` (a member's rank): there it returns one Buffer per member, in member order (its own
  // copied); elsewhere an empty vector. Direct messages to the root (group_size() - 1 received
  // there). Blocking. For results that only some members read (run totals, which grow with the
  // world: an allgather would give every member all of them).
  std::vector<core::Buffer> gather(core::ConstView in, int root);
  // Personalised exchange: `in` holds group_size() equal blocks, block i for the i-th member;
  // `out` (same length and dtype) receives block i from the i-th member, its own block copied.
  // Each pair exchanges directly (group_size() - 1 messages sent per member). Blocking.
  void alltoall(core::ConstView in, core::MutableView out);
  // The network the automatic all-reduce choice assumes (see CommunicatorOptions::network).
  const runtime::NetworkModel& network() const noexcept { return network_; }
  // The algorithm allreduce() runs for `bytes` bytes among the current group with these options
  // ("native" calls are not algorithms of this list: see allreduce_counts).
  AllreduceAlgorithm resolve(std::size_t bytes, const AllreduceOptions& options = {}) const;
  // How many all-reduces ran with each algorithm so far, by name (name_of; "native" for the
  // runtime's own), names with a count of 0 left out. Thread-safe.
  std::vector<std::pair<std::string, std::uint64_t>> allreduce_counts() const;

  // Returns once every member has entered the barrier.
  void barrier();

  // Weighted averaging with neighbours (gossip), f32 data, in place:
  //   data <- self_weight * data + sum_k in_weights[k] * (data of worker in_neighbors[k])
  // This worker's data (before the update) is sent to every worker of out_neighbors. Collective:
  // every worker calls it at the same point, with lists that agree (u lists v as out-neighbour
  // exactly when v lists u as in-neighbour). Memory, whatever the degree: one scratch copy of data
  // when every in-weight is the same, else two; freed on return. `scratch`, when not empty, is
  // the first of them, lent by the caller (data's length, not overlapping it; InvalidArgument
  // otherwise), its contents unspecified afterwards; under sim a message still to be delivered
  // then keeps a copy of data (Context::finish_sends_then_write lends only a buffer it may keep).
  void neighbor_average(core::MutableView data, std::span<const int> in_neighbors, std::span<const double> in_weights,
                        std::span<const int> out_neighbors, double self_weight, std::span<float> scratch = {});

  // Takes the next sequence number for a collective built outside this class (CodecAllreduce,
  // ChocoGossip), so its tags make_tag(TagKind::collective, sequence, detail) never meet another
  // collective's. Same contract as the collectives: every worker calls it at the same point.
  std::uint32_t reserve_sequence() { return next_sequence(); }

  // Joining mode: a worker that replaces a lost one in a run under way (Context::
  // joins_run_under_way) starts in it. The others are past their set-up collectives, so this
  // worker must not run them: set-up code that can stand in for one locally (Window's shapes,
  // the trainer's process placement) calls skip_collective(), which takes the collective's
  // sequence number without any message, so the later collectives (the closing ones of an
  // asynchronous run) meet the others'. Every other collective throws InvalidUsage while joining.
  // end_join() ends the mode once the set-up is over. Same thread as the collectives.
  bool joining() const noexcept { return joining_; }
  std::uint32_t skip_collective() { return sequence_.fetch_add(1, std::memory_order_relaxed); }
  void end_join() noexcept { joining_ = false; }

 private:
  std::uint32_t next_sequence() {
    if (joining_) not_while_joining();
    return sequence_.fetch_add(1, std::memory_order_relaxed);
  }
  [[noreturn]] void not_while_joining() const;
  // The context's native collectives when it offers them and the group is the whole world; null otherwise.
  runtime::NativeCollectives* native() const;
  void native_allreduce(runtime::NativeCollectives& native, std::uint64_t ticket, core::MutableView data, ReduceOp op);
  // The context's shared rendezvous when this all-reduce should use it (see
  // CommunicatorOptions::shared_memory); null otherwise.
  runtime::SharedRendezvous* shared_for(const core::MutableView& data, const AllreduceOptions& options) const;
  void shared_allreduce(runtime::SharedRendezvous& rendezvous, std::uint64_t ticket, core::MutableView data,
                        const AllreduceOptions& options);
  void ring_allreduce(core::MutableView data, const AllreduceOptions& options, std::uint32_t sequence);
  // Runs the resolved algorithm (every one but the ring in allreduce_algorithms.cpp).
  void run_allreduce(core::MutableView data, const AllreduceOptions& options, std::uint32_t sequence);
  // Scratch space for one call of the algorithms that receive into a buffer; calls may overlap
  // (allreduce_async), so each borrows its own from the pool and returns it when the lease ends.
  class ScratchLease;

  runtime::Context& own_;                       // the worker's Context
  std::unique_ptr<detail::MemberWatch> watch_;  // elastic groups only: own_ watched
  runtime::Context* ctx_;                       // &own_, or watch_ (watch_members())
  std::atomic<std::uint32_t> sequence_{0};
  bool joining_ = false;
  runtime::NetworkModel network_;  // what the automatic choice assumes
  bool network_configured_ = false;  // latency or bandwidth set in CommunicatorOptions
  AllreduceAlgorithm default_algorithm_ = AllreduceAlgorithm::automatic;
  bool shared_memory_ = true;  // CommunicatorOptions::shared_memory
  // all-reduces run, by algorithm (index: AllreduceAlgorithm; automatic's slot stays 0), and native
  std::array<std::atomic<std::uint64_t>, 5> counts_{};
  std::atomic<std::uint64_t> native_count_{0};
  std::mutex scratch_mutex_;
  std::vector<core::Buffer> scratch_pool_;
  std::vector<int> members_;  // the group, in rank order
  int index_ = 0;             // this worker's index in members_
  double formed_at_ = 0;      // own_.now() when members_ was last set (lost_since_formed)
};

}  // namespace fast::collective
