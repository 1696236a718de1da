#pragma once
// The server side of strategy `ps` (include/fast/strategy/ps.hpp states the protocol and the
// update rules): one PsServer per shard, run as an activity of the rank hosting the shard.

#include <array>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include "fast/wire/requests.hpp"

#include "fast/collective/window.hpp"
#include "fast/compress/codec.hpp"
#include "fast/compress/delta_link.hpp"
#include "fast/compress/meter.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/saved_state.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/runtime/context.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/strategy/ps.hpp"

namespace fast::strategy::ps_protocol {

// Tag layout (see ps.hpp): make_tag(TagKind::strategy, kSequenceBase | shard, kind | generation << 2).
inline constexpr std::uint32_t kSequenceBase = 0x50530000;  // "PS"
inline constexpr std::uint32_t kMaxShards = 0x10000;        // the shard fills the low 16 bits
inline constexpr std::uint32_t kRequest = 0;                // header, worker -> server, recv_any
inline constexpr std::uint32_t kPayload = 1;                // gradient slice, worker -> server
inline constexpr std::uint32_t kReply = 2;                  // shard or acknowledgement, server -> worker
inline constexpr std::uint32_t kClosed = 3;                 // async / ssp: the server stopped, server -> worker

// generation: the placement of the servers (0 at the start; an elastic group places them again
// after every change of its members, so that nothing of an earlier placement meets a later one).
// It wraps at 2^22 placements.
inline runtime::Tag tag(int shard, std::uint32_t kind, std::uint32_t generation = 0) {
  return runtime::make_tag(runtime::TagKind::strategy, kSequenceBase | static_cast<std::uint32_t>(shard),
                           (kind | generation << 2) & runtime::kMaxTagDetail);
}

// An elastic group's reply (start_elastic), in floats: the shard, each optimizer state buffer's
// slice, then the optimizer's step count as the bits of an int64 in two floats.
inline constexpr std::size_t kStepCountFloats = sizeof(std::int64_t) / sizeof(float);
inline std::size_t elastic_reply_floats(std::size_t shard, std::size_t state_buffers) {
  return shard * (1 + state_buffers) + kStepCountFloats;
}

// Request header: wire::PsRequest (include/fast/wire/requests.hpp), sent as its i64 words.
using Request = wire::PsRequest;
inline constexpr std::size_t kHeaderLen = Request::kWords;
using Header = std::array<std::int64_t, kHeaderLen>;
// Acknowledgement (async, ssp): {pushes counted from this worker, smallest push count, the window
// version of the host's slot when it was sent}.
inline constexpr std::size_t kAckLen = 3;
using Ack = std::array<std::int64_t, kAckLen>;

}  // namespace fast::strategy::ps_protocol

namespace fast::strategy {

class PsServer {
 public:
  // The shard, starting from `initial` (the host's shard of its initial parameters), and an optimizer
  // for it. memory: where the shard lives (its range of the host's window slot, which the window
  // exposes; not owned; `initial` is copied there unless it is that memory), or empty: the server
  // keeps its own copy (an elastic group, which opens no window).
  // codec: compress::make_codec spec of pushed gradients (decoded here) and, in sync mode, of the
  // replies (one compress::DeltaSender per worker); "none": as is. meter counts the encodes; layout
  // (may be null) is the shard's, for shape-aware codecs.
  PsServer(runtime::Context& ctx, PsMode mode, std::int64_t staleness, int shard, std::span<const float> initial,
           std::span<float> memory, const optim::OptimizerOptions& optimizer, const std::string& codec = "none",
           compress::CompressionMeter* meter = nullptr, const core::Layout* layout = nullptr,
           std::uint32_t generation = 0);
  // Ends the replies under way before the buffers they read (reply_, reply_payloads_, acks_) go:
  // a reply not yet matched is cancelled, one matched is waited for (its receiver copies it).
  ~PsServer();
  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;

