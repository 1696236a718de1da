#include "fast/strategy/ps.hpp"
#include "builtin.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "fast/core/error.hpp"
#include "fast/core/finite.hpp"
#include "fast/core/log.hpp"
#include "fast/core/random.hpp"
#include "fast/strategy/checkpoint.hpp"
#include "fast/strategy/optimizer_state.hpp"
#include "ps_server.hpp"

namespace fast::strategy {

using namespace ps_protocol;

namespace {
constexpr double kMemberCheckSeconds = 0.05;  // an elastic finish() looks at the members this often

// The mode's declaration (ps_registration) allows only these three; make_strategy checked it.
PsMode parse_mode(const std::string& mode) {
  if (mode == "sync") return PsMode::sync;
  if (mode == "async") return PsMode::async;
  if (mode == "ssp") return PsMode::ssp;
  FAST_THROW(core::InvalidArgument, "ps: option 'mode' must be one of sync, async, ssp; got '{}'", mode);
}

// applies_when() of the options of the asynchronous modes.
std::optional<std::string> in_sync_mode(const StrategyOptions& o) {
  if (parse_mode(o.mode) != PsMode::sync) return std::nullopt;
  return fmt::format("mode = '{}'", o.mode);
}

// The factor on the learning rate a worker sends with its push (StrategyOptions::lr_semantics,
// per-sample or per-gradient by its declaration).
double lr_scale(const std::string& semantics, PsMode mode, int workers) {
  if (mode == PsMode::sync || semantics == "per-gradient") return 1.0;
  return 1.0 / static_cast<double>(workers);
}
}  // namespace

// Runs fn; a PeerLost there that comes from a lost server names the shard: the shard's part of
// the model is gone with its host, so training cannot go on.
template <typename Fn>
void PsStrategy::with_servers(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const core::PeerLost&) {
    throw_lost_shard(what, std::current_exception());
  }
}

void PsStrategy::throw_lost_shard(const char* what, const std::exception_ptr& e) const {
  if (elastic_) std::rethrow_exception(e);  // the group regroups and places the servers again
  const runtime::Context& ctx = comm_.context();
  for (int k = 0; k < servers_; ++k) {
    const int host = server_rank_[static_cast<std::size_t>(k)];
    if (ctx.alive(host)) continue;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& lost) {
      FAST_THROW(core::PeerLost,
                 "ps: {}: the server of shard {} (on worker {}) was lost, its part of the model is "
                 "gone and training cannot go on: {}",
                 what, k, host, lost.what());
    }
  }
  std::rethrow_exception(e);
}

// The declarations bound servers by [1, kMaxShards] and staleness by >= 0; a robust aggregate
// needs mode sync by the trait robust_aggregate (make_strategy checks both).
void PsStrategy::check_options(const StrategyOptions& options, int n) {
  if (options.servers > n)
    FAST_THROW(core::InvalidArgument,
               "strategy 'ps': option 'servers': expected an integer in [1, {}] (at most the workers: the servers "
               "are co-located on ranks 0..servers-1), got {}",
               n, options.servers);
}

PsStrategy::PsStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm),
      options_(options),
      mode_(parse_mode(options.mode)),
      lr_scale_(lr_scale(options.lr_semantics, mode_, comm.size())),
      elastic_(comm.elastic() && mode_ == PsMode::sync) {
  check_options(options, comm.size());
  servers_ = static_cast<int>(options.servers);
  for (int k = 0; k < servers_; ++k) server_rank_.push_back(k);
  my_shard_ = comm.rank() < servers_ ? comm.rank() : -1;
}

// Not finished (an error unwinds the worker): stop the server before its memory goes.
PsStrategy::~PsStrategy() { stop_server(); }

void PsStrategy::stop_server() noexcept {
  for (Moved& m : moved_) stop_one(m.shard, m.work, m.running);
  stop_one(my_shard_, server_work_, server_running_);
}

