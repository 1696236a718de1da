// ZmqTransport's rejoins (transport.hpp): the process that serves the rendezvous (process 0, or a
// survivor that took it over) answers the hellos of processes that take a lost rank back; every
// process revives a rank it is told about.
#include <zmq_addon.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "hello.hpp"
#include "rendezvous.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

using nlohmann::json;

namespace {
constexpr int kMaxHellosPerWakeUp = 16;
constexpr double kLiveRankGraceSeconds = 2;  // a rank still live after peer_timeout + this: refused
// While the rendezvous's server is lost and its address still bound (a process counted lost that
// still runs, until it leaves), the process that should take it over tries again this often.
constexpr double kDeskRetrySeconds = 1;

// The answer to a newcomer once the workers of the process that serves the rendezvous are done
// (ZmqTransport::finishing_): the run ends without it ("ending": it exits with 0), or, when those
// workers failed (`error`), the run failed ("failed": it ends with PeerLost, exit code 3, which
// fast launch --restart answers by starting the whole group again; restart_policy.hpp).
json end_answer(const std::string& error) {
  if (error.empty()) return {{"ending", "the workers of the process that serves the rendezvous are done"}};
  return {{"failed", fmt::format("the workers of the process that serves the rendezvous failed: {}", error)}};
}
}  // namespace

bool ZmqTransport::on_rendezvous_host(int process, std::size_t address) const {
  const ProcessInfo& p = table_[static_cast<std::size_t>(process)];
  if (address == 0) return p.host_id == table_[0].host_id;
  const RendezvousAddress& a = settings_.rendezvous_fallbacks.at(address - 1);
  const std::string reached_at = endpoint_host(p.tcp_endpoint);
  if (reached_at == a.host || std::ranges::find(a.numeric, reached_at) != a.numeric.end()) return true;
  // By host name only where the address does not resolve: hosts of containers or network
  // namespaces often share one name.
  return a.numeric.empty() && p.hostname == a.host;
}

bool ZmqTransport::take_over_desk() {
  const int processes = static_cast<int>(table_.size());
  int lost = 0;  // not by a clean end
  std::vector<bool> live(static_cast<std::size_t>(processes));
  bool desk_ended = false;  // the server ended its work cleanly
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    for (int p = 0; p < processes; ++p) {
      const PeerState& peer = peers_[static_cast<std::size_t>(p)];
      if (peer.lost && !peer.ended) ++lost;
      live[static_cast<std::size_t>(p)] = !peer.lost;
      if (p == desk_process_) desk_ended = peer.ended;
    }
  }
  const double now = clock();
  if (lost == losses_seen_ && now < next_desk_try_) return false;  // a try per loss, then one a second
  losses_seen_ = lost;
  next_desk_try_ = now + kDeskRetrySeconds;
  // Served still, or its server finished the run: the others are finishing too, and a rank that
  // ended its work is not taken back, so nobody takes the address over at the end of a run.
  if (live[static_cast<std::size_t>(desk_process_)] || desk_ended) return false;
  // The first address whose host has a live process; its lowest live process serves it.
  for (std::size_t address = 0; address <= settings_.rendezvous_fallbacks.size(); ++address) {
    int server = -1;
    for (int p = 0; p < processes && server < 0; ++p)
      if (live[static_cast<std::size_t>(p)] && on_rendezvous_host(p, address)) server = p;
    if (server < 0) continue;
    if (server != process_) return false;
    std::optional<::zmq::socket_t> desk = bind_rendezvous(context_, settings_, address);
    if (!desk) {
      core::log(core::LogLevel::debug,
                "zmq runtime: the rendezvous address {} is still served (or not an address of this host): process {} "
                "does not take it over",
                rendezvous_endpoint(settings_, address), process_);
      return false;
    }
    desk->set(::zmq::sockopt::linger, 0);
    desk_ = std::move(desk);
    desk_process_ = process_;
    for (int q = 0; q < processes; ++q)  // so that none of them takes another address over
      if (q != process_ && live[static_cast<std::size_t>(q)]) send_hello(q, {{"desk", process_}});
    core::log(core::LogLevel::warn,
              "zmq runtime: process {} serves the rendezvous now, at {}, in place of a lost process: lost ranks can "
              "be taken back",
              process_, rendezvous_endpoint(settings_, address));
    return true;
  }
  return false;
}

void ZmqTransport::serve_rejoins(::zmq::socket_t desk) {
  FAST_ENFORCE_AS(core::InvalidUsage, !thread_.joinable(), "zmq runtime: serve_rejoins() after start()");
  desk.set(::zmq::sockopt::linger, 0);
  desk_ = std::move(desk);
}

