#pragma once
// Strategy `ps`: a sharded parameter server (the taxonomy sec. 3.2.1, 3.3.1, 3.3.3, 3.3.4 and 3.4.1,
// Fig. 3, 6, 8, 12, 13 left; the FAST proposal sec. 3). The optimizer runs on the servers; workers push
// gradients and pull parameters.
//
// Sharding. The flat parameter vector (D elements) is cut into K = `servers` contiguous shards of
// D / K or D / K + 1 elements (the first D mod K shards are one longer). Shard k is served by a
// server activity that worker k spawns (ctx.spawn) on its own rank: servers are co-located with
// workers 0..K-1 (the taxonomy Fig. 13 left). Dedicated server ranks (ranks that only serve) are not
// offered: every rank trains. Each server builds its own optimizer for its shard from
// options.optimizer (optim::make_optimizer with the shard length) and applies it with the learning
// rate the worker sends with its push (StepInput::lr; in sync mode, the rate of the lowest-ranked
// pusher of the round - every worker's schedule gives the same one).
//
// Initial parameters: the replicas start identical (the training loop loads the same model
// everywhere before constructing its Worker). attach() (collective, from the Worker's
// constructor, which hands over the replica with its initial parameters) sizes the shards and
// opens the window; server k takes its shard of worker k's initial parameters there and starts
// serving at once, so no worker waits for another one to take its first step.
//
// Modes (options.mode), with g_w the gradient of worker w and x the server parameters:
//
//   sync   every worker pushes its gradient for clock c; each server averages the gradients of
//          the round, applies ONE optimizer step and sends the new shard to every worker, which
//          overwrites its parameters:  x <- optimizer(x, (1/N) sum_w g_w, lr). Identical to
//          `allreduce` with the same optimizer (tested to 1e-6 relative). asynchronous() = false.
//          The server sums in rank order as far as the lower ranks pushed (the same bits whatever
//          order the pushes arrive in); under sim it reads each gradient where it is when the sum
//          reaches its sender, holding none (PsServer::sum_in_rank_order).
//   async  (Downpour SGD, Dean et al., "Large scale distributed deep networks", NIPS 2012)
//          every gradient is applied as soon as it arrives, one optimizer step each:
//          x <- optimizer(x, g_w, lr_w / N) (lr_semantics per-sample; lr_w with per-gradient);
//          the server acknowledges the push once applied and the worker then pulls the
//          parameters one-sidedly with a Window get of every server's shard (window "ps.shards").
//          Workers never wait for each other. asynchronous() = true.
//   ssp    stale synchronous parallel (Ho et al., "More effective distributed ML via a stale
//          synchronous parallel parameter server", NIPS 2013; the taxonomy sec. 3.3.4 "delay
//          bounds"): as async, but a worker about to compute its gradient number c (0-based count
//          of its pushes) must hold parameters that include every worker's first c - s gradients
//          (s = `staleness`): the server delays its acknowledgement of the worker's push c - 1
//          until every worker has pushed at least c - s gradients. A finished worker counts as
//          infinitely far ahead, so nobody waits for it. asynchronous() = true.
//
// Staleness. The version of a shard counts the updates applied to it. A gradient's version lag
// is the shard's version when the gradient is applied minus the version the worker read (the
// Window get reports it; the first gradient was computed on the initial parameters, version 0).
// staleness() reports the lags of the gradients applied by this rank's server (sync: 0 for each
// gradient averaged). The
// clock lag of a gradient number c is c minus the smallest push count over unfinished workers
// when the server released the worker's read (its acknowledgement of push c - 1; 0 for c = 0);
// the read itself happens later, so the recorded value is an upper bound. ssp keeps it <= s;
// max_clock_lag() reports the largest (recorded in every mode).
//
// Non-finite gradients (NaN or infinity anywhere in the worker's whole gradient): the worker still
// takes part, so nobody is left waiting. Its pushes carry a "skip" flag and no payload. sync:
// the server averages only the finite gradients of the round and skips the update when there are
// none; the skipping worker still receives the new shard. async / ssp: the push counts for the
// clock but is not applied; the worker still pulls. With non_finite = error the worker throws
// InvalidArgument naming the step after its round (after receiving / pulling the parameters),
// like dpsgd; with skip it logs a warning. StepOutcome::applied is false in both cases.
//
// finish() (collective): in an elastic group a barrier, then each member stops its own server (every
// step already wrote the shards into the parameters). Otherwise every worker tells every server it
// is done; a server stops once all N
// workers are done; a barrier then guarantees every server stopped, every worker reads the final
// shards with Window gets into state.params, and the window is closed. snapshot(): Window gets of
// the current shards (false after finish()). representative(): the worker's own parameters
// (identical everywhere after finish()); with DGC's local view, the shared parameters x until
// finish() (the worker's own are its view x - v, compress::Dgc). A strategy destroyed without
// finish() stops its server (requests sent to it later are never answered).
//
// Messages. Per shard k, tags make_tag(TagKind::strategy, 0x50530000 | k, kind | g << 2) ("PS"
// in the sequence's high half, so they never meet other strategies' tags; g: the placement of the
// servers, 0 but in an elastic group, below):
//   kind 0  worker -> server k: request header, 5 x i64 {kind, clock, version read,
//           finite (1/0), lr as the bits of a double}; kinds: push, done, stop (stop
//           only from the server's own rank, to end it early when the strategy is
//           destroyed or the servers are placed again). The server receives them with
//           recv_any, in arrival order.
//   kind 1  worker -> server k: the gradient slice of a finite push (f32, shard length)
//   kind 2  server k -> worker: sync: the new shard (f32; in an elastic group followed by its
//           optimizer's state, below); async / ssp: acknowledgement, 3 x i64 {pushes counted
//           from this worker, smallest push count, the host's window version}.
//   kind 3  server k -> worker (async / ssp): `closed`, 1 x i64, once every worker is done.
// Window "ps.shards" (TagKind::window; not in an elastic group): every worker exposes a slot of
// D + 1 + K floats, mapped untouched (core::Buffer::long_lived), so that only what a worker writes
// costs memory: [0, D) the model, where the host of shard k keeps it at the shard's offset; [D] the
// worker's `done` flag (non-zero once it finished); [D + 1 + k] non-zero where it serves shard k.
// The window's version counts the writes to the whole slot (the updates of every shard its
// worker serves).
//
// Cost per step and worker: |g| bytes up and |x| bytes down (plus small headers), spread over K
// servers; each server receives N shard-sized messages per round of worker steps.
//
// Options: `mode` (sync | async | ssp, default async), `staleness` (ssp bound s >= 0, default
// 4), `servers` (K in [1, N], default 1), `non_finite`, `optimizer` (run on the servers),
// `lr_semantics` (async / ssp: per-sample, the default, pushes lr / N, so that N gradients applied
// one by one move the model as far as sync's one averaged step; per-gradient pushes lr, Downpour as
// published).
//
// Thread-safety: the strategy is used by its worker's main activity; the server activity shares
// only the shard window (under its Local guard) and the statistics (under a Context mutex).
// With compress (docs/compression.md): pushed gradients go through error feedback per (worker,
// shard); sync replies and async/ssp pulls of a shard travel as differences from a reference the
// server and the worker both keep (states); evaluation reads stay exact.
//
// With dgc (compress::Dgc): each worker runs DGC's clipping, weight decay and momentum correction
// at the step's learning rate on its whole gradient before the per-shard error feedback; masking per
// shard after each encode; the servers apply the messages with plain SGD at rate 1 (the pushes'
// headers carry lr 1; dgc_update_optimizer), averaged in sync mode.
//
// On a lost peer: sync mode cannot go on (a round needs every worker): the launcher ends the run
// with the lost worker's PeerLost, but in an elastic group (below). async and ssp go on: a server
// counts a lost worker as done as soon as the runtime reports it lost (Context::alive; its
// unfinished push is dropped), so ssp never waits for it; a lost worker's last claimed gradient is
// not applied. async and ssp take a lost worker back (zmq rejoin, rejoin()): a `join` request
// (kind 4) makes each server forget the old process and count the newcomer's pushes from the
// smallest push count of the other unfinished workers; the newcomer's clock at that server starts
// there. finish() runs among the survivors (Worker::finish drops lost workers from the
// Communicator's group first).
//
// A lost server (async, ssp, without a codec or dgc: moves_shards()). When the host of shard k is
// lost, the shard moves to runtime::successor of that host: the next live worker that was never
// lost. That worker takes it over when it finds the host lost (runtime::ever_lost, before each
// step, an exchange with the server that fails with PeerLost, or any wait: take_lost_shards): it
// starts a server for the shard from its own parameters' slice - the shard as it last pulled it -
// with a fresh optimizer (PsServer::take_over): the updates applied after that pull and the
// shard's optimizer state (momentum, Adam's moments) are lost with the host. Every other worker
// finds the new host by its flag (find_host; a new process in a lost one's place knows no earlier
// loss, so it never takes a shard over itself), sends it a `join`, which also tells it that the
// server runs and its slot holds the shard, and counts its pushes from the join's
// acknowledgement; the exchange that failed, or that the old host answered while the shard moved,
// is done again there. A worker that was never lost and finished before the move counts as done
// by its flag; a shard whose server sent `closed` does not move. Without moves_shards() (a codec or
// dgc: the links and residuals per server would not match a new one) the next push, pull, snapshot
// or finish of every worker throws PeerLost naming the shard ("the server of shard k (on worker
// h) was lost"). A new process in a lost host's place serves nothing: rejoin() finds each shard's
// host by the slots' flags. Losses during finish(): a host lost before every worker finished moves
// as above; one lost between its `closed` and the final pull ends the run with PeerLost.