void PsStrategy::stop_one(int shard, core::Work& work, bool& running) noexcept {
  if (!running) return;
  running = false;
  // The stop request is not waited for: if the server ended meanwhile, it is never received and
  // dropping its Work below cancels it.
  runtime::Context& ctx = comm_.context();
  const Header stop = Request{.kind = Request::Kind::stop}.to_words();
  core::Work stop_sent;
  try {
    stop_sent = ctx.send(ctx.rank(), wire_tag(shard, kRequest), core::ConstView(std::span<const std::int64_t>(stop)));
  } catch (const std::exception& e) {
    // The world failed or this worker was lost: the server ends on its own (its waits throw).
    core::log(core::LogLevel::debug, "ps: worker {}: stop request failed: {}", ctx.rank(), e.what());
  }
  try {
    work.wait();  // always: the server uses this strategy's memory until it ends
  } catch (const std::exception& e) {
    core::log(core::LogLevel::debug, "ps: worker {}: server of shard {} stopped with: {}", ctx.rank(), shard, e.what());
  }
  work = core::Work();
}

runtime::Tag PsStrategy::wire_tag(int shard, std::uint32_t kind) const { return tag(shard, kind, generation_); }

// In an elastic group the server waits on the worker's own Context, not on the watch around it: a
// member's loss must not end the activity's Work while the server still runs (stop_server() waits
// for it before the server's memory goes); the members stop their servers once they regrouped.
runtime::Context& PsStrategy::server_context() const { return elastic_ ? comm_.own_context() : comm_.context(); }

void PsStrategy::size_shards(std::size_t d) {
  const auto k = static_cast<std::size_t>(servers_);
  offsets_.assign(k + 1, 0);
  for (std::size_t s = 0; s < k; ++s) offsets_[s + 1] = offsets_[s] + d / k + (s < d % k ? 1 : 0);
  version_read_.assign(k, 0);
  first_clock_.assign(k, 0);
  headers_.resize(k);
  acks_.resize(k);
}

std::span<float> PsStrategy::shard_of(std::span<float> v, int k) const {
  const auto ku = static_cast<std::size_t>(k);
  return v.subspan(offsets_[ku], offsets_[ku + 1] - offsets_[ku]);
}

// Collective (the window). The server takes its shard of the initial parameters and starts
// serving at once, so no worker ever waits for another one to start stepping. A worker joining an
// elastic group under way opens nothing: the members place the servers again with it (regrouped()).
void PsStrategy::attach(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, !attached_, "ps: attach() called twice");
  attached_ = true;
  const std::size_t d = state.params.size();
  size_shards(d);
  const int me = comm_.context().rank();
  if (compresses(options_)) start_ = common_start(state);
  // With one server its shard is the whole model, so shape-aware codecs (powersgd) get its layout.
  if (servers_ == 1) layout_.assign(state.layout.begin(), state.layout.end());
  const core::Layout* layout = layout_.empty() ? nullptr : &layout_;
  if (compresses(options_)) {
    const std::uint64_t seed = core::worker_seed(options_.seed, static_cast<std::uint64_t>(me));
    for (std::size_t s = 0; s < offsets_.size() - 1; ++s) {
      push_codecs_.push_back(
          std::make_unique<compress::ErrorFeedback>(compress::make_codec(options_.compress, seed + s, layout)));
      if (mode_ == PsMode::sync)
        reply_codecs_.push_back(std::make_unique<compress::DeltaReceiver>(
            compress::make_codec(options_.compress, 0, layout), offsets_[s + 1] - offsets_[s],
            shard_of(std::span<float>(start_), static_cast<int>(s))));
    }
    push_payloads_.resize(offsets_.size() - 1);
    reply_payloads_.resize(offsets_.size() - 1);
  }
  dgc_ = make_dgc(options_, d);
  if (dgc_ && dgc_->options().local_view) dgc_->view(state.params, {});  // keeps x0; the view starts as x0
  if (elastic_) {
    replica_ = optim::make_optimizer(options_.optimizer, d);
    size_staged();
    if (comm_.joining()) return;
  } else {
    slot_ = core::Buffer::long_lived(d + 1 + offsets_.size() - 1, core::DType::f32);
    newcomer_ = comm_.joining();
    if (newcomer_) my_shard_ = -1;  // a new process in a lost one's place: its shard moved (rejoin())
  }
  make_server(state.params);
  if (elastic_ && server_) server_->start_elastic(0, comm_.members());
  open_shards();
}