void ZmqTransport::answer_newcomer(const std::string& id, const json& body) {
  std::vector<::zmq::message_t> reply = hello_parts(body);
  reply.insert(reply.begin(), ::zmq::message_t(id.data(), id.size()));
  (void)::zmq::send_multipart(*desk_, reply, ::zmq::send_flags::dontwait);
}

void ZmqTransport::send_hello(int process, const json& body) {
  send_frame(process, control_frame(wire::FrameKind::hello, table_[static_cast<std::size_t>(process)], body.dump()));
}

int ZmqTransport::free_rank() const {
  std::lock_guard<std::mutex> lock(peers_mutex_);
  const auto free = [&](int p, bool vacant) {
    const PeerState& s = peers_[static_cast<std::size_t>(p)];
    return table_[static_cast<std::size_t>(p)].vacant == vacant && s.lost && !s.ended &&
           std::ranges::none_of(pending_, [p](const PendingRejoin& q) { return q.info.rank == p; });
  };
  for (const bool vacant : {true, false})
    for (int p = 0; p < static_cast<int>(table_.size()); ++p)
      if (free(p, vacant)) return p;
  return -1;
}

ProcessInfo ZmqTransport::checked_rejoin_hello(const json& hello, const ::zmq::message_t& frame) const {
  const int processes = static_cast<int>(table_.size());
  ProcessInfo info = process_from_json(hello.at("process"));
  const int world = json_int<int>(hello, "world_size", 1, kMaxProcesses, "rejoin hello");
  FAST_ENFORCE(world == settings_.world_size, "world size: expected {}, got {}", settings_.world_size, world);
  const int most =
      hello.contains("max_processes") ? json_int<int>(hello, "max_processes", 1, kMaxProcesses, "rejoin hello") : world;
  FAST_ENFORCE(most == processes,
               "the processes the run may grow to (--max-workers / workers-per-process): "
               "expected {}, got {}",
               processes, most);
  FAST_ENFORCE(!info.vacant, "its hello describes no process (vacant)");
  const std::string settings = hello.contains("settings") ? hello.at("settings").get<std::string>() : std::string();
  if (const std::string differs = settings_difference(settings, "that process", settings_.shared_settings, "the run");
      !differs.empty())
    FAST_THROW(core::InvalidArgument,
               "it was started with other settings than the run: {} (a process that joins takes the run's "
               "settings)",
               differs);
  FAST_ENFORCE(info.workers == workers_per_process_, "workers per process: expected {}, got {}", workers_per_process_,
               info.workers);
  if (!settings_.insecure) {
    const char* key = zmq_msg_gets(frame.handle(), "User-Id");
    FAST_ENFORCE(key != nullptr && info.public_key == key, "public key: it names {} but connected with {}",
                 info.public_key, key ? key : "none");
  }
  if (info.rank < 0) {
    info.rank = free_rank();
    FAST_ENFORCE(info.rank >= 0,
                 "rank: no rank of the run is lost or vacant now; give the rank to take back "
                 "(FAST_PROCESS_RANK) to wait until it is lost");
  }
  FAST_ENFORCE(info.rank >= 0 && info.rank < processes && info.rank != process_,
               "rank: expected a rank in [0, {}) to take back other than {} (this process, which serves the "
               "rendezvous), got {}",
               processes, process_, info.rank);
  info.first_worker = info.rank * info.workers;
  // Before any process is told: the answer must fit a hello (a run of many processes).
  const std::size_t answer = rejoin_answer(info).dump().size();
  FAST_ENFORCE(answer + 1024 <= kMaxHelloBytes,
               "the answer to it ({} bytes: the table of {} processes) would "
               "exceed a hello's {} bytes",
               answer, processes, kMaxHelloBytes);
  return info;
}

void ZmqTransport::drop_earlier_newcomer(const ProcessInfo& info) {
  const auto it = std::ranges::find_if(pending_, [&](const PendingRejoin& p) { return p.info.rank == info.rank; });
  if (it == pending_.end()) return;
  core::log(core::LogLevel::warn,
            "zmq runtime: pid {} on {} asks for rank {}, which pid {} on {} was taking back: the newer "
            "process takes it over",
            info.pid, info.hostname, info.rank, it->info.pid, it->info.hostname);
  answer_newcomer(it->id, {{"refused", fmt::format("a newer process (pid {} on {}) asks for rank {}", info.pid,
                                                   info.hostname, info.rank)}});
  pending_.erase(it);
}

