#include "rendezvous.hpp"

#include <signal.h>

#include <zmq_addon.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "authenticator.hpp"
#include "fast/core/counted.hpp"
#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/log.hpp"
#include "fast/core/stop_request.hpp"
#include "fast/runtime/zmq/serve.hpp"
#include "fast/wire/frame.hpp"
#include "handshake_monitor.hpp"
#include "hello.hpp"
#include "poll_signal.hpp"

namespace fast::runtime::zmq {

namespace {

using nlohmann::json;
using clock = std::chrono::steady_clock;

void secure_server(::zmq::socket_t& s, const Settings& settings) {
  if (settings.insecure) return;
  s.set(::zmq::sockopt::curve_server, 1);
  s.set(::zmq::sockopt::curve_secretkey, settings.secret_key);
}

std::string endpoint(const Settings& s) { return rendezvous_endpoint(s, 0); }

// The host (as given) and port of rendezvous address `address` (rendezvous_endpoint's numbering);
// std::out_of_range past the last.
std::pair<const std::string&, int> host_and_port(const Settings& s, std::size_t address) {
  if (address == 0) return {s.rendezvous_host, s.rendezvous_port};
  const RendezvousAddress& fallback = s.rendezvous_fallbacks.at(address - 1);
  return {fallback.host, fallback.port};
}

class Server {
 public:
  // auth: the context's handshake checks (nullptr: insecure), whose refusals a timeout reports.
  Server(::zmq::context_t& context, ::zmq::socket_t socket, const Settings& settings, const Authenticator* auth)
      : context_(context), socket_(std::move(socket)), s_(settings), auth_(auth) {}
  // Collects every hello (own first when given), answers everyone, returns the table. A process
  // that does not fit is answered with "refused": why, and not counted.
  ProcessTable run(std::optional<ProcessInfo> own);
  // The rendezvous socket, for the rejoins of a run under way (ZmqTransport::serve_rejoins).
  ::zmq::socket_t release() { return std::move(socket_); }