void PsStrategy::make_server(std::span<float> params) {
  if (my_shard_ < 0) return;
  const core::Layout* layout = layout_.empty() ? nullptr : &layout_;
  // With dgc the servers apply the workers' sparse messages with plain SGD at rate 1 (the momentum
  // and the learning rate ran on the workers).
  const std::span<float> memory = elastic_ ? std::span<float>() : slot_shard(my_shard_);
  server_ =
      std::make_unique<PsServer>(server_context(), mode_, options_.staleness, my_shard_, shard_of(params, my_shard_),
                                 memory, options_.dgc ? dgc_update_optimizer(options_.optimizer) : options_.optimizer,
                                 options_.compress, &meter_, layout, generation_);
  if (!elastic_) slot_.as<float>()[params.size() + 1 + static_cast<std::size_t>(my_shard_)] = 1;  // before the window
  if (mode_ == PsMode::sync) server_->set_aggregate(Aggregate::parse(options_.aggregate, comm_.size()));
  server_->set_lr_by_lag(options_.lr_staleness == "inverse");
  if (dgc_ && mode_ == PsMode::sync)
    server_->set_reply_density(  // Dgc::density reads constant options: safe from the server's activity
        [dgc = dgc_.get()](std::int64_t round) { return dgc->density(round); });
}

void PsStrategy::open_shards() {
  runtime::Context& ctx = comm_.context();
  if (!elastic_) open_window();
  if (server_) {
    if (window_) server_->attach(*window_);
    server_work_ =
        server_context().spawn("ps server " + std::to_string(ctx.rank()), [server = server_.get()] { server->run(); });
    server_running_ = true;
  }
}

// Windows span the whole world, and mode sync reads no shard one-sidedly during the run: an elastic
// group opens none.
void PsStrategy::open_window() {
  collective::WindowOptions window_options = codec_window(options_, layout_.empty() ? nullptr : &layout_);
  // Every slot has the same length (a worker that rejoins a run under way takes its own). A host's
  // shard k starts as the common initial model's range, which is what a codec's links start from.
  window_options.initial = [this](int /*owner*/) { return std::span<const float>(start_); };
  window_ = std::make_unique<collective::Window>(comm_, "ps.shards", slot_.view(), std::move(window_options));
}

// Posts the reply's receive, then sends the header (and the gradient slice when finite) to shard
// k's server. The returned Works complete once the server replied.
std::vector<core::Work> PsStrategy::push(const StepInput& input, bool finite, int k) {
  runtime::Context& ctx = comm_.context();
  std::vector<core::Work> works;
  {
    const auto ku = static_cast<std::size_t>(k);
    const int host = server_rank_[ku];
    if (elastic_)
      works.push_back(ctx.recv(host, wire_tag(k, kReply), core::MutableView(std::span<float>(staged_[ku]))));
    else if (mode_ == PsMode::sync && !reply_codecs_.empty())
      works.push_back(ctx.recv(host, wire_tag(k, kReply), reply_payloads_[ku]));
    else if (mode_ == PsMode::sync)
      works.push_back(ctx.recv(host, wire_tag(k, kReply), core::MutableView(shard_of(input.state.params, k))));
    else
      works.push_back(ctx.recv(host, wire_tag(k, kReply), core::MutableView(std::span<std::int64_t>(acks_[ku]))));
    headers_[ku] = Request{.kind = Request::Kind::push,
                           .clock = first_clock_[ku] + clock_,
                           .version = version_read_[ku],
                           .finite = finite,
                           .lr = dgc_ ? 1.0 : input.lr * lr_scale_}
                       .to_words();
    works.push_back(
        ctx.send(host, wire_tag(k, kRequest), core::ConstView(std::span<const std::int64_t>(headers_[ku]))));
    if (finite && !push_codecs_.empty()) {
      const std::span<const float> g = shard_of(input.state.grads, k);
      if (dgc_) push_codecs_[ku]->codec().set_keep_ratio(dgc_->density(input.step));
      push_codecs_[ku]->encode(0, core::ConstView(g), push_payloads_[ku]);
      if (dgc_) dgc_sent(*dgc_, *push_codecs_[ku], 0, offsets_[ku]);
      meter_.add(g.size_bytes(), push_payloads_[ku].bytes());
      works.push_back(ctx.send(host, wire_tag(k, kPayload), push_payloads_[ku].view()));
    } else if (finite) {
      works.push_back(ctx.send(host, wire_tag(k, kPayload), core::ConstView(shard_of(input.state.grads, k))));
    }
  }
  return works;
}