//
// Elastic groups (mode sync, Communicator::elastic; no codec, no dgc, aggregate mean; docs/faults.md,
// "Elastic synchronous training"): shard k lives on the group's k-th member, K = min(servers,
// members). Every reply also carries the shard's optimizer state after the round (its buffers'
// slices and its step count), so every worker holds the whole server state: the parameters it
// trains and a copy of every shard's optimizer (the replica). A step takes the replies into a
// buffer of its own and writes the parameters and the replica only once every server replied, so
// a step that fails with PeerLost leaves the worker as it was. After the group changes
// (regrouped(): survivors of a loss, or an admission) every member stops its server and the
// members place the K servers again, each built from the replica (the same on every member, whose
// state the regrouping made that of one member): a round that closed on some servers only is
// undone with the old servers. No window is opened (windows span the whole world; mode sync reads
// no shard one-sidedly during the run). The cost: replies (1 + b) times larger for an optimizer with b
// state buffers (momentum: 2x), and (1 + 2b) model-sized buffers more per worker.
// A checkpoint of an elastic run holds the replica instead of the server's state, and its resume
// places the servers again before the first step.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/compress/delta_link.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

class PsServer;  // src/strategy/ps_server.hpp

enum class PsMode : std::uint8_t { sync, async, ssp };