 private:
  // "" when a process of these settings (world: its world size, most: the processes its run may
  // grow to, settings: its shared settings) fits the run, else why not.
  std::string refusal(const ProcessInfo& p, int world, int most, const std::string& settings) const;
  // Counts the process in, or refuses it (answering it why; InvalidArgument for this process's own).
  bool admit(const std::string& who, ProcessInfo p, int world, int most, const std::string& settings = "");
  // The timeout's reasons: the hellos refused, and the handshakes refused (the authenticator's
  // allow-list, and `monitor`'s: a wrong server key, a client without CURVE).
  std::string refusals_text(const HandshakeMonitor& monitor) const;
  ::zmq::context_t& context_;
  ::zmq::socket_t socket_;
  const Settings& s_;
  const Authenticator* auth_;
  int refused_ = 0;
  std::string last_refusal_;
  std::string first_settings_;                                // the shared settings of the first process admitted
  std::vector<std::pair<std::string, ProcessInfo>> arrived_;  // routing id ("" for own), info
};

std::string Server::refusal(const ProcessInfo& p, int world, int most, const std::string& settings) const {
  if (p.vacant) return "its hello describes no process (vacant)";
  // The server's own settings; a standalone server (`fast rendezvous`) has none: the first process's.
  const std::string& run = s_.shared_settings.empty() ? first_settings_ : s_.shared_settings;
  if (const std::string differs = settings_difference(settings, "that process", run, "the run"); !differs.empty())
    return fmt::format(
        "the process on {} pid {} was started with other settings than the run: {} (every process of a run takes "
        "the same settings)",
        p.hostname, p.pid, differs);
  if (world != s_.world_size)
    return fmt::format("the process on {} pid {} has world size {}, expected {} (the rendezvous's --world-size)",
                       p.hostname, p.pid, world, s_.world_size);
  if (most != s_.max_processes)
    return fmt::format("the process on {} pid {} may grow to {} processes (--max-workers), expected {}", p.hostname,
                       p.pid, most, s_.max_processes);
  if (p.workers != s_.workers_per_process)
    return fmt::format("the process on {} pid {} has workers-per-process {}, expected {}", p.hostname, p.pid, p.workers,
                       s_.workers_per_process);
  if (p.rank >= s_.world_size)
    return fmt::format("the process on {} pid {} claims rank {}, expected < world size {}", p.hostname, p.pid, p.rank,
                       s_.world_size);
  for (const auto& [id, q] : arrived_)
    if (p.rank >= 0 && q.rank == p.rank)
      return fmt::format("two processes claim rank {} ({} pid {}, which arrived first, and {} pid {})", p.rank,
                         q.hostname, q.pid, p.hostname, p.pid);
  return "";
}

bool Server::admit(const std::string& who, ProcessInfo p, int world, int most, const std::string& settings) {
  const std::string why = refusal(p, world, most, settings);
  if (why.empty()) {
    if (first_settings_.empty()) first_settings_ = settings;
    core::log(core::LogLevel::debug, "rendezvous: the process on {} pid {} arrived ({} of {})", p.hostname, p.pid,
              arrived_.size() + 1, s_.world_size);
    arrived_.emplace_back(who, std::move(p));
    return true;
  }
  FAST_ENFORCE(!who.empty(), "rendezvous: {}", why);  // this process's own settings
  // Told why at once, rather than left to wait out its timeout; the others go on waiting for a
  // process that fits.
  std::vector<::zmq::message_t> reply = hello_parts({{"refused", why}});
  reply.insert(reply.begin(), ::zmq::message_t(who.data(), who.size()));
  ::zmq::send_multipart(socket_, reply);
  core::log(core::LogLevel::warn, "rendezvous: refused a process: {}", why);
  last_refusal_ = why;
  ++refused_;
  return false;
}

std::string Server::refusals_text(const HandshakeMonitor& monitor) const {
  std::string text;
  if (refused_ > 0) text = fmt::format("; {} refused, the last because {}", refused_, last_refusal_);
  const Authenticator::Refusals handshakes = auth_ != nullptr ? auth_->refusals() : Authenticator::Refusals{};
  if (handshakes.count > 0)
    text += fmt::format("; {} refused at the handshake, the last {}", core::counted(handshakes.count, "connection"),
                        handshakes.last);
  if (monitor.refused() > 0)
    text += fmt::format("; {} refused at the handshake (the last: {})", core::counted(monitor.refused(), "connection"),
                        monitor.last());
  return text;
}

// A process asked to stop (SIGINT, SIGTERM) while it waits at the rendezvous has nothing to save:
// core::NotAdmitted, with 128 + the signal.
void stop_if_requested(const std::string& at) {
  if (const int signal = core::stop_requested())
    throw core::NotAdmitted(fmt::format("interrupted by {} while it waited for the rendezvous at {}: it has nothing to "
                                        "save",
                                        signal == SIGTERM ? "SIGTERM" : "SIGINT", at),
                            core::exit_code::killed_by(signal));
}

ProcessTable Server::run(std::optional<ProcessInfo> own) {
  HandshakeMonitor monitor(context_, socket_);  // detached before the socket is released
  if (own) admit("", *own, s_.world_size, s_.max_processes);
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s_.rendezvous_timeout));
  while (static_cast<int>(arrived_.size()) < s_.world_size) {
    FAST_ENFORCE_AS(core::TimeoutError, clock::now() < deadline,
                    "rendezvous at {}: {} of {} processes arrived within {} s ({}){}", endpoint(s_), arrived_.size(),
                    s_.world_size, s_.rendezvous_timeout, s_.rendezvous_timeout_name, refusals_text(monitor));
    stop_if_requested(endpoint(s_));
    ::zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}, {monitor.events().handle(), 0, ZMQ_POLLIN, 0}};
    poll_through_signals(items, 2, std::chrono::milliseconds(100));
    if ((items[1].revents & ZMQ_POLLIN) != 0) monitor.log_refusals();
    std::vector<::zmq::message_t> parts;
    if (!::zmq::recv_multipart(socket_, std::back_inserter(parts), ::zmq::recv_flags::dontwait)) continue;
    int world = 0;
    int most = 0;
    std::string settings;
    ProcessInfo info;
    try {
      const json hello = read_hello(parts, 1);
      if (hello.contains("probe")) {  // a process started again with several addresses (find_desk)
        std::vector<::zmq::message_t> reply = hello_parts({{"serving", 0}});
        reply.insert(reply.begin(), ::zmq::message_t(parts[0].data(), parts[0].size()));
        ::zmq::send_multipart(socket_, reply);
        continue;
      }
      world = json_int<int>(hello, "world_size", 1, kMaxProcesses, "hello");
      most = hello.contains("max_processes") ? json_int<int>(hello, "max_processes", 1, kMaxProcesses, "hello") : world;
      info = process_from_json(hello.at("process"));
      if (hello.contains("settings")) settings = hello.at("settings").get<std::string>();
    } catch (const std::exception& e) {
      core::log(core::LogLevel::warn, "rendezvous: ignored a malformed hello: {}", e.what());
      continue;
    }
    (void)admit(parts[0].to_string(), std::move(info), world, most, settings);
  }
  // Ranks: given ones stay, the others in arrival order.
  std::vector<bool> taken(static_cast<std::size_t>(s_.world_size));
  for (auto& [id, p] : arrived_)
    if (p.rank >= 0) taken[static_cast<std::size_t>(p.rank)] = true;
  int next = 0;
  for (auto& [id, p] : arrived_) {
    if (p.rank >= 0) continue;
    while (taken[static_cast<std::size_t>(next)]) ++next;
    p.rank = next;
    taken[static_cast<std::size_t>(next)] = true;
  }
  // The ranks past the starting processes' (a run that may grow) are vacant until processes join.
  ProcessTable table;
  for (int r = 0; r < s_.max_processes; ++r) table.push_back(vacant_process(r, s_.workers_per_process));
  for (auto& [id, p] : arrived_) {
    p.first_worker = p.rank * p.workers;
    table[static_cast<std::size_t>(p.rank)] = p;
  }
  json list = json::array();
  for (const ProcessInfo& p : table) list.push_back(to_json(p));
  for (auto& [id, p] : arrived_) {
    if (id.empty()) continue;
    std::vector<::zmq::message_t> reply = hello_parts({{"your_rank", p.rank}, {"processes", list}});
    reply.insert(reply.begin(), ::zmq::message_t(id.data(), id.size()));
    ::zmq::send_multipart(socket_, reply);
  }
  return table;
}