// DGC's local view: each shard of params becomes x - v (v: its push residual), x taken from params
// where they hold it, else the x kept by the Dgc.
void PsStrategy::view_shards(std::span<float> params, bool params_hold_x) {
  for (int k = 0; k < servers_; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    const std::span<float> shard = shard_of(params, k);
    if (params_hold_x)
      dgc_->view(shard, push_codecs_[ku]->residual(0), offsets_[ku]);
    else
      dgc_->look(shard, push_codecs_[ku]->residual(0), offsets_[ku]);
  }
}

// Reads every server's shard one-sidedly, with the version it was read at.
void PsStrategy::pull(const char* what, std::span<float> params, Moves moves, collective::Wire wire) {
  on_shards(what, params, moves, [&](int k) {
    const auto ku = static_cast<std::size_t>(k);
    return std::vector<core::Work>{
        window_->get(server_rank_[ku], core::MutableView(shard_of(params, k)), offsets_[ku], &version_read_[ku], wire)};
  });
}

StepOutcome PsStrategy::step(const StepInput& input) {
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "ps: step() after finish()");
  FAST_ENFORCE_AS(core::InvalidUsage, attached_, "ps: attach() was not called (the Worker's constructor calls it)");
  FAST_ENFORCE_EQ(input.state.params.size(), offsets_.back(), "ps: the parameter count changed since attach()");
  if (replace_servers_) place_servers(input.state.params);  // a resumed elastic run
  if (moves_shards()) move_lost_shards(input.state.params, true);
  runtime::Context& ctx = comm_.context();
  const double t0 = ctx.now();
  // With dgc, grads become this step's update, the learning rate applied (a non-finite gradient
  // leaves DGC's state as it was); the servers then apply the pushes at rate 1 (push()).
  const bool finite = dgc_ ? dgc_->accumulate(input.state.grads, input.state.params, input.lr * lr_scale_)
                           : core::all_finite(input.state.grads);
  // sync: the replies are the new shards, received into the parameters. async / ssp: the
  // acknowledgements (ssp: delayed until the read is allowed), then the one-sided pull.
  on_shards("push", input.state.params, Moves::join, [&](int k) { return push(input, finite, k); });
  // Every server counted this step's push: a shard that moves from here on (the pull) counts this
  // worker's pushes from its next one.
  ++clock_;
  if (elastic_) take_replies(input.state.params);
  if (mode_ == PsMode::sync && !reply_codecs_.empty())
    for (int k = 0; k < servers_; ++k) {
      const auto ku = static_cast<std::size_t>(k);
      compress::copy_into(reply_codecs_[ku]->decode(reply_payloads_[ku].view()),
                          core::MutableView(shard_of(input.state.params, k)));
    }
  if (mode_ != PsMode::sync) pull("pull", input.state.params, Moves::join);
  if (dgc_ && dgc_->options().local_view) view_shards(input.state.params, true);  // the shards are x: look at x - v
  StepOutcome outcome{.applied = finite, .comm_seconds = ctx.now() - t0};
  if (!finite) report_non_finite(input, options_.non_finite, "skipped step");
  return outcome;
}

