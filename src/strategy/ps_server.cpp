#include "ps_server.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <mutex>
#include <optional>

#include "fast/core/finite.hpp"

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"

namespace fast::strategy {

using namespace ps_protocol;

PsServer::PsServer(runtime::Context& ctx, PsMode mode, std::int64_t staleness, int shard,
                   std::span<const float> initial, std::span<float> memory, const optim::OptimizerOptions& optimizer,
                   const std::string& codec, compress::CompressionMeter* meter, const core::Layout* layout,
                   std::uint32_t generation)
    : ctx_(ctx),
      mode_(mode),
      staleness_(staleness),
      shard_(shard),
      workers_(ctx.size()),
      own_(memory.empty() ? std::vector<float>(initial.begin(), initial.end()) : std::vector<float>()),
      params_(memory.empty() ? std::span<float>(own_) : memory),
      optimizer_(optim::make_optimizer(optimizer, initial.size())),
      grad_(initial.size()),
      generation_(generation),
      pushed_(static_cast<std::size_t>(workers_), 0),
      done_(static_cast<std::size_t>(workers_), 0),
      waiting_(static_cast<std::size_t>(workers_), 0),
      read_min_(static_cast<std::size_t>(workers_), 0),
      acks_(static_cast<std::size_t>(workers_)),
      replies_(static_cast<std::size_t>(workers_)),
      meter_(meter),
      stats_mutex_(ctx.make_mutex()) {
  FAST_ENFORCE_EQ(params_.size(), initial.size(), "ps: server of shard {}: memory for the shard", shard);
  if (!memory.empty() && memory.data() != initial.data()) std::ranges::copy(initial, params_.begin());
  if (!compress::make_codec(codec)->lossless()) {
    decoder_ = compress::make_codec(codec);
    if (mode_ == PsMode::sync) {
      for (int w = 0; w < workers_; ++w)
        senders_.push_back(
            std::make_unique<compress::DeltaSender>(compress::make_codec(codec, 0, layout), initial.size(), initial));
      reply_payloads_.resize(static_cast<std::size_t>(workers_));
    }
  }
  if (mode_ == PsMode::sync) {
    sum_.assign(initial.size(), 0.0);
    turn_.assign(static_cast<std::size_t>(workers_), Turn::waiting);
    reply_.assign(initial.size(), 0.0f);
  }
}

void PsServer::start_elastic(std::int64_t clock, std::span<const int> members) {
  FAST_ENFORCE(mode_ == PsMode::sync && !decoder_ && aggregate_.is_mean(),
               "ps: server of shard {}: elastic groups need mode sync without a codec or dgc, and with the mean",
               shard_);
  std::fill(pushed_.begin(), pushed_.end(), clock);
  std::fill(done_.begin(), done_.end(), 1);
  for (int m : members) done_[static_cast<std::size_t>(m)] = 0;
  done_count_ = workers_ - static_cast<int>(members.size());
  replicates_ = true;
  reply_.assign(elastic_reply_floats(params_.size(), optimizer_->state_buffers()), 0.0f);
}

void PsServer::take_over(std::size_t flag_offset) {
  FAST_ENFORCE(mode_ != PsMode::sync && window_ != nullptr,
               "ps: server of shard {}: only a server of mode async or ssp with its window takes a shard over", shard_);
  taken_over_ = true;
  flag_offset_ = flag_offset;
}

// A matched reply's receiver may not have copied it yet (the stop request of a worker faster
// than the others): reply_payloads_, declared after replies_, would otherwise be freed first.
PsServer::~PsServer() { replies_.clear(); }

void PsServer::run() {
  FAST_ENFORCE(window_ != nullptr || replicates_, "ps: server of shard {} started without its window", shard_);
  core::Buffer header;
  const bool tolerant = mode_ != PsMode::sync;  // sync: a lost worker ends the run (the launcher)
  if (taken_over_) read_flags();
  for (;;) {
    if (tolerant) note_lost();
    if (done_count_ == workers_) break;
    int src = -1;
    const core::Work w = ctx_.recv_any(tag(shard_, kRequest, generation_), header, src);
    // Idle between requests is normal; a failed world surfaces as RemoteError. The wait returns
    // early when a worker is lost (sim), which may leave nobody to wait for.
    bool everyone_done = false;
    while (!w.wait(1.0)) {
      const bool counted = tolerant && note_lost();
      if ((counted || (taken_over_ && read_flags())) && done_count_ == workers_) {
        everyone_done = true;
        break;
      }
    }
    if (everyone_done) break;  // the unmatched receive is cancelled with w
    FAST_ENFORCE(header.dtype() == core::DType::i64 && header.numel() == kHeaderLen,
                 "ps: server of shard {}: malformed request from worker {} ({} x {})", shard_, src, header.numel(),
                 core::name_of(header.dtype()));
    const Request h = Request::from_words(std::as_const(header).as<std::int64_t>());  // validated
    const auto who = static_cast<std::size_t>(src);
    if (h.kind == Request::Kind::stop) {
      FAST_ENFORCE(src == ctx_.rank(), "ps: server of shard {}: stop request from worker {}", shard_, src);
      return;  // the replies under way: see run()'s contract
    }
    if (h.kind == Request::Kind::join) {
      on_join(src);
      continue;
    }
    if (tolerant && done_[who] && !ctx_.alive(src)) continue;  // sent before it was lost, counted done since
    if (taken_over_ && done_[who] && h.kind == Request::Kind::done) continue;  // counted from its flag
    FAST_ENFORCE(!done_[who], "ps: server of shard {}: request from worker {} after its done", shard_, src);
    if (h.kind == Request::Kind::push) {
      const double since = ctx_.now();
      try {
        on_push(src, h);
      } catch (const core::PeerLost&) {
        // Lost while pushing (a new process may have taken the rank back since): not applied.
        if (!tolerant || !runtime::lost_since(ctx_, src, since)) throw;
        note_lost();
      }
    } else {
      on_done(src);
      if (done_count_ == workers_) break;
    }
  }
  if (tolerant) announce_closed();
  wait_replies();
}

bool PsServer::read_flags() {
  bool any = false;
  for (int w = 0; w < workers_; ++w) {
    const auto wu = static_cast<std::size_t>(w);
    // A new process in a lost one's place is passed over: it joined this server or hears of the move
    // in its own finish, and its window may not answer yet while it takes the rank back.
    if (done_[wu] || w == ctx_.rank() || !ctx_.alive(w) || runtime::ever_lost(ctx_, w)) continue;
    float flag = 0;
    const double since = ctx_.now();
    try {
      window_->get(w, core::MutableView(&flag, 1, core::DType::f32), flag_offset_, nullptr, collective::Wire::exact)
          .wait();
    } catch (const core::PeerLost&) {
      if (!runtime::lost_since(ctx_, w, since)) throw;
      continue;  // note_lost() counts it
    }
    if (flag == 0) continue;
    on_done(w);
    any = true;
  }
  return any;
}

void PsServer::announce_closed() {
  wait_replies();  // the acknowledgements: long received (every worker sent `done` since)
  closed_ = static_cast<std::int64_t>(version());
  for (int w = 0; w < workers_; ++w)
    if (ctx_.alive(w))
      replies_[static_cast<std::size_t>(w)] =
          ctx_.send(w, tag(shard_, kClosed, generation_), core::ConstView(&closed_, 1, core::DType::i64));
}

std::uint64_t PsServer::version() { return window_ == nullptr ? 0 : window_->local().version(); }

bool PsServer::note_lost() {
  bool any = false;
  for (int w = 0; w < workers_; ++w) {
    const auto wu = static_cast<std::size_t>(w);
    if (done_[wu] || ctx_.alive(w)) continue;
    waiting_[wu] = 0;  // never acknowledged
    on_done(w);
    any = true;
  }
  return any;
}

void PsServer::on_push(int src, const Request& h) {
  const auto who = static_cast<std::size_t>(src);
  FAST_ENFORCE_EQ(h.clock, pushed_[who], "ps: server of shard {}: push from worker {} out of order", shard_, src);
  FAST_ENFORCE(mode_ == PsMode::sync || !waiting_[who],
               "ps: server of shard {}: worker {} pushed before its previous push was acknowledged", shard_, src);
  if (mode_ == PsMode::sync) return on_sync_push(src, h);
  const bool finite = h.finite;
  const double lr = h.lr;
  if (finite) receive_gradient(src, grad_);
  ++pushed_[who];

  if (finite) {
    std::uint64_t version_lag = 0;
    {
      collective::Window::Local local = window_->local();
      const std::uint64_t read = h.version;
      FAST_ENFORCE(read <= local.version(), "ps: server of shard {}: worker {} read version {} > current {}", shard_,
                   src, read, local.version());
      version_lag = local.version() - read;
      optimizer_->step(params_, grad_,
                       lr_by_lag_ ? lr / static_cast<double>(std::max<std::uint64_t>(1, version_lag)) : lr);
      local.bump();
      ctx_.memory_traffic(optimizer_->step_traffic_bytes());  // under the lock, as the work
    }
    // Gradient number h.clock was computed on parameters whose read was released when the
    // slowest unfinished worker had pushed read_min_ gradients.
    record(version_lag, h.clock - read_min_[who]);
  }
  waiting_[who] = 1;
  release_waiting();
}

// A gradient the server receives into `into` (decoded with a codec).
void PsServer::receive_gradient(int src, std::vector<float>& into) {
  if (decoder_) {
    core::Buffer payload;
    ctx_.recv(src, tag(shard_, kPayload, generation_), payload).wait();
    decoder_->decode(payload.view(), std::span<float>(into));
  } else {
    ctx_.recv(src, tag(shard_, kPayload, generation_), core::MutableView(std::span<float>(into))).wait();
  }
}

// sync: the round's gradients are summed in rank order, the same result whatever order they
// arrived in (reproducible runs), as far as the lower ranks allow (sum_in_rank_order). Where the
// runtime receives in place (sim) and the rule is the mean, each is received when its turn comes,
// so the server holds none of them; elsewhere each is received as it arrives (its bytes are held
// by the runtime until then anyway, and the copy overlaps the wait for the others), into its own
// buffer until the sum takes it. A robust rule needs them all.
bool PsServer::sums_at_turn() const { return aggregate_.is_mean() && ctx_.receives_in_place(); }

std::vector<float>& PsServer::round_gradient(std::size_t worker) {
  if (round_grads_.empty()) {
    round_grads_.resize(static_cast<std::size_t>(workers_));
    round_finite_from_.assign(static_cast<std::size_t>(workers_), 0);
  }
  std::vector<float>& g = round_grads_[worker];
  if (g.empty()) g.resize(grad_.size());
  return g;
}

void PsServer::on_sync_push(int src, const Request& h) {
  const auto who = static_cast<std::size_t>(src);
  if (h.finite && !sums_at_turn()) receive_gradient(src, round_gradient(who));
  if (aggregate_.is_mean())
    turn_[who] = h.finite ? Turn::gradient : Turn::empty;
  else
    round_finite_from_[who] = h.finite ? 1 : 0;
  ++pushed_[who];
  if (h.finite) ++round_finite_;
  if (round_lr_rank_ < 0 || src < round_lr_rank_) {
    round_lr_rank_ = src;
    round_lr_ = h.lr;
  }
  round_.push_back(src);
  close_sync_round();
}

// sync, mean: adds to sum_ the finite gradients of the workers from next_ on, in rank order, up to
// the first one that neither pushed in this round nor is done. With sums_at_turn() the run of
// consecutive pushers is received now, in one call that reads the messages where they are (through
// grad_, free until the round closes, with a codec); otherwise their gradients were received.
void PsServer::sum_in_rank_order() {
  std::vector<int> run;
  for (; next_ < workers_; ++next_) {
    const auto w = static_cast<std::size_t>(next_);
    if (turn_[w] == Turn::gradient)
      run.push_back(next_);
    else if (turn_[w] == Turn::waiting && !done_[w])
      break;
    turn_[w] = Turn::waiting;
  }
  if (run.empty()) return;
  const std::size_t n = sum_.size();
  const auto add = [this, n](const float* g) {
    for (std::size_t i = 0; i < n; ++i) sum_[i] += g[i];
  };
  const bool at_turn = sums_at_turn();
  if (at_turn && !decoder_) {
    ctx_.recv_each_then(run, tag(shard_, kPayload, generation_), core::DType::f32, n,
                        [&](std::span<const core::ConstView> received) {
                          for (const core::ConstView& g : received) add(g.as<float>().data());
                        });
    return;
  }
  for (int w : run) {
    if (at_turn) receive_gradient(w, grad_);
    add(at_turn ? grad_.data() : round_grads_[static_cast<std::size_t>(w)].data());
  }
}

void PsServer::on_join(int src) {
  FAST_ENFORCE(mode_ != PsMode::sync, "ps: server of shard {}: join request from worker {} in mode sync", shard_, src);
  FAST_ENFORCE(src != ctx_.rank(), "ps: server of shard {}: join request from its own rank", shard_);
  const auto who = static_cast<std::size_t>(src);
  if (done_[who]) {
    done_[who] = 0;
    --done_count_;
  }
  waiting_[who] = 0;
  replies_[who] = core::Work();  // an acknowledgement to the old process: dropped
  const std::int64_t others = min_pushed(src);
  pushed_[who] = others == std::numeric_limits<std::int64_t>::max() ? 0 : others;  // max: nobody else left
  read_min_[who] = min_pushed();
  core::log(
      core::LogLevel::info,
      "ps: server of shard {}: worker {} joined (a new process, or the shard moved here); its pushes count from {}",
      shard_, src, pushed_[who]);
  acks_[who] = {pushed_[who], read_min_[who], static_cast<std::int64_t>(version())};
  replies_[who] =
      ctx_.send(src, tag(shard_, kReply, generation_), core::ConstView(std::span<const std::int64_t>(acks_[who])));
}

void PsServer::on_done(int src) {
  done_[static_cast<std::size_t>(src)] = 1;
  ++done_count_;
  // A finished worker counts as infinitely far ahead: it may complete a round or release readers.
  if (mode_ == PsMode::sync)
    close_sync_round();
  else
    release_waiting();
}

// A robust rule over the round's N gradients, in rank order (a skipped push: NaNs, which the rules
// put last or never choose); the update is skipped when the result is not finite.
void PsServer::robust_round() {
  const std::size_t n = grad_.size();
  gathered_.resize(n * round_grads_.size());
  for (std::size_t w = 0; w < round_grads_.size(); ++w) {
    float* to = gathered_.data() + w * n;
    if (round_finite_from_[w])
      std::copy(round_grads_[w].begin(), round_grads_[w].end(), to);
    else
      std::fill(to, to + n, std::numeric_limits<float>::quiet_NaN());
    round_finite_from_[w] = 0;
  }
  aggregate_.apply(gathered_, static_cast<int>(round_grads_.size()), grad_);
  if (core::all_finite(std::span<const float>(grad_))) optimizer_->step(params_, grad_, round_lr_);
  ctx_.memory_traffic(static_cast<double>(gathered_.size()) * 8.0 + optimizer_->step_traffic_bytes());
}

// Closes the round once every worker that has not finished pushed its gradient: the sum takes the
// gradients it has not taken yet, then one optimizer step with the average of the round's finite
// gradients (none: no update), then the new shard to every pusher.
void PsServer::close_sync_round() {
  if (aggregate_.is_mean()) sum_in_rank_order();
  if (round_.empty() || static_cast<int>(round_.size()) + done_count_ < workers_) return;
  FAST_ENFORCE(!aggregate_.is_mean() || next_ == workers_,
               "ps: server of shard {}: the round's gradients were summed up to worker {} of {}", shard_, next_,
               workers_);
  wait_replies();  // reply_ still feeds the previous round's sends (completed: everyone pushed since)
  {
    // No window in an elastic group: nothing reads the shard while the server runs.
    std::optional<collective::Window::Local> local;
    if (window_) local.emplace(window_->local());
    if (!aggregate_.is_mean()) {
      robust_round();
      if (local) local->bump();
    } else if (round_finite_ > 0) {
      const double inv = 1.0 / round_finite_;
      for (std::size_t i = 0; i < grad_.size(); ++i) grad_[i] = static_cast<float>(sum_[i] * inv);
      optimizer_->step(params_, grad_, round_lr_);
      // Each gradient read into the f64 sum (read and written), the average written, the step.
      const double n = static_cast<double>(grad_.size());
      ctx_.memory_traffic(n * (20.0 * round_finite_ + 12.0) + optimizer_->step_traffic_bytes());
      if (local) local->bump();
    }
    copy_reply();
    send_replies();  // under the guard: a checkpoint between two steps sees the links after them
  }
  for (int i = 0; i < round_finite_; ++i) record(0, 0);
  std::fill(sum_.begin(), sum_.end(), 0.0);
  round_.clear();
  next_ = 0;
  round_finite_ = 0;
  round_lr_rank_ = -1;
}

// The shard into reply_ and, in an elastic group, its optimizer's state after it.
void PsServer::copy_reply() {
  std::copy(params_.begin(), params_.end(), reply_.begin());
  if (!replicates_) return;
  auto at = reply_.begin() + static_cast<std::ptrdiff_t>(params_.size());
  for (const std::span<float> buffer : optimizer_->state()) at = std::copy(buffer.begin(), buffer.end(), at);
  const std::int64_t steps = optimizer_->steps_taken();
  std::memcpy(&*at, &steps, sizeof steps);
}

// Sends the new shard (reply_) to every worker of the round; with a codec through its link, at
// the round's reply density when DGC sets one.
void PsServer::send_replies() {
  double reply_ratio = 0;  // 0: the codec's own
  if (reply_density_ && !params_.empty()) {
    const double n = static_cast<double>(params_.size());
    reply_ratio = std::min(1.0, workers_ * std::ceil(reply_density_(rounds_) * n) / n);
  }
  ++rounds_;
  for (int w : round_) {
    const auto wu = static_cast<std::size_t>(w);
    if (decoder_) {
      if (reply_ratio > 0) senders_[wu]->codec().set_keep_ratio(reply_ratio);
      senders_[wu]->encode(core::ConstView(std::span<const float>(reply_)), reply_payloads_[wu], meter_);
      replies_[wu] = ctx_.send(w, tag(shard_, kReply, generation_), reply_payloads_[wu].view());
    } else {
      replies_[wu] = ctx_.send(w, tag(shard_, kReply, generation_), core::ConstView(std::span<const float>(reply_)));
    }
  }
}

void PsServer::save(std::string_view prefix, core::SavedState& out) const {
  if (mode_ != PsMode::sync) return;
  out.integers.insert_or_assign(std::string(prefix) + ".rounds", rounds_);
  if (senders_.empty()) return;
  out.arrays.insert_or_assign(std::string(prefix) + ".shard", std::vector<float>(params_.begin(), params_.end()));
  for (std::size_t w = 0; w < senders_.size(); ++w) senders_[w]->save(fmt::format("{}.reply.{}", prefix, w), out);
}

void PsServer::restore(std::string_view prefix, const core::SavedState& in, std::string_view source,
                       std::span<const float> shard) {
  FAST_ENFORCE_EQ(shard.size(), params_.size(), "ps: server of shard {}: restored shard length", shard_);
  std::int64_t rounds = 0;
  if (mode_ == PsMode::sync)
    rounds = in.integer(std::string(prefix) + ".rounds", 0, std::numeric_limits<std::int64_t>::max(), source);
  if (!senders_.empty()) {
    shard = in.array(std::string(prefix) + ".shard", params_.size(), source);
    for (std::size_t w = 0; w < senders_.size(); ++w)
      senders_[w]->restore(fmt::format("{}.reply.{}", prefix, w), in, source);
  }
  std::copy(shard.begin(), shard.end(), params_.begin());
  rounds_ = rounds;
}

std::int64_t PsServer::min_pushed(int except) const {
  std::int64_t m = std::numeric_limits<std::int64_t>::max();
  for (std::size_t w = 0; w < pushed_.size(); ++w)
    if (!done_[w] && static_cast<int>(w) != except) m = std::min(m, pushed_[w]);
  return m;
}

// A worker that has pushed c gradients is about to compute gradient number c; ssp lets it read
// once every unfinished worker has pushed at least c - s. async lets it read at once.
void PsServer::release_waiting() {
  const std::int64_t m = min_pushed();
  for (std::size_t w = 0; w < waiting_.size(); ++w) {
    if (!waiting_[w]) continue;
    if (mode_ == PsMode::ssp && m < pushed_[w] - staleness_) continue;
    waiting_[w] = 0;
    read_min_[w] = m;
    wait_reply(w);  // the previous acknowledgement (long received: the worker pushed since)
    acks_[w] = {pushed_[w], m, static_cast<std::int64_t>(version())};
    replies_[w] = ctx_.send(static_cast<int>(w), tag(shard_, kReply, generation_),
                            core::ConstView(std::span<const std::int64_t>(acks_[w])));
  }
}

void PsServer::record(std::uint64_t version_lag, std::int64_t clock_lag) {
  std::lock_guard<runtime::Mutex> lock(*stats_mutex_);
  stats_.add(version_lag);
  max_clock_lag_ = std::max(max_clock_lag_, clock_lag);
}

void PsServer::wait_replies() {
  // Every worker posts the receive of a reply before pushing, so these sends complete promptly.
  // Waits for all before rethrowing the first error, so no send still reads a reply buffer.
  std::exception_ptr first;
  for (std::size_t w = 0; w < replies_.size(); ++w) {
    try {
      wait_reply(w);
    } catch (const std::exception&) {
      if (!first) first = std::current_exception();
      replies_[w] = core::Work();
    }
  }
  if (first) std::rethrow_exception(first);
}

void PsServer::wait_reply(std::size_t w) {
  try {
    replies_[w].wait();
  } catch (const core::PeerLost&) {
    if (ctx_.alive(static_cast<int>(w))) throw;
  }
  replies_[w] = core::Work();
}

StalenessStats PsServer::staleness() const {
  std::lock_guard<runtime::Mutex> lock(*stats_mutex_);
  return stats_;
}

std::int64_t PsServer::max_clock_lag() const {
  std::lock_guard<runtime::Mutex> lock(*stats_mutex_);
  return max_clock_lag_;
}

}  // namespace fast::strategy