// The public key the clients of rendezvous address `address` expect its server to hold: the
// allow-list's key of that address (its only key when it holds one).
const std::string& expected_server_key(const Settings& s, std::size_t address) {
  return s.allowed_keys.at(s.allowed_keys.size() == 1 ? 0 : address);
}

// Why this process must not serve rendezvous address `address` ("" when it may): a key other than
// the one its clients expect, with which their CURVE handshakes would fail unheard.
std::string wrong_server_key(const Settings& s, std::size_t address) {
  if (s.insecure || expected_server_key(s, address) == s.public_key) return "";
  return fmt::format(
      "rendezvous: this process would serve {} with the public key {} (its key pair, --key or FAST_KEY_FILE), but "
      "the other processes expect that address's server to hold {}, the allow-list's {}: their handshakes would "
      "fail unheard. Put the key of the rendezvous's host first in the allow-list (each further --rendezvous "
      "address's host's key after it, in order)",
      rendezvous_endpoint(s, address), s.public_key, expected_server_key(s, address),
      s.allowed_keys.size() == 1 ? std::string("only key") : fmt::format("key number {}", address + 1));
}

// The server of rendezvous address `address`, bound; nullopt when the address cannot be bound and
// !must (another process serves it, or it is another host's), IoError when it must. Once bound, a
// key other than the one its clients expect (wrong_server_key) is refused with InvalidArgument.
std::optional<::zmq::socket_t> try_serve(::zmq::context_t& context, const Settings& s, bool must,
                                         std::size_t address = 0) {
  ::zmq::socket_t socket(context, ::zmq::socket_type::router);
  socket.set(::zmq::sockopt::linger, 2000);
  secure_server(socket, s);
  const std::string at = rendezvous_endpoint(s, address);
  // ZeroMQ binds numeric addresses and interface names, not host names: a name (the first host of
  // `fast launch --hosts`, a host file's) is bound at the first address it resolves to that binds.
  const auto [host, port] = host_and_port(s, address);
  std::vector<std::string> resolved = numeric_addresses(host);
  const bool named = resolved.size() != 1 || resolved.front() != host;
  if (!named || resolved.empty()) resolved = {host};
  std::string failure;
  for (const std::string& numeric : resolved) {
    try {
      socket.bind(tcp_address(numeric, std::to_string(port)));
      failure.clear();
      break;
    } catch (const ::zmq::error_t& e) {
      if (failure.empty()) failure = e.what();
    }
  }
  if (!failure.empty()) {
    FAST_ENFORCE_AS(core::IoError, !must, "rendezvous: cannot listen on {}{}: {}", at,
                    named ? fmt::format(" (at {})", fmt::join(resolved, ", ")) : std::string(), failure);
    return std::nullopt;
  }
  const std::string wrong = wrong_server_key(s, address);
  FAST_ENFORCE(wrong.empty(), "{}", wrong);
  return socket;
}