void PsStrategy::finish(ModelState state) {
  if (finished_) return;
  finished_ = true;
  FAST_ENFORCE_AS(core::InvalidUsage, attached_, "ps: attach() was not called (the Worker's constructor calls it)");
  if (elastic_) {
    // Every step wrote the servers' replies into the parameters (take_replies): no final shards to
    // send. Once every member took its last step (the barrier: a server stopped earlier would
    // cancel its replies under way), each member stops its own server. A member lost during the
    // barrier fails it (PeerLost) after every other member's last step: the servers stop all the same.
    try {
      comm_.barrier();
    } catch (const core::PeerLost&) {
      stop_server();
      throw;
    }
    stop_server();
    return;
  }
  if (mode_ != PsMode::sync) return finish_async(state.params);
  runtime::Context& ctx = comm_.context();
  std::vector<core::Work> sends;
  std::vector<Header> done(static_cast<std::size_t>(servers_),
                           Request{.kind = Request::Kind::done, .clock = clock_}.to_words());
  for (int k = 0; k < servers_; ++k)
    sends.push_back(ctx.send(server_rank_[static_cast<std::size_t>(k)], wire_tag(k, kRequest),
                             core::ConstView(std::span<const std::int64_t>(done[static_cast<std::size_t>(k)]))));
  with_servers("finish", [&] { core::wait_all(sends); });
  if (server_running_) {
    // Every worker is done with this shard. An elastic server waits on the worker's own Context
    // (server_context()): a member lost meanwhile ends this wait with PeerLost, not the server's.
    if (elastic_)
      while (!server_work_.wait(kMemberCheckSeconds))
        for (int m : comm_.members()) comm_.own_context().ensure_alive(m);
    server_running_ = false;
    server_work_.wait();
  }
  comm_.barrier();  // every server has stopped: the shards are final
  broadcast_shards(state.params);
  if (window_) window_->close();
  if (dgc_ && dgc_->options().local_view) dgc_->view(state.params, {});  // keeps the final x, leaves it there
}

// sync, once the servers stopped: every shard from its server to every worker, exactly, by one
// broadcast each, which reads the final shard in place (the window's gets would have each server
// copy its shard once per worker, all of them at once: under sim, one model per worker).
void PsStrategy::broadcast_shards(std::span<float> params) {
  with_servers("final broadcast", [&] {
    for (int k = 0; k < servers_; ++k) {
      const std::span<float> shard = shard_of(params, k);
      if (server_ && k == my_shard_) std::ranges::copy(server_->exposed(), shard.begin());
      comm_.broadcast(core::MutableView(shard), server_rank_[static_cast<std::size_t>(k)]);
    }
  });
}

// The codec state a worker keeps for its pushes and replies (see ps.hpp for the names). The
// window's links carry state only for async and ssp: sync reads the shards exactly.
void PsStrategy::save_links(Checkpoint& out) const {
  for (std::size_t k = 0; k < push_codecs_.size(); ++k) push_codecs_[k]->save(fmt::format("ps.push.{}", k), out);
  for (std::size_t k = 0; k < reply_codecs_.size(); ++k) reply_codecs_[k]->save(fmt::format("ps.reply.{}", k), out);
  if (dgc_) dgc_->save("ps.dgc", out);
  if (mode_ != PsMode::sync) window_->save_links("ps.window", out);
}

void PsStrategy::restore_links(const Checkpoint& checkpoint, std::string_view source, std::span<float> params) {
  for (std::size_t k = 0; k < push_codecs_.size(); ++k)
    push_codecs_[k]->restore(fmt::format("ps.push.{}", k), checkpoint, source);
  for (std::size_t k = 0; k < reply_codecs_.size(); ++k)
    reply_codecs_[k]->restore(fmt::format("ps.reply.{}", k), checkpoint, source);
  if (dgc_) dgc_->restore("ps.dgc", checkpoint, source, params);
  if (dgc_ && dgc_->options().local_view) view_shards(params, false);  // the view again, as step() left it
  if (mode_ != PsMode::sync) window_->restore_links("ps.window", checkpoint, source);
}