class PsStrategy final : public Strategy {
 public:
  // InvalidArgument naming the option when mode is unknown, servers is outside [1, world size]
  // or staleness < 0; for an invalid options.optimizer on server ranks. Not collective.
  PsStrategy(const StrategyOptions& options, collective::Communicator& comm);
  // The checks that a declaration cannot make (make_strategy checked every option against its
  // declaration): servers against the world size. `fast train` runs them before any data is read.
  // Throws InvalidArgument.
  static void check_options(const StrategyOptions& options, int workers);
  ~PsStrategy() override;

  std::string_view name() const override { return "ps"; }
  // Collective: sizes the shards from state.params, opens the window "ps.shards" (not in an elastic
  // group) and, on ranks below `servers`, starts the server of this rank's shard with its initial
  // values; a worker joining an elastic group under way does neither (regrouped() will), and one
  // joining an asynchronous run under way serves nothing (rejoin()). step() and finish() throw
  // InvalidUsage without it (the Worker's constructor calls it).
  void attach(ModelState state) override;
  // The shards this worker serves (with their optimizers' state; a lost host's shard it took over
  // included), with a codec the common initial model, in an elastic group the replica of every
  // shard's optimizer state.
  std::size_t state_bytes() const override;
  bool steps_worker_optimizer() const override { return false; }  // the servers step
  StepOutcome step(const StepInput& input) override;
  void representative(ModelState state, std::span<float> out) override;
  // The worker's own parameters (DGC's shared x with its local view): read in place where the
  // replicas are identical (mode sync), as allreduce's.
  std::span<const float> representative_in_place(ModelState state) const override;
  // sync: identical, but for DGC's local view, where each worker looks at x - v until finish().
  bool replicas_identical() const override;
  bool asynchronous() const override { return mode_ != PsMode::sync; }
  void finish(ModelState state) override;
  bool snapshot(ModelState state, std::span<float> out) override;
  // Checkpoints (every mode; async and ssp after finish(), sync between two lockstep steps too).
  // Every worker saves, with a codec, its pushes' error feedback per shard ("ps.push.<k>"), in
  // sync its replies' references ("ps.reply.<k>"), in async and ssp its window's links
  // ("ps.window"), and with dgc its momentum correction ("ps.dgc"). A server rank adds its shard's
  // optimizer state ("ps.server.optimizer.<k>", "ps.server.optimizer.steps") and, in sync, the
  // rounds it closed and with a codec its replies' links ("ps.server.rounds", "ps.server.reply.<w>");
  // the shard's values are the saved parameters' slice. restore_state() puts all of it back before
  // any push (IoError naming `source` for a missing or malformed value). Per-worker push counts,
  // ssp clocks and shard versions restart at 0 on every worker and server together. In an elastic
  // group every worker saves the replica instead ("ps.replica.optimizer.<k>", its "steps", "ps.clock",
  // "ps.generation"), and restore_state() takes it at any step boundary (a regrouping, an
  // admission, a resume); the servers are placed again from it before the next step. After a
  // shard moved (async, ssp): a new process in a server rank's place saves "ps.server.away"
  // instead of the server's state, and a resume from its file starts that shard from its saved
  // parameters with a fresh optimizer; the server state of a shard taken over is not saved.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;
  // async, ssp, no codec: this worker is a new process in a lost one's place (it serves no shard,
  // even where its rank hosted one: that shard moved). It finds each shard's host by the flags in
  // the live workers' slots, sends it `join`, takes the push count each one acknowledges as its
  // clock there, and pulls the shards into state.params. InvalidUsage otherwise; PeerLost when no
  // live worker serves a shard.
  void rejoin(ModelState state) override;
  // Elastic groups: stops this worker's server and places the servers on the new members from the
  // replica (collective among the members: the window "ps.shards" again). PeerLost when a member
  // is lost meanwhile (the Worker regroups again).
  void regrouped(ModelState state) override;
  StalenessStats staleness() const override;

