// Strategy `ps` in modes async and ssp when a server's host is lost (include/fast/strategy/ps.hpp,
// "A lost server"): the shard moves to a survivor, which serves it from its own copy; and the end
// of an asynchronous run, which waits for every server's `closed` while shards may still move.

#include <algorithm>
#include <exception>
#include <string>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/successor.hpp"
#include "fast/runtime/time_limit.hpp"
#include "fast/strategy/ps.hpp"
#include "ps_server.hpp"

namespace fast::strategy {

using namespace ps_protocol;

namespace {
constexpr double kWatchSeconds = 0.05;  // finish() looks for lost hosts this often while it waits
}  // namespace

bool PsStrategy::moves_shards() const { return mode_ != PsMode::sync && !compresses(options_) && !dgc_; }

std::span<float> PsStrategy::slot_shard(int k) { return shard_of(slot_.as<float>(), k); }

void PsStrategy::on_shards(const char* what, std::span<float> params, Moves moves,
                           const std::function<std::vector<core::Work>(int)>& each) {
  const runtime::Context& ctx = comm_.context();
  std::vector<int> todo(static_cast<std::size_t>(servers_));
  for (int k = 0; k < servers_; ++k) todo[static_cast<std::size_t>(k)] = k;
  while (!todo.empty()) {
    // Every shard's exchange is under way before any is waited for.
    std::vector<std::vector<core::Work>> works(todo.size());
    std::vector<int> sent_to(todo.size());
    std::vector<char> bad(todo.size(), 0);
    std::exception_ptr first;
    const auto fail = [&](std::size_t i) {
      bad[i] = 1;
      if (!first) first = std::current_exception();
    };
    for (std::size_t i = 0; i < todo.size(); ++i) {
      sent_to[i] = server_rank_[static_cast<std::size_t>(todo[i])];
      try {
        works[i] = each(todo[i]);
      } catch (const core::PeerLost&) {
        fail(i);
      }
    }
    for (std::size_t i = 0; i < todo.size(); ++i) {
      if (bad[i]) continue;
      try {
        wait_watching(works[i], params);
      } catch (const core::PeerLost&) {
        fail(i);
      }
    }
    // A shard that moved meanwhile (this worker took it over while it waited, or joined its new
    // host for another shard's sake) is done again at its new host even where the old one answered:
    // the new server counts this worker's pushes from the exchange under way.
    std::vector<int> failed;
    bool hosts_lost = true;
    for (std::size_t i = 0; i < todo.size(); ++i) {
      const bool moved = server_rank_[static_cast<std::size_t>(todo[i])] != sent_to[i];
      if (!bad[i] && !moved) continue;
      failed.push_back(todo[i]);
      hosts_lost = hosts_lost && runtime::ever_lost(ctx, sent_to[i]);
    }
    if (failed.empty()) return;
    if (moves == Moves::none || !moves_shards() || !hosts_lost) {
      if (!first) FAST_THROW(core::PeerLost, "ps: {}: a shard moved while it was read for the last time", what);
      throw_lost_shard(what, first);
    }
    move_lost_shards(params, moves == Moves::join);
    todo = std::move(failed);
  }
}

// While it waits, this worker takes over every shard whose lost host it succeeds: the others may be
// waiting for its server (their join), and their progress for what this worker waits on (ssp).
// The whole wait is bounded by the operation time limit, as a plain wait is: a server that never
// answers (its worker returned without finish(), a world that hangs) ends in TimeoutError.
void PsStrategy::wait_watching(const std::vector<core::Work>& works, std::span<float> params) {
  if (moves_shards()) {
    const runtime::Context& ctx = comm_.context();
    const double limit = ctx.operation_time_limit();
    const double start = ctx.now();
    bool timed_out = false;
    for (const core::Work& w : works) {
      try {
        while (!timed_out && !w.wait(kWatchSeconds)) {
          take_lost_shards(params);
          check_servers();
          timed_out = ctx.now() - start >= limit;
        }
      } catch (const std::exception&) {
        break;  // wait_all below rethrows, once every Work completed
      }
    }
    if (timed_out) throw core::TimeoutError(runtime::time_limit_message("ps: a parameter server's answer", limit));
  }
  core::wait_all(works);
}

// A server of this worker that ended before every worker was done ended with an error (a protocol
// violation, the world failed): its error, rather than a wait for an answer that never comes.
void PsStrategy::check_servers() { wait_servers(true); }

void PsStrategy::wait_servers(bool ended_only) {
  const auto wait = [ended_only](core::Work& work, bool& running) {
    if (!running || (ended_only && !work.is_completed())) return;
    running = false;
    work.wait();
  };
  wait(server_work_, server_running_);
  for (Moved& m : moved_) wait(m.work, m.running);
}

void PsStrategy::take_lost_shards(std::span<float> params) {
  const runtime::Context& ctx = comm_.context();
  for (int k = 0; k < servers_; ++k) {
    const int host = server_rank_[static_cast<std::size_t>(k)];
    if (settled(k) || !runtime::ever_lost(ctx, host)) continue;
    if (succeeds(host)) take_shard(k, host, params);
  }
}

bool PsStrategy::settled(int k) const { return !closed_.empty() && closed_[static_cast<std::size_t>(k)] != 0; }

// Only a worker that was never lost can be the successor; a new process in a lost one's place
// knows no loss from before it came, so it never takes a shard over (the survivors, who saw every
// loss, agree on who does).
bool PsStrategy::succeeds(int lost) const {
  return !newcomer_ && runtime::successor(comm_.context(), lost) == comm_.context().rank();
}

void PsStrategy::move_lost_shards(std::span<float> params, bool join) {
  const runtime::Context& ctx = comm_.context();
  for (int k = 0; k < servers_; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    while (!settled(k) && runtime::ever_lost(ctx, server_rank_[ku])) {
      const int lost = server_rank_[ku];
      if (succeeds(lost)) {
        take_shard(k, lost, params);
        continue;
      }
      server_rank_[ku] = find_host(k, params);
      core::log(core::LogLevel::debug, "ps: worker {}: shard {} moves from worker {} to worker {}", ctx.rank(), k, lost,
                server_rank_[ku]);
      if (!join) continue;
      try {
        join_shard(k, params);
      } catch (const core::PeerLost&) {
        if (!runtime::ever_lost(ctx, server_rank_[ku])) throw;  // else the loop moves it on
      }
    }
  }
}

// This worker serves shard k from here on, starting from its parameters' slice (the shard as it
// last pulled it) with a fresh optimizer. The slice goes into the slot and the flag is set under
// the window's guard; nobody reads the range before its server answered their join.
void PsStrategy::take_shard(int k, int lost, std::span<float> params) {
  const int me = comm_.context().rank();
  server_rank_[static_cast<std::size_t>(k)] = me;
  core::log(core::LogLevel::warn,
            "ps: the server of shard {} (on worker {}) was lost; worker {} serves it from here on, from the shard as "
            "it last read it (the updates since then and the shard's optimizer state are lost)",
            k, lost, me);
  const std::span<float> memory = slot_shard(k);
  std::uint64_t version = 0;
  {
    collective::Window::Local local = window_->local();
    std::ranges::copy(shard_of(params, k), memory.begin());
    slot_.as<float>()[params.size() + 1 + static_cast<std::size_t>(k)] = 1;
    version = local.version();
  }
  Moved m{.shard = k};
  m.server = std::make_unique<PsServer>(server_context(), mode_, options_.staleness, k, memory, memory,
                                        options_.optimizer, "none", &meter_, nullptr, generation_);
  m.server->attach(*window_);
  m.server->set_lr_by_lag(options_.lr_staleness == "inverse");
  m.server->take_over(params.size());
  const auto ku = static_cast<std::size_t>(k);
  first_clock_[ku] = -clock_;  // this worker's pushes count from 0 at the new server
  version_read_[ku] = version;
  m.work = server_context().spawn(fmt::format("ps server {} (shard {})", me, k),
                                  [server = m.server.get()] { server->run(); });
  m.running = true;
  moved_.push_back(std::move(m));
}

// A `join` to shard k's server; its acknowledgement gives this worker's push count there and the
// version its pushes read from until the next pull.
void PsStrategy::join_shard(int k, std::span<float> params) {
  runtime::Context& ctx = comm_.context();
  const auto ku = static_cast<std::size_t>(k);
  const int host = server_rank_[ku];
  const Header join = Request{.kind = Request::Kind::join}.to_words();
  std::vector<core::Work> works;
  works.push_back(ctx.recv(host, wire_tag(k, kReply), core::MutableView(std::span<std::int64_t>(acks_[ku]))));
  works.push_back(ctx.send(host, wire_tag(k, kRequest), core::ConstView(std::span<const std::int64_t>(join))));
  wait_watching(works, params);
  first_clock_[ku] = acks_[ku][0] - clock_;
  version_read_[ku] = static_cast<std::uint64_t>(acks_[ku][2]);
}

void PsStrategy::join_shard_when_lost(int k, std::span<float> params) {
  try {
    join_shard(k, params);
  } catch (const core::PeerLost&) {
    const auto ku = static_cast<std::size_t>(k);
    if (!runtime::ever_lost(comm_.context(), server_rank_[ku])) throw_lost_shard("rejoin", std::current_exception());
    move_lost_shards(params, true);  // joins the new host
  }
}

// The host of shard k: the live worker whose slot flags it (a lost host's slot is out of reach, and
// a new process's flags are clear, so a flag found is the current host's). Until the successor of a
// lost host has taken the shard over nobody flags it: the reads are repeated every kWatchSeconds,
// this worker taking over what it succeeds to meanwhile, up to the operation time limit.
int PsStrategy::find_host(int k, std::span<float> params) {
  runtime::Context& ctx = comm_.context();
  const std::size_t d = offsets_.back();
  const double limit = ctx.operation_time_limit();
  const double start = ctx.now();
  float flag = 0;
  for (;;) {
    for (int w = 0; w < ctx.size(); ++w) {
      // A rank that was ever lost serves nothing (a new process in its place takes no shard over).
      if (w == ctx.rank() || runtime::ever_lost(ctx, w)) continue;
      const double since = ctx.now();
      try {
        window_
            ->get(w, core::MutableView(&flag, 1, core::DType::f32), d + 1 + static_cast<std::size_t>(k), nullptr,
                  collective::Wire::exact)
            .wait();
      } catch (const core::PeerLost&) {
        if (!runtime::lost_since(ctx, w, since)) throw;
        continue;
      }
      if (flag != 0) return w;
    }
    if (std::ranges::any_of(moved_, [k](const Moved& m) { return m.shard == k; }))
      return ctx.rank();  // taken over meanwhile
    if (limit > 0 && ctx.now() - start > limit)
      FAST_THROW(core::PeerLost, "ps: no live worker serves shard {} after {:.0f} s (its host was lost)", k, limit);
    ctx.sleep(kWatchSeconds);
    take_lost_shards(params);
    check_servers();
  }
}

// async / ssp. The flag first, so that a server placed anew counts this worker done even where
// this worker never learns of the move; then `done` to every server and its `closed`, waited for in
// slices while lost hosts move (this worker may be the one to take a shard over, and its servers
// must run until everyone is done); then the final shards, exactly.
void PsStrategy::finish_async(std::span<float> params) {
  runtime::Context& ctx = comm_.context();
  const std::size_t d = offsets_.back();
  {
    collective::Window::Local local = window_->local();
    slot_.as<float>()[d] = 1;
  }
  const auto k_count = static_cast<std::size_t>(servers_);
  const Header done = Request{.kind = Request::Kind::done, .clock = clock_}.to_words();
  std::vector<std::int64_t> closed(k_count);
  std::vector<core::Work> closing(k_count);
  std::vector<int> told(k_count, -1);  // the host each shard's `done` went to
  closed_.assign(k_count, 0);          // a shard closed stays where it is (settled())
  for (;;) {
    if (moves_shards()) move_lost_shards(params, false);
    on_shards("finish", params, Moves::no_join, [&](int k) {
      const auto ku = static_cast<std::size_t>(k);
      const int host = server_rank_[ku];
      if (closed_[ku] || told[ku] == host) return std::vector<core::Work>{};
      closing[ku] = ctx.recv(host, wire_tag(k, kClosed), core::MutableView(&closed[ku], 1, core::DType::i64));
      told[ku] = host;
      return std::vector<core::Work>{
          ctx.send(host, wire_tag(k, kRequest), core::ConstView(std::span<const std::int64_t>(done)))};
    });
    bool all = true;
    for (std::size_t k = 0; k < k_count; ++k) {
      if (closed_[k]) continue;
      try {
        if (closing[k].wait(kWatchSeconds))
          closed_[k] = 1;
        else
          all = false;
      } catch (const core::PeerLost&) {
        if (!moves_shards() || !runtime::ever_lost(ctx, told[k])) throw_lost_shard("finish", std::current_exception());
        all = false;  // the next round moves it and tells the new host
      }
    }
    if (all) break;
    check_servers();
  }
  wait_servers(false);  // they sent `closed`: each ends once its last answers are out
  pull("final pull", params, Moves::none, collective::Wire::exact);  // the final model, exactly
  window_->close();
  if (dgc_ && dgc_->options().local_view) dgc_->view(params, {});  // keeps the final x, leaves it there
}

}  // namespace fast::strategy