void ZmqTransport::receive_rejoin_hellos() {
  for (int i = 0; i < kMaxHellosPerWakeUp; ++i) {
    std::vector<::zmq::message_t> parts;
    if (!::zmq::recv_multipart(*desk_, std::back_inserter(parts), ::zmq::recv_flags::dontwait)) return;
    if (parts.size() < 2) continue;
    const std::string id = parts[0].to_string();
    try {
      const json hello = read_hello(parts, 1);
      if (hello.contains("probe")) {  // a process started again looks for the address served (find_desk)
        answer_newcomer(id, {{"serving", process_}});
        continue;
      }
      if (finishing_.load()) {  // not a refusal (exit code 2 would make fast launch start the group again)
        answer_newcomer(id, end_answer(finish_error_));
        continue;
      }
      ProcessInfo info = checked_rejoin_hello(hello, parts[1]);
      drop_earlier_newcomer(info);
      core::log(core::LogLevel::info, "zmq runtime: pid {} on {} asks for rank {}", info.pid, info.hostname, info.rank);
      pending_.push_back({.id = id, .info = std::move(info), .since = clock()});
    } catch (const std::exception& e) {
      core::log(core::LogLevel::warn, "zmq runtime: refused a process that asked to join the run: {}", e.what());
      try {
        answer_newcomer(id, {{"refused", e.what()}});
      } catch (const std::exception&) {
      }
    }
  }
}

void ZmqTransport::progress_rejoins() {
  const double now = clock();
  if (finishing_.load()) {  // its workers are done: a newcomer would wait for an admission that never comes
    for (const PendingRejoin& p : pending_) answer_newcomer(p.id, end_answer(finish_error_));
    pending_.clear();
    return;
  }
  // One rejoin announced at a time: a newcomer's answer holds the table with every earlier
  // newcomer, and each earlier newcomer is live, so told of the later ones. Announced together,
  // two newcomers could each miss the other (one answered before the other was revived, the other
  // announced before the first was), and count each other lost.
  bool announcing = std::ranges::any_of(pending_, [](const PendingRejoin& p) { return p.announced; });
  for (auto it = pending_.begin(); it != pending_.end();) {
    PendingRejoin& p = *it;
    const int r = p.info.rank;
    bool done = false;
    if (!p.announced) {
      bool lost = false, ended = false;
      double heard = 0;
      {
        std::lock_guard<std::mutex> lock(peers_mutex_);
        lost = peers_[static_cast<std::size_t>(r)].lost;
        ended = peers_[static_cast<std::size_t>(r)].ended;
        heard = peers_[static_cast<std::size_t>(r)].last_heard;
      }
      if (ended) {
        answer_newcomer(p.id, {{"refused", fmt::format("rank {} ended its work cleanly; only a lost rank can be "
                                                       "taken back",
                                                       r)}});
        done = true;
      } else if (lost && announcing) {
        // It waits for the rejoin under way (bounded by that one's --rendezvous-timeout).
      } else if (lost) {
        p.announced = true;
        announcing = true;
        for (int q = 0; q < static_cast<int>(table_.size()); ++q)
          if (q != r && q != process_ && !lost_[static_cast<std::size_t>(q)].load()) {
            send_hello(q, {{"rejoin", to_json(p.info)}});
            p.awaiting.push_back(q);
          }
      } else if (now - p.since > settings_.peer_timeout + kLiveRankGraceSeconds) {
        answer_newcomer(p.id, {{"refused", fmt::format("rank {} is live (heard from {:.1f} s ago); a rank can be taken "
                                                       "back only once it is lost (--peer-timeout {} s of silence)",
                                                       r, now - heard, settings_.peer_timeout)}});
        done = true;
      }
    }
    if (p.announced && !done) {
      std::erase_if(p.awaiting, [&](int q) { return lost_[static_cast<std::size_t>(q)].load(); });
      if (p.awaiting.empty()) {
        revive(p.info);
        answer_rejoin(p);
        done = true;
      } else if (now - p.since > settings_.rendezvous_timeout) {
        answer_newcomer(p.id, {{"refused", fmt::format("processes {} did not acknowledge the rejoin of rank {} within "
                                                       "{} s ({})",
                                                       fmt::join(p.awaiting, ", "), r, settings_.rendezvous_timeout,
                                                       settings_.rendezvous_timeout_name)}});
        done = true;
      }
    }
    it = done ? pending_.erase(it) : std::next(it);
  }
}