  // The shard's memory (its range of the window slot, or its own copy). Touched only under the
  // window's Local guard once attach()ed.
  std::span<float> exposed() noexcept { return params_; }
  // Bytes of the shard and its optimizer's state (PsStrategy::state_bytes).
  std::size_t state_bytes() const noexcept {
    return (params_.size() + optimizer_->state_buffers() * optimizer_->numel()) * sizeof(float);
  }
  // The shard's optimizer, for checkpoints (PsStrategy::save_state / restore_state): only while the
  // server applies nothing (after run() returned, or before any worker pushed), under the window's
  // Local guard.
  optim::Optimizer& optimizer() noexcept { return *optimizer_; }
  // Checkpoints. sync: the rounds closed (for DGC's reply density) and, with a codec, the shard
  // (the workers hold it only as decoded) and each worker's reply link (reference and codec
  // stream), as "<prefix>.rounds", "<prefix>.shard" and "<prefix>.reply.<w>"; async, ssp:
  // nothing (their final pull is exact). Only under the window's Local guard while no round
  // closes: before any push, after run(), or between two lockstep steps (a round's replies are
  // encoded under that guard). restore takes the shard from `shard` (the worker's saved slice)
  // where nothing else holds it; IoError naming `source` for a missing or malformed value (the
  // links before it are restored then: the caller stops).
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source,
               std::span<const float> shard);
  // The window exposing exposed(); must outlive run(). Needed but in an elastic group
  // (start_elastic), which opens no window: its members may be fewer than the world.
  void attach(collective::Window& window) noexcept { window_ = &window; }
  // sync with a codec that has a keep ratio (DGC): density(r) is the keep ratio of the pushes of
  // round r (0-based). The replies of that round then keep workers x ceil(density x n) of the n
  // elements (at most all), so the new shard's difference - the sparse average of the round, with
  // at most that many nonzeros - reaches the workers whole. Before run().
  void set_reply_density(std::function<double(std::int64_t round)> density) { reply_density_ = std::move(density); }
  // sync: combine a round's gradients with a robust rule instead of their mean (Aggregate over all
  // N workers, a non-finite push counting as a gradient of NaNs). Before run().
  void set_aggregate(const Aggregate& aggregate) { aggregate_ = aggregate; }
  // async / ssp: apply each gradient with its pushed learning rate divided by its version lag (at
  // least 1; StrategyOptions::lr_staleness "inverse"). Before run().
  void set_lr_by_lag(bool on) noexcept { lr_by_lag_ = on; }
  // Elastic sync (ps.hpp, "Elastic groups"), before run(): the rounds start at push count `clock`
  // for every worker, the workers outside `members` count as done, and every reply carries the
  // shard's optimizer state after the round besides its values (ps_protocol::elastic_reply_floats),
  // so that every worker holds what a new server of the shard needs.
  void start_elastic(std::int64_t clock, std::span<const int> members);
  // async / ssp, before run(): this server takes over a shard whose host was lost (ps.hpp, "A lost
  // server"). A worker that finished before it learnt of the move counts as done by its flag, the
  // float at `flag_offset` of its window slot (non-zero once it finished): the server reads every
  // unfinished worker's flag when it starts and whenever no request came for a second, and takes a
  // `done` request from a worker it already counted as done.
  void take_over(std::size_t flag_offset);
  // The server loop: serves requests until every worker sent `done`, or a stop request from its
  // own rank arrives. Throws on a protocol violation or when the world fails. async / ssp: a
  // worker the runtime reports lost (Context::alive) counts as done; its unfinished request is
  // dropped. A `join` from a worker (a new process in a lost one's place) drops what the server
  // kept of the old process and counts the newcomer's pushes from the smallest push count of the
  // other unfinished workers, which it acknowledges as {that count, smallest push count, version}.
  // async / ssp: once every worker is done, the server sends `closed` (kClosed, one i64: the slot's
  // version) to every live worker, which reads the final shard after it. After a stop request the
  // replies still under way are not waited for here: the destructor ends them.
  void run();

  // Thread-safe (the statistics' mutex).
  StalenessStats staleness() const;
  std::int64_t max_clock_lag() const;