void PsStrategy::save_state(Checkpoint& out) {
  // async, ssp: after finish() (the server no longer runs). sync: also between two steps of the
  // lockstep run (every worker received the last round's reply, so the server waits for the next
  // round's pushes); the window's guard orders this read after the server's last update and the
  // encoding of its last replies.
  // async, ssp without a codec or dgc: also during the run (a periodic checkpoint, between two of
  // this worker's steps); a server rank then saves its shard as the server holds it now, under the
  // window's guard, in place of its parameters' copy of it (resume gives the shard back from there).
  const bool live = !finished_ && clock_ != 0 && mode_ != PsMode::sync;
  FAST_ENFORCE_AS(core::InvalidUsage, !live || (!compresses(options_) && !dgc_),
                  "ps: save_state() while the servers apply gradients and the window serves reads (mode {}, "
                  "compress = '{}'{}: the links change with every push; checkpoints are taken after finish())",
                  options_.mode, options_.compress, dgc_ ? ", dgc" : "");
  save_links(out);
  if (elastic_) return save_replica(out);  // every worker holds the servers' state
  // A new process in a server rank's place: its shard moved to a survivor, whose server state stays
  // there (a resume starts the shard from this worker's copy, with a fresh optimizer).
  if (!server_ && comm_.context().rank() < servers_) out.integers.insert_or_assign("ps.server.away", 1);
  if (!server_) return;
  collective::Window::Local local = window_->local();
  if (live) {
    const std::span<const float> shard = server_->exposed();
    std::vector<float>& params = out.arrays.at("params");
    std::copy(shard.begin(), shard.end(), shard_of(std::span<float>(params), my_shard_).begin());
  }
  save_optimizer("ps.server.optimizer", server_->optimizer(), out);
  server_->save("ps.server", out);
}

void PsStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) {
  // An elastic group also takes a member's state during the run (regrouping, admission).
  FAST_ENFORCE_AS(core::InvalidUsage, attached_ && !finished_ && (clock_ == 0 || elastic_),
                  "ps: restore_state() must come after attach() and before the first step");
  if (elastic_) return restore_replica(checkpoint, source);
  if (server_ && checkpoint.integers.contains("ps.server.away")) {
    core::log(core::LogLevel::warn,
              "ps: {}: the server of shard {} had moved to another worker when this checkpoint was written; it "
              "starts from this worker's copy of the shard, with a fresh optimizer state",
              source, my_shard_);
    collective::Window::Local local = window_->local();
    std::ranges::copy(shard_of(state.params, my_shard_), server_->exposed().begin());
  } else if (server_) {
    const std::span<float> values = shard_of(state.params, my_shard_);
    SavedOptimizer optimizer("ps.server.optimizer", checkpoint, source, server_->optimizer());  // checked first
    collective::Window::Local local = window_->local();  // the server applies pushes under it
    server_->restore("ps.server", checkpoint, source, values);
    optimizer.apply();
    // No bump: the shard's version counts applied gradients (the staleness clock), which restarts at 0.
  }
  restore_links(checkpoint, source, state.params);
}

void PsStrategy::rejoin(ModelState state) {
  runtime::Context& ctx = comm_.context();
  FAST_ENFORCE_AS(core::InvalidUsage, attached_ && !finished_ && clock_ == 0,
                  "ps: rejoin() must come after attach() and before the first step");
  FAST_ENFORCE_AS(core::InvalidUsage, mode_ != PsMode::sync, "ps: rejoin with mode = sync: {}",
                  "a round needs every worker, so a lost one ends the run");
  FAST_ENFORCE_AS(core::InvalidUsage, !compresses(options_), "ps: rejoin with compress = '{}': {}", options_.compress,
                  "the pushes' residuals and the pulls' references would not match the servers'");
  FAST_ENFORCE_AS(core::InvalidUsage, !server_ && moved_.empty(), "ps: worker {} rejoins while it serves a shard",
                  ctx.rank());
  for (int k = 0; k < servers_; ++k) {
    server_rank_[static_cast<std::size_t>(k)] = find_host(k, state.params);
    join_shard_when_lost(k, state.params);
  }
  pull("rejoin", state.params, Moves::join, collective::Wire::exact);
}

bool PsStrategy::snapshot(ModelState state, std::span<float> out) {
  if (!attached_ || finished_) return false;
  FAST_ENFORCE_EQ(out.size(), offsets_.back(), "ps: snapshot output length must equal the parameter count");
  on_shards("snapshot", state.params, Moves::join, [&](int k) {
    const auto ku = static_cast<std::size_t>(k);
    return std::vector<core::Work>{window_->get(server_rank_[ku], core::MutableView(shard_of(out, k)), offsets_[ku],
                                                nullptr, collective::Wire::exact)};
  });
  return true;
}

bool PsStrategy::replicas_identical() const {
  return mode_ == PsMode::sync && !(dgc_ && dgc_->options().local_view && !finished_);
}

void PsStrategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "representative: output length must equal the parameter count");
  const std::span<const float> model = dgc_model(dgc_.get(), state.params);
  std::copy(model.begin(), model.end(), out.begin());
}