json ZmqTransport::rejoin_answer(const ProcessInfo& info) const {
  std::vector<int> lost = ever_lost();
  const std::vector<int> taken = rejoined();
  json list = json::array();
  std::lock_guard<std::mutex> lock(peers_mutex_);
  for (const ProcessInfo& q : table_) list.push_back(to_json(q.rank == info.rank ? info : q));
  // Ranks still vacant: the newcomer reads them from the table.
  std::erase_if(lost, [&](int w) {
    const int p = process_of(w);
    return p != info.rank && table_[static_cast<std::size_t>(p)].vacant;
  });
  return {{"your_rank", info.rank}, {"processes", list},    {"rejoin", true},
          {"desk", process_},       {"lost_workers", lost}, {"rejoined_workers", taken}};
}

void ZmqTransport::answer_rejoin(const PendingRejoin& p) {
  try {
    answer_newcomer(p.id, rejoin_answer(p.info));
  } catch (const std::exception& e) {  // checked before the announce (receive_rejoin_hellos): not expected
    core::log(core::LogLevel::error, "zmq runtime: cannot answer {}: {}", p.info.where(), e.what());
  }
}

void ZmqTransport::on_hello_frame(int from, const ::zmq::message_t& payload) {
  FAST_ENFORCE(payload.size() <= kMaxHelloBytes, "frame: hello of {} bytes exceeds {}", payload.size(), kMaxHelloBytes);
  json body;
  try {
    body = json::parse(payload.to_string_view());
  } catch (const json::exception& e) {
    FAST_THROW(core::InvalidArgument, "frame: malformed hello: {}", e.what());
  }
  const int processes = static_cast<int>(table_.size());
  if (body.contains("rejoin")) {
    // From the process that serves the rendezvous: process 0, or the survivor that took it over.
    ProcessInfo info = process_from_json(body.at("rejoin"));
    FAST_ENFORCE(!info.vacant && info.rank >= 0 && info.rank < processes && info.rank != process_ &&
                     info.rank != from && info.workers == workers_per_process_ &&
                     info.first_worker == info.rank * info.workers,
                 "frame: rejoin of rank {} (workers [{}, +{})) announced by process {}: not a rank another process "
                 "can take back",
                 info.rank, info.first_worker, info.workers, from);
    revive(info);
    desk_process_ = from;
    send_hello(from, {{"ack", info.rank}, {"pid", info.pid}});  // the pid: which newcomer (one may replace another)
  } else if (body.contains("desk")) {  // from a process that took the rendezvous over (take_over_desk)
    FAST_ENFORCE(json_int<int>(body, "desk", 0, processes - 1, "frame: desk") == from,
                 "frame: process {} announced another process as the rendezvous's server: {}", from,
                 body.dump().substr(0, 100));
    desk_process_ = from;
  } else if (body.contains("ack") && body.at("ack").is_number_integer()) {
    FAST_ENFORCE(desk_.has_value(), "frame: a rejoin acknowledgement reached process {}, which serves no rendezvous",
                 process_);
    const int r = json_int<int>(body, "ack", 0, kMaxProcesses - 1, "frame: rejoin acknowledgement");
    const auto pid = body.contains("pid") ? json_int<std::int64_t>(body, "pid", 0, INT64_MAX,
                                                                   "frame: rejoin "
                                                                   "acknowledgement")
                                          : std::int64_t{-1};
    for (PendingRejoin& p : pending_)
      if (p.info.rank == r && (pid < 0 || p.info.pid == pid)) std::erase(p.awaiting, from);
  } else if (body.contains("still_member")) {  // from a process whose I/O thread was held up (transport_stall.cpp)
    on_membership_query(from);
  } else if (body.contains("member")) {
    if (stall_check_) stall_check_->answered = true;
  } else if (body.contains("counted_lost") && body.at("counted_lost").is_string()) {
    // Only as the answer to this process's question (an old answer that reaches a process started
    // again on the same port is not one).
    if (stall_check_) expel_self(body.at("counted_lost").get<std::string>());
  } else if (body.contains("stream") && body.at("stream").is_object()) {
    on_stream_offer(from, body.at("stream"));
  } else if (body.contains("shm") || body.contains("shm_ready") || body.contains("shm_refused")) {
    on_shared_hello(from, body);
  } else {
    FAST_THROW(core::InvalidArgument,
               "frame: hello: expected 'rejoin', 'ack', 'desk', 'still_member', 'member', 'counted_lost', a "
               "stream's or a shared-memory ring's, got {}",
               body.dump().substr(0, 200));
  }
}