  PsMode mode() const noexcept { return mode_; }
  int servers() const noexcept { return servers_; }
  // Largest clock lag of the gradients applied by this rank's server (0 when it hosts none).
  std::int64_t max_clock_lag() const;
  // Pushes this worker has made (its clock).
  std::int64_t clock() const noexcept { return clock_; }

 private:
  template <typename Fn>
  void with_servers(const char* what, Fn&& fn);  // a lost server's PeerLost names its shard
  // The PeerLost of `e` naming the first shard whose host was lost, or `e` itself.
  [[noreturn]] void throw_lost_shard(const char* what, const std::exception_ptr& e) const;
  // A lost server: async or ssp without a codec or dgc (see "A lost server").
  bool moves_shards() const;
  // Runs each(k) for every shard (the Works of shard k's exchange with its server) and waits for
  // them shard by shard. When some fail with PeerLost: where shards move and the hosts were lost,
  // moves them (move_lost_shards) and runs their exchanges again on the new hosts; else throws as
  // with_servers.
  enum class Moves : std::uint8_t {
    join,     // a worker that moves a shard joins its new server before the exchange runs again there
    no_join,  // ... does not (finish: it sends `done` instead)
    none,     // no move: a lost host's PeerLost names its shard
  };
  void on_shards(const char* what, std::span<float> params, Moves moves,
                 const std::function<std::vector<core::Work>(int shard)>& each);
  // Moves every shard whose host was lost (runtime::ever_lost) and whose server did not close: the
  // successor starts its server from params (take_shard); any other worker finds the new host
  // (find_host) and, with join, joins it (join_shard). PeerLost when no live worker serves one
  // within the operation time limit.
  void move_lost_shards(std::span<float> params, bool join);
  // This worker serves shard k (its host `lost` was lost) from params' slice.
  void take_shard(int k, int lost, std::span<float> params);
  // Waits for works; meanwhile (where shards move) takes over the shards whose lost host this
  // worker succeeds (take_lost_shards), so that nobody waits for it in vain.
  void wait_watching(const std::vector<core::Work>& works, std::span<float> params);
  void take_lost_shards(std::span<float> params);
  // Rethrows the error of a server of this worker that ended before its run was over.
  void check_servers();
  // Waits for this worker's servers (ended_only: those whose activity already ended), rethrowing
  // a server's error.
  void wait_servers(bool ended_only);
  void join_shard(int k, std::span<float> params);  // PeerLost when the host is lost meanwhile
  // async / ssp: sets the done flag, sends `done` to every server and waits for each server's
  // `closed` (moving lost shards meanwhile), then the final pull.
  void finish_async(std::span<float> params);
  // The live worker that flags shard k in its slot, read again until one does (the successor of a
  // lost host may not have taken it over yet); PeerLost after the operation time limit.
  int find_host(int k, std::span<float> params);
  bool settled(int k) const;      // finish: shard k's server sent `closed`, so it does not move any more
  bool succeeds(int lost) const;  // whether this worker takes over what `lost` served
  // rejoin(): joins shard k's server, moving the shard first when its host is lost meanwhile.
  void join_shard_when_lost(int k, std::span<float> params);
  std::span<float> slot_shard(int k);  // shard k's range of this worker's slot
  std::span<float> shard_of(std::span<float> v, int k) const;
  // This worker's codec state for its pushes, replies and window (save_state / restore_state).
  void save_links(Checkpoint& out) const;
  // DGC's local view of every shard: params becomes x - v. x is read from params first where they
  // hold it (after a reply or a pull: compress::Dgc::view), else the kept x (on resume: Dgc::look).
  void view_shards(std::span<float> params, bool params_hold_x);
  // params: the worker's restored parameters (DGC's restore may write the shared x into them).
  void restore_links(const Checkpoint& checkpoint, std::string_view source, std::span<float> params);
  std::vector<core::Work> push(const StepInput& input, bool finite, int shard);  // one shard's push
  void pull(const char* what, std::span<float> params, Moves moves, collective::Wire wire = collective::Wire::codec);
  // sync's final model: each shard broadcast from its server (collective; after the servers stopped).
  void broadcast_shards(std::span<float> params);
  // Shard lengths for servers_ shards of a model of d parameters (offsets_).
  void size_shards(std::size_t d);
  // The Context the server runs on (see ps.cpp).
  runtime::Context& server_context() const;
  // The tag of `kind` (ps_protocol) for shard k in the current placement.
  runtime::Tag wire_tag(int shard, std::uint32_t kind) const;
  // The server of my_shard_ (none when this worker hosts none), its shard's initial values from params.
  void make_server(std::span<float> params);
  // Collective but in an elastic group: opens the window "ps.shards" (exposing server_'s shard,
  // open_window) and starts server_.
  void open_shards();
  void open_window();
  // Stops this worker's server if it runs (a stop request; its errors are logged, not thrown) and
  // waits for it.
  void stop_server() noexcept;  // and the servers of shards taken over (moved_)
  void stop_one(int shard, core::Work& work, bool& running) noexcept;
  // Elastic groups (ps_elastic.cpp): the replies of a completed step into the parameters and the
  // replica; the placement of the servers on the members; the replica in checkpoints.
  void size_staged();  // staged_ for the current shards
  void take_replies(std::span<float> params);
  void place_servers(std::span<float> params);
  void save_replica(Checkpoint& out) const;
  void restore_replica(const Checkpoint& checkpoint, std::string_view source);