// The list of worker ranks `key` of a rejoin's answer (absent: empty); InvalidArgument naming the key
// when it is not an array of at most `most` ranks in [0, workers).
std::vector<int> worker_list(const json& reply, const char* key, int workers, std::size_t most) {
  std::vector<int> list;
  if (!reply.contains(key)) return list;
  const json& value = reply.at(key);
  FAST_ENFORCE(value.is_array() && value.size() <= most,
               "rendezvous reply: '{}': expected an array of at most {} worker ranks, got {}", key, most,
               value.dump().substr(0, 200));
  for (const json& w : value) {
    FAST_ENFORCE(w.is_number_integer() && w.get<std::int64_t>() >= 0 && w.get<std::int64_t>() < workers,
                 "rendezvous reply: '{}': expected worker ranks in [0, {}), got {}", key, workers,
                 w.dump().substr(0, 50));
    list.push_back(w.get<int>());
  }
  return list;
}

// A server whose allow-list lacks this process's key refuses it at the CURVE handshake, before any
// hello, and answers nothing more: InvalidArgument naming the key, rather than a timeout.
void refuse_if_key_refused(const HandshakeMonitor& handshake, const Settings& s, const std::string& at) {
  FAST_ENFORCE(!handshake.auth_refused(),
               "rendezvous at {}: the server refused this process's key {} at the handshake: its allow-list lacks "
               "it; add the key (the .pub file of fast keygen) to the allow-list of every process of the run "
               "(--allow or FAST_ALLOW_FILE), or start this process with the key pair of an admitted host",
               at, s.public_key);
}

// A client of rendezvous address `address` (rendezvous_endpoint), with that address's server key.
::zmq::socket_t client_socket(::zmq::context_t& context, const Settings& s, std::size_t address) {
  ::zmq::socket_t socket(context, ::zmq::socket_type::dealer);
  socket.set(::zmq::sockopt::linger, 0);
  if (!s.insecure) {
    socket.set(::zmq::sockopt::curve_serverkey, expected_server_key(s, address));
    socket.set(::zmq::sockopt::curve_publickey, s.public_key);
    socket.set(::zmq::sockopt::curve_secretkey, s.secret_key);
  }
  socket.connect(rendezvous_endpoint(s, address));
  return socket;
}