std::vector<int> ZmqTransport::ever_lost() const {
  std::vector<int> workers;
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    for (const MembershipEvent& e : events_)
      if (!e.joined) workers.push_back(e.worker);
    // Processes that ended cleanly leave no event, but are not alive: ever_lost counts them here.
    for (std::size_t p = 0; p < peers_.size(); ++p)
      if (peers_[p].ended)
        for (int w = table_[p].first_worker; w < table_[p].first_worker + table_[p].workers; ++w) workers.push_back(w);
  }
  // std::sort/std::unique rather than std::ranges: clang-14 (the fuzz build) cannot compile the
  // subrange that std::ranges::unique returns with libstdc++ 12.
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  return workers;
}

std::vector<int> ZmqTransport::rejoined() const {
  std::vector<int> workers;
  std::lock_guard<std::mutex> lock(peers_mutex_);
  for (const MembershipEvent& e : events_)
    if (e.joined) workers.push_back(e.worker);
  if (workers.size() > kMaxInheritedRejoins)
    workers.erase(workers.begin(), workers.end() - static_cast<std::ptrdiff_t>(kMaxInheritedRejoins));
  return workers;
}

void ZmqTransport::set_desk_process(int process) {
  FAST_ENFORCE_AS(core::InvalidUsage, !thread_.joinable(), "zmq runtime: set_desk_process() after start()");
  FAST_ENFORCE(process >= 0 && process < static_cast<int>(table_.size()),
               "zmq runtime: the rendezvous's server: expected a process rank in [0, {}), got {}", table_.size(),
               process);
  desk_process_ = process;
}

void ZmqTransport::inherit_membership(const std::vector<int>& lost, const std::vector<int>& rejoined) {
  FAST_ENFORCE_AS(core::InvalidUsage, !thread_.joinable(), "zmq runtime: inherit_membership() after start()");
  std::lock_guard<std::mutex> lock(peers_mutex_);
  for (int w : lost) {
    if (table_[static_cast<std::size_t>(process_of(w))].vacant) continue;  // its vacancy is an event already
    events_.push_back({.at = 0,
                       .worker = w,
                       .joined = false,
                       .before_join = true,
                       .detail = "lost before this process took its rank back (as the rendezvous told it)"});
  }
  for (int w : rejoined)
    events_.push_back({.at = 0,
                       .worker = w,
                       .joined = true,
                       .before_join = true,
                       .detail = "taken back before this process took its rank back (as the rendezvous told it)"});
}

void ZmqTransport::revive(const ProcessInfo& info) {
  const int r = info.rank;
  // This process may not have counted the old one lost yet: it is gone all the same (receives
  // from it fail now rather than at their time limit).
  if (!lost_[static_cast<std::size_t>(r)].load()) mark_lost(r, "was replaced: a new process took its rank back", false);
  retire_ring(r);  // before the new link: no payload of the old ring may reach the new process
  retire_stream(r);
  const bool was_vacant = !links_[static_cast<std::size_t>(r)];  // a vacant rank, taken for the first time
  if (was_vacant)
    links_[static_cast<std::size_t>(r)] = std::make_unique<PeerLink>(make_dealer(info));
  else
    links_[static_cast<std::size_t>(r)]->reopen(make_dealer(info));
  const char* took = was_vacant ? "took the vacant rank" : "took the rank back";
  pulse_links_[static_cast<std::size_t>(r)] = make_pulse_dealer(info);
  for (int w = info.first_worker; w < info.first_worker + info.workers; ++w) world_->revive_source(w);
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    table_[static_cast<std::size_t>(r)] = info;
    peers_[static_cast<std::size_t>(r)] = PeerState{.last_heard = clock()};
    for (int w = info.first_worker; w < info.first_worker + info.workers; ++w)
      events_.push_back({.at = world_->state().now(),
                         .worker = w,
                         .joined = true,
                         .detail = fmt::format("{} {}", info.where(), took)});
    lost_[static_cast<std::size_t>(r)] = false;
  }
  peers_cv_.notify_all();
  // This process's workers are done (finish() said bye to the others before this rank came): it
  // says bye to the newcomer too, which would otherwise wait for it as a member while it waits for
  // the newcomer to end.
  if (finishing_.load()) send_frame(r, control_frame(wire::FrameKind::bye, info, ""));
  offer_ring(r);
  if (wants_stream(r)) offer_stream(r);
  core::log(core::LogLevel::warn, "zmq runtime: worker{} {} {} the run: {} {}", info.workers > 1 ? "s" : "",
            info.workers > 1 ? fmt::format("[{}, {})", info.first_worker, info.first_worker + info.workers)
                             : std::to_string(info.first_worker),
            was_vacant ? "joined" : "rejoined", info.where(), took);
}

}  // namespace fast::runtime::zmq