 private:
  void on_push(int src, const ps_protocol::Request& request);
  void on_sync_push(int src, const ps_protocol::Request& request);
  void receive_gradient(int src, std::vector<float>& into);
  bool sums_at_turn() const;  // sync: gradients received when the sum reaches them (on_sync_push)
  std::vector<float>& round_gradient(std::size_t worker);  // sync: round_grads_[worker], sized
  void sum_in_rank_order();
  void on_done(int src);
  void on_join(int src);
  void close_sync_round();
  void copy_reply();    // sync: under the window's Local guard
  void send_replies();  // sync: under the window's Local guard
  void robust_round();
  void release_waiting();  // async / ssp: acknowledges every push whose read may proceed
  // The smallest push count of the unfinished workers other than `except` (int64 max: none).
  std::int64_t min_pushed(int except = -1) const;
  void record(std::uint64_t version_lag, std::int64_t clock_lag);
  void wait_replies();
  void wait_reply(std::size_t worker);  // a reply to a lost worker is dropped
  // async / ssp: counts every worker the runtime reports lost as done (so ssp never waits for it);
  // returns whether one was newly counted.
  bool note_lost();
  // take_over(): counts as done every live worker that was never lost whose flag is set (a worker
  // lost meanwhile is left to note_lost(); a new process in a lost one's place sends `done` itself);
  // returns whether one was newly counted.
  bool read_flags();
  void announce_closed();   // async / ssp: kClosed to every live worker
  std::uint64_t version();  // the slot's window version (0 without a window)

  runtime::Context& ctx_;
  const PsMode mode_;
  const std::int64_t staleness_;
  const int shard_;
  const int workers_;
  std::vector<float> own_;       // the shard where the server keeps it itself (no memory given)
  std::span<float> params_;      // the shard (in the window's slot, or own_)
  bool taken_over_ = false;      // take_over()
  std::size_t flag_offset_ = 0;  // take_over(): where the workers' done flags are in their slots
  std::int64_t closed_ = 0;      // async / ssp: the `closed` message's word (the final version)
  std::unique_ptr<optim::Optimizer> optimizer_;
  collective::Window* window_ = nullptr;
  std::vector<float> grad_;  // a received gradient slice; sync: the round's average (before: scratch of the sum)
  std::vector<double> sum_;                      // sync: sum of the round's finite gradients, in rank order
  // sync, mean: per worker, what it pushed in this round and the sum has not taken yet: nothing
  // (waiting), a finite gradient (in flight, or in round_grads_: sums_at_turn()), a non-finite one
  // (empty, no payload).
  enum class Turn : char { waiting, gradient, empty };
  std::vector<Turn> turn_;
  int next_ = 0;                                 // sync, mean: the lowest rank the sum has not passed
  // sync but where sums_at_turn(): each worker's gradient of the round (sized when first received)
  std::vector<std::vector<float>> round_grads_;
  std::vector<char> round_finite_from_;          // sync, robust rule: whether round_grads_[w] holds a finite one
  std::vector<float> reply_;                     // sync: the shard after the round, being sent
  std::vector<int> round_;                       // sync: workers that pushed in the current round
  int round_finite_ = 0;                         // sync: finite gradients in the current round
  double round_lr_ = 0;                          // sync: learning rate of the round's lowest-ranked pusher
  int round_lr_rank_ = -1;
  std::int64_t rounds_ = 0;                            // sync: rounds closed
  const std::uint32_t generation_;                     // the placement (tag)
  bool replicates_ = false;                            // start_elastic: replies carry the optimizer state
  std::function<double(std::int64_t)> reply_density_;  // sync: set_reply_density
  Aggregate aggregate_;                                // sync: set_aggregate (mean: the sum below)
  bool lr_by_lag_ = false;                             // async / ssp: set_lr_by_lag
  std::vector<float> gathered_;                        // sync, robust aggregate: the round's N gradients
  std::vector<std::int64_t> pushed_;                   // per worker: pushes counted
  std::vector<char> done_;                             // per worker: sent `done`
  int done_count_ = 0;
  std::vector<char> waiting_;                                    // async / ssp: push not yet acknowledged
  std::vector<std::int64_t> read_min_;                           // per worker: min_pushed() when its read was released
  std::vector<ps_protocol::Ack> acks_;                           // per worker: acknowledgement being sent
  std::vector<core::Work> replies_;                              // per worker: the reply being sent
  std::unique_ptr<compress::Codec> decoder_;                     // with a codec: decodes pushes
  std::vector<std::unique_ptr<compress::DeltaSender>> senders_;  // with a codec, sync: per worker
  std::vector<core::Buffer> reply_payloads_;                     // with a codec, sync: per worker
  compress::CompressionMeter* meter_ = nullptr;
  std::unique_ptr<runtime::Mutex> stats_mutex_;
  StalenessStats stats_;            // guarded by stats_mutex_
  std::int64_t max_clock_lag_ = 0;  // guarded by stats_mutex_
};

}  // namespace fast::strategy