// A process started again in a run under way whose --rendezvous lists several addresses: the first
// of them whose server answers a probe (ZmqTransport answers {"serving": rank}), probed at once
// and waited for until `deadline`. TimeoutError naming the addresses when none answers.
std::size_t find_desk(::zmq::context_t& context, const Settings& s, clock::time_point deadline) {
  const std::size_t n = 1 + s.rendezvous_fallbacks.size();
  std::vector<::zmq::socket_t> sockets;
  std::vector<::zmq::pollitem_t> items;
  for (std::size_t i = 0; i < n; ++i) {
    sockets.push_back(client_socket(context, s, i));
    ::zmq::send_multipart(sockets.back(), hello_parts({{"probe", true}}));
  }
  for (::zmq::socket_t& socket : sockets) items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
  std::vector<std::string> tried;
  for (std::size_t i = 0; i < n; ++i) tried.push_back(rendezvous_endpoint(s, i));
  std::vector<std::unique_ptr<HandshakeMonitor>> handshakes;  // every address's server shares the allow-list
  for (::zmq::socket_t& socket : sockets)
    handshakes.push_back(std::make_unique<HandshakeMonitor>(context, socket, HandshakeMonitor::Role::client));
  while (clock::now() < deadline) {
    for (std::size_t i = 0; i < n; ++i) {
      handshakes[i]->log_refusals();
      refuse_if_key_refused(*handshakes[i], s, tried[i]);
    }
    stop_if_requested(fmt::format("{}", fmt::join(tried, ", ")));
    poll_through_signals(items, std::chrono::milliseconds(100));
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<::zmq::message_t> parts;
      if (!::zmq::recv_multipart(sockets[i], std::back_inserter(parts), ::zmq::recv_flags::dontwait)) continue;
      try {
        if (read_hello(parts, 0).contains("serving")) return i;
      } catch (const std::exception& e) {
        core::log(core::LogLevel::warn, "rendezvous: ignored a malformed answer from {}: {}", tried[i], e.what());
      }
    }
  }
  FAST_THROW(core::TimeoutError,
             "rendezvous: none of {} serves the run within {} s ({}): is a process of one of these hosts live, and "
             "is this host's key in their allow-list?",
             fmt::join(tried, ", "), s.rendezvous_timeout, s.rendezvous_timeout_name);
}

RendezvousResult as_client(::zmq::context_t& context, const Settings& s, const ProcessInfo& self) {
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s.rendezvous_timeout));
  const bool under_way = s.restarted && s.tolerate_lost;
  const std::size_t address = under_way && !s.rendezvous_fallbacks.empty() ? find_desk(context, s, deadline) : 0;
  const std::string at = rendezvous_endpoint(s, address);
  if (address > 0) core::log(core::LogLevel::info, "rendezvous: {} serves the run now", at);
  ::zmq::socket_t socket = client_socket(context, s, address);
  json hello{{"world_size", s.world_size}, {"process", to_json(self)}};
  if (s.max_processes != s.world_size) hello["max_processes"] = s.max_processes;
  if (!s.shared_settings.empty()) hello["settings"] = s.shared_settings;
  HandshakeMonitor handshake(context, socket, HandshakeMonitor::Role::client);
  ::zmq::send_multipart(socket, hello_parts(hello));
  ::zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  for (;;) {  // in slices, so that a stop request ends the wait
    handshake.log_refusals();
    refuse_if_key_refused(handshake, s, at);
    stop_if_requested(at);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left <= std::chrono::milliseconds(0)) break;
    if (poll_through_signals(&item, 1, std::min(left, std::chrono::milliseconds(100))) > 0) break;
  }
  std::vector<::zmq::message_t> parts;
  FAST_ENFORCE_AS(core::TimeoutError,
                  ::zmq::recv_multipart(socket, std::back_inserter(parts), ::zmq::recv_flags::dontwait).has_value(),
                  "rendezvous at {}: no answer within {} s ({}): is every process started, with the same "
                  "--world-size (FAST_WORLD_SIZE), {}",
                  at, s.rendezvous_timeout, s.rendezvous_timeout_name,
                  s.insecure ? "and with --insecure (FAST_INSECURE=1) too? A server that authenticates (CURVE) does "
                               "not answer a process without keys."
                             : "and is this host's key in the server's allow-list? A server started with --insecure "
                               "(FAST_INSECURE=1) does not answer a process that authenticates.");
  const json reply = read_hello(parts, 0);
  if (reply.contains("refused"))
    FAST_THROW(core::InvalidArgument, "rendezvous at {}: the run refused this process: {}", at,
               reply.at("refused").get<std::string>());
  if (reply.contains("failed"))  // the run failed before it took this process back: exit code 3, as its survivors
    FAST_THROW(core::PeerLost, "rendezvous at {}: the run failed before it could take this process back ({})", at,
               reply.at("failed").is_string() ? reply.at("failed").get<std::string>() : "");
  if (reply.contains("ending"))  // the run ends without it: no failure (docs/faults.md, "Growing a run")
    throw core::NotAdmitted(fmt::format("the run at {} is ending ({}): this process has nothing to do", at,
                                        reply.at("ending").is_string() ? reply.at("ending").get<std::string>() : ""),
                            core::exit_code::ok);
  RendezvousResult result{.process_rank = json_int<int>(reply, "your_rank", 0, kMaxProcesses - 1, "rendezvous reply"),
                          .rejoining = reply.value("rejoin", false)};
  for (const json& p : reply.at("processes")) result.table.push_back(process_from_json(p));
  FAST_ENFORCE(static_cast<int>(result.table.size()) == s.max_processes && result.process_rank >= 0 &&
                   result.process_rank < s.max_processes &&
                   !result.table[static_cast<std::size_t>(result.process_rank)].vacant,
               "rendezvous: the table has {} processes and rank {}, expected {} processes", result.table.size(),
               result.process_rank, s.max_processes);
  if (result.rejoining) {
    const int workers = s.max_processes * s.workers_per_process;
    result.lost_workers = worker_list(reply, "lost_workers", workers, static_cast<std::size_t>(workers));
    result.rejoined_workers = worker_list(reply, "rejoined_workers", workers, kMaxInheritedRejoins);
    if (reply.contains("desk"))
      result.desk_process = json_int<int>(reply, "desk", 0, s.max_processes - 1, "rendezvous reply");
  }
  return result;
}

}  // namespace