std::span<const float> PsStrategy::representative_in_place(ModelState state) const {
  return dgc_model(dgc_.get(), state.params);
}

StalenessStats PsStrategy::staleness() const {
  StalenessStats stats = server_ ? server_->staleness() : StalenessStats{};
  for (const Moved& m : moved_) stats.merge(m.server->staleness());
  return stats;
}

std::size_t PsStrategy::state_bytes() const {
  const std::size_t replica = replica_ ? replica_->state_buffers() * replica_->numel() * sizeof(float) : 0;
  std::size_t servers = server_ ? server_->state_bytes() : 0;
  for (const Moved& m : moved_) servers += m.server->state_bytes();
  return servers + bytes_of(start_) + replica + (dgc_ ? dgc_->state_bytes() : 0);
}

std::int64_t PsStrategy::max_clock_lag() const {
  std::int64_t lag = server_ ? server_->max_clock_lag() : 0;
  for (const Moved& m : moved_) lag = std::max(lag, m.server->max_clock_lag());
  return lag;
}

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::ps_registration() {
  std::vector<StrategyOption> options{
      StrategyOption::field("mode", &StrategyOptions::mode,
                            "sync, async or ssp (stale synchronous, bounded by staleness).")
          .one_of({"sync", "async", "ssp"}),
      StrategyOption::field("lr_semantics", &StrategyOptions::lr_semantics,
                            "modes async and ssp: per-sample (each gradient applied with lr / workers, so a given lr "
                            "is the same step per sample as allreduce's) or per-gradient (each gradient applied with "
                            "lr: Downpour as published).")
          .one_of({"per-sample", "per-gradient"})
          .applies_when(in_sync_mode),
      StrategyOption::field("lr_staleness", &StrategyOptions::lr_staleness,
                            "modes async and ssp: inverse (each gradient applied with its learning rate divided by "
                            "its version lag, the updates its shard took since its worker read it, at least 1: "
                            "staleness-aware async SGD) or none (every gradient at its worker's rate).")
          .one_of({"none", "inverse"})
          .applies_when(in_sync_mode),
      StrategyOption::field("staleness", &StrategyOptions::staleness,
                            "mode ssp: a worker never runs more than this many steps ahead of the slowest.")
          .at_least(0)
          .applies_when([](const StrategyOptions& o) -> std::optional<std::string> {
            if (parse_mode(o.mode) == PsMode::ssp) return std::nullopt;
            return fmt::format("mode = '{}'", o.mode);
          }),
      StrategyOption::field("servers", &StrategyOptions::servers,
                            "parameter-server shards, hosted by workers 0..servers-1 (at most the workers).")
          .at_least(1)
          .at_most(kMaxShards),
  };
  for (StrategyOption& o : dgc_options()) options.push_back(std::move(o));
  // Rejoining: an asynchronous run takes back any worker without a codec or dgc (a server rank's
  // shard moved to a survivor; the new process serves nothing).
  const RejoinCheck rejoin = [](const StrategyOptions& o, int rank) -> std::string {
    std::string refusal = rejoin_without_codec(o, rank);
    if (refusal.empty() && o.dgc)
      refusal =
          "dgc = true keeps a residual per server that a new process does not have; rejoining supports dgc = false";
    return refusal;
  };
  return {.name = "ps",
          .summary = "parameter server, see mode",
          .make = factory_of<PsStrategy>(),
          .options = std::move(options),
          .check = &PsStrategy::check_options,
          .asynchronous = StrategyTrait::when("mode", {"async", "ssp"}),
          .rejoin = rejoin,
          .save_during_run = &builtin::save_during_run_without_codec,
          // mode sync (the asynchronous modes go on without `elastic`): every worker keeps the servers'
          // state, which the survivors place again (ps.hpp, "Elastic groups").
          .elastic =
              [](const StrategyOptions& o) {
                return builtin::elastic_without_world_state(o, "sends through a reply link per worker on each server",
                                                            "keeps a reply link per worker on each server");
              },
          .sends_gradients = true,
          .robust_aggregate = StrategyTrait::when("mode", {"sync"})};
}

}  // namespace fast::strategy