  StrategyOptions options_;
  PsMode mode_ = PsMode::async;
  double lr_scale_ = 1;  // on the pushed learning rate: 1 / N in async / ssp with lr_semantics per-sample
  int servers_ = 1;
  bool elastic_ = false;                       // mode sync in an elastic group (see "Elastic groups" above)
  std::uint32_t generation_ = 0;               // the placement of the servers (tags; elastic groups change it)
  std::vector<int> server_rank_;               // per shard: the rank hosting its server
  int my_shard_ = -1;                          // the shard this worker serves, -1: none
  bool replace_servers_ = false;               // elastic: the replica was restored; place the servers before stepping
  std::unique_ptr<optim::Optimizer> replica_;  // elastic: every shard's optimizer state, as the last replies left it
  std::vector<std::vector<float>> staged_;     // elastic: per shard, the reply of the step under way
  bool attached_ = false;
  bool finished_ = false;
  std::vector<std::size_t> offsets_;                  // shard k = [offsets_[k], offsets_[k + 1])
  std::int64_t clock_ = 0;                            // pushes made by this worker
  std::vector<std::int64_t> first_clock_;             // per shard: its server's count of this worker's pushes
                                                      // minus clock_ (0 but after a join or a take-over)
  std::vector<std::uint64_t> version_read_;           // per shard: version of the parameters last pulled
  std::vector<std::array<std::int64_t, 5>> headers_;  // per shard: request header being sent
  std::vector<std::array<std::int64_t, 3>> acks_;     // per shard: acknowledgement being received
  std::vector<std::unique_ptr<compress::ErrorFeedback>> push_codecs_;   // with a codec: per shard
  std::vector<core::Buffer> push_payloads_;                             // with a codec: per shard
  std::vector<std::unique_ptr<compress::DeltaReceiver>> reply_codecs_;  // with a codec, sync: per shard
  std::vector<core::Buffer> reply_payloads_;                            // with a codec, sync: per shard
  std::vector<float> start_;                                            // with a codec: the common initial model
  std::unique_ptr<compress::Dgc> dgc_;                                  // with dgc: this worker's momentum correction
  core::Layout layout_;                         // with one server: the model's layout (its shard is the whole model)
  core::Buffer slot_;                           // the window's memory (see "Window"; none in an elastic group)
  std::unique_ptr<PsServer> server_;            // this rank's shard, when rank < servers
                                                // (declared before window_, which exposes it)
  std::unique_ptr<collective::Window> window_;  // "ps.shards"; exposes slot_
  core::Work server_work_;                      // the server activity
  bool server_running_ = false;
  struct Moved {  // a shard this worker took over from a lost host
    int shard = -1;
    std::unique_ptr<PsServer> server;
    core::Work work;
    bool running = false;
  };
  std::vector<Moved> moved_;
  bool newcomer_ = false;     // a new process in a lost one's place (attach() while joining): never a successor
  std::vector<char> closed_;  // finish: per shard, whether its server sent `closed`
};

}  // namespace fast::strategy