std::string rendezvous_endpoint(const Settings& s, std::size_t address) {
  const auto [host, port] = host_and_port(s, address);
  return tcp_address(host, std::to_string(port));
}

std::optional<::zmq::socket_t> bind_rendezvous(::zmq::context_t& context, const Settings& s, std::size_t address) {
  // A survivor taking an address over mid-run declines, logged, rather than ending its run.
  if (const std::string wrong = wrong_server_key(s, address); !wrong.empty()) {
    core::log(core::LogLevel::warn, "zmq runtime: not taking the rendezvous over: {}", wrong);
    return std::nullopt;
  }
  return try_serve(context, s, false, address);
}

RendezvousResult rendezvous(::zmq::context_t& context, const Settings& s, ProcessInfo self, const Authenticator* auth) {
  std::optional<::zmq::socket_t> server;
  const bool first_start = !(s.restarted && s.tolerate_lost);  // else a run under way: a survivor serves
  // A process that joins a run under way never serves: it asks the run's server for a rank.
  if ((self.rank == 0 || self.rank < 0) && first_start) server = try_serve(context, s, self.rank == 0);
  if (self.rank == 0 && !first_start)
    core::log(core::LogLevel::info,
              "rendezvous: process 0 started again (FAST_RESTARTED=1): asking the server of {}{} (a survivor that "
              "took it over) to take rank 0 back",
              endpoint(s), s.rendezvous_fallbacks.empty() ? "" : ", or of the first other address that answers");
  if (!server) return as_client(context, s, self);
  if (self.rank < 0) self.rank = 0;
  Server srv(context, std::move(*server), s, auth);
  ProcessTable table = srv.run(self);
  return {.process_rank = 0, .table = std::move(table), .desk = srv.release()};
}

void serve_rendezvous(::zmq::context_t& context, const Settings& s, const Authenticator* auth) {
  std::optional<::zmq::socket_t> socket = try_serve(context, s, true);
  Server srv(context, std::move(*socket), s, auth);
  (void)srv.run(std::nullopt);
}

}  // namespace fast::runtime::zmq

namespace fast::runtime::zmq {

void serve_rendezvous(const ProcessOptions& options) {
  LaunchOptions launch{.runtime = "zmq", .process = options};
  Settings s = resolve_settings(launch);
  s.rendezvous_timeout_name = "fast rendezvous --timeout";
  ::zmq::context_t context;
  std::unique_ptr<Authenticator> auth;
  if (!s.insecure) auth = std::make_unique<Authenticator>(context, s.allowed_keys);
  serve_rendezvous(context, s, auth.get());
}

}  // namespace fast::runtime::zmq
