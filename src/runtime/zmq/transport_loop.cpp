// ZmqTransport's I/O thread: receiving and validating frames, sending queued ones, heartbeats,
// lost peers, the end of the run (transport.hpp).
#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>

#include <zmq_addon.hpp>

#include <fmt/format.h>

#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "frames.hpp"
#include "log_limit.hpp"
#include "loop_turn.hpp"
#include "poll_signal.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

namespace {
constexpr std::size_t kMaxReasonBytes = 4096;  // a bye's error text
// The loop's poll items, by index; the rejoin desk last, as only the process that serves the
// rendezvous of a run that tolerates losses has one.
// The desk's items last: polled only while this process serves the rendezvous.
enum PollItem {
  kDataItem,
  kPulseItem,
  kWakeItem,
  kMonitorItem,
  kPulseMonitorItem,
  kStreamItem,
  kDeskItem,
  kDeskMonitorItem,
  kPollItems
};

}  // namespace

void ZmqTransport::loop() {
  HandshakeMonitor monitor(context_, router_);
  HandshakeMonitor pulse_monitor(context_, pulse_);
  const double heartbeat = std::min(settings_.peer_timeout / 4, 1.0);
  double next_heartbeat = 0;
  LoopTurn turn(settings_.peer_timeout);  // warns about a turn longer than a quarter of it
  // The sockets polled change only when this process takes the rendezvous over (take_over_desk);
  // poll() rewrites each item's revents.
  ::zmq::pollitem_t items[kPollItems] = {};
  items[kDataItem] = {router_.handle(), 0, ZMQ_POLLIN, 0};
  items[kPulseItem] = {pulse_.handle(), 0, ZMQ_POLLIN, 0};
  items[kWakeItem] = {nullptr, wake_fd_, ZMQ_POLLIN, 0};
  items[kMonitorItem] = {monitor.events().handle(), 0, ZMQ_POLLIN, 0};
  items[kPulseMonitorItem] = {pulse_monitor.events().handle(), 0, ZMQ_POLLIN, 0};
  items[kStreamItem] = {nullptr, stream_fd_, static_cast<short>(stream_fd_ >= 0 ? ZMQ_POLLIN : 0), 0};
  int polled = kDeskItem;
  watch_desk(items + kDeskItem, polled);
  const auto ready = [&items](int item) { return (items[item].revents & ZMQ_POLLIN) != 0; };
  while (!stop_) {
    turn.begin(clock());
    // Every millisecond while messages wait for room in a ring (the receiver frees it as it takes
    // them, without a word to this process), else every 20 ms at most.
    poll_through_signals(items, polled, std::chrono::milliseconds(any_pending() ? 1 : 20));
    turn.step("poll (20 ms at most while the thread runs)", clock());
    if (ready(kWakeItem)) {
      std::uint64_t count = 0;
      (void)!read(wake_fd_, &count, sizeof(count));
    }
    flush_links();
    flush_rings();
    turn.step("sending queued frames", clock());
    if (ready(kPulseItem)) receive_pulses();
    turn.step("receiving heartbeats", clock());
    if (ready(kDataItem)) receive_all();
    turn.step("receiving frames", clock());
    if (ready(kMonitorItem)) monitor.log_refusals();
    if (ready(kPulseMonitorItem)) pulse_monitor.log_refusals();
    if (desk_monitor_ && ready(kDeskMonitorItem)) desk_monitor_->log_refusals();
    turn.step("the handshake monitors", clock());
    if (ready(kStreamItem)) accept_stream();
    // Not while this process asks whether it is still in the run (after a stall its view is stale).
    if (!stall_check_ && ready(kDeskItem)) receive_rejoin_hellos();  // never set without a desk (not polled)
    if (!stall_check_ && !pending_.empty()) progress_rejoins();
    turn.step("rejoins", clock());
    if (clock() >= next_heartbeat && !expelled_.load()) {
      send_heartbeats();
      next_heartbeat = clock() + heartbeat;
    }
    turn.step("sending heartbeats", clock());
    check_peers();
    tend_desk(items + kDeskItem, polled);
    turn.step("checking peers", clock());
    if (const std::optional<std::string> warning = turn.report()) core::log(core::LogLevel::warn, "{}", *warning);
  }
  for (const PendingRejoin& p : pending_) answer_newcomer(p.id, {{"refused", "the run is ending"}});
  pending_.clear();
  flush_links();
  desk_monitor_.reset();
}

void ZmqTransport::flush_links() {
  for (auto& link : links_)
    if (link) link->flush();
}

void ZmqTransport::flush_rings() {
  for (std::size_t p = 0; p < outbound_.size(); ++p) {
    OutboundShared& out = *outbound_[p];
    if (!out.has_pending.load(std::memory_order_relaxed)) continue;
    std::lock_guard<std::mutex> lock(out.mutex);
    flush_pending(static_cast<int>(p), out);
  }
}

void ZmqTransport::watch_desk(::zmq::pollitem_t* items, int& polled) {
  desk_monitor_.reset();
  if (desk_) desk_monitor_.emplace(context_, *desk_);
  items[0] = {desk_ ? desk_->handle() : nullptr, 0, ZMQ_POLLIN, 0};
  items[1] = {desk_monitor_ ? desk_monitor_->events().handle() : nullptr, 0, ZMQ_POLLIN, 0};
  polled = desk_ ? kPollItems : kDeskItem;
}

void ZmqTransport::tend_desk(::zmq::pollitem_t* items, int& polled) {
  if (expelled_.load() && desk_) {  // counted lost: the address is free for a survivor to serve
    for (const PendingRejoin& p : pending_) answer_newcomer(p.id, {{"refused", "this process left the run"}});
    pending_.clear();
    desk_monitor_.reset();
    desk_->set(::zmq::sockopt::linger, 500);  // the refusals leave before the socket closes
    desk_.reset();
    watch_desk(items, polled);
  }
  // The rendezvous, lost with its server.
  if (settings_.tolerate_lost && !desk_ && !expelled_.load() && take_over_desk()) watch_desk(items, polled);
}

Frame ZmqTransport::control_frame(wire::FrameKind kind, const ProcessInfo& peer, const std::string& text) const {
  const wire::FrameHeader header{.kind = kind,
                                 .dtype = core::DType::u8,
                                 .src = table_[static_cast<std::size_t>(process_)].first_worker,
                                 .dst = peer.first_worker,
                                 .count = text.size(),
                                 .payload_bytes = text.size()};
  return {header_message(header), ::zmq::message_t(text.data(), text.size())};
}

void ZmqTransport::receive_all() {
  for (int i = 0; i < kMaxFramesPerWakeUp; ++i) {
    std::vector<::zmq::message_t> parts;
    if (!::zmq::recv_multipart(router_, std::back_inserter(parts), ::zmq::recv_flags::dontwait)) return;
    receive_one(parts);
  }
}

void ZmqTransport::receive_one(std::vector<::zmq::message_t>& parts) {
  int from = -1;
  const ProcessInfo* sender = nullptr;
  bool data = false;  // a data frame of `from`, counted after it was handled (shared memory's order)
  try {
    from = authenticated_sender(parts);
    sender = &table_[static_cast<std::size_t>(from)];
    const wire::FrameHeader header = wire::decode_header(
        bytes_of(parts[1]),
        {.max_payload_bytes = wire::Limits{}.max_payload_bytes, .world_size = world_->state().size()});
    data = header.kind == wire::FrameKind::data;
    settle_ring(from, false);  // what the sender put in its ring before this frame comes first
    check_endpoints(*sender, header);
    wire::check_payload(header, bytes_of(parts[2]));
    heard_from(from);
    if (data) {
      deliver_data(header, std::move(parts[2]));
    } else if (header.kind == wire::FrameKind::hello) {
      on_hello_frame(from, parts[2]);
    } else if (header.kind == wire::FrameKind::bye) {
      mark_said_bye(from, parts[2].to_string().substr(0, kMaxReasonBytes));
    }
  } catch (const core::Error& e) {
    dropped_frames_log().log(core::LogLevel::warn,
                             fmt::format("zmq runtime: dropped a frame from {}: {}",
                                         sender ? sender->where() : std::string("an unknown sender"), e.what()));
  }
  if (data) settle_ring(from, true);
}

void ZmqTransport::check_endpoints(const ProcessInfo& sender, const wire::FrameHeader& header) const {
  FAST_ENFORCE_AS(wire::FrameError,
                  header.src >= sender.first_worker && header.src < sender.first_worker + sender.workers,
                  "frame: src: expected a worker of {} in [{}, {}), got {}", sender.where(), sender.first_worker,
                  sender.first_worker + sender.workers, header.src);
  if (header.kind == wire::FrameKind::data)
    FAST_ENFORCE_AS(wire::FrameError, world_->state().is_local(header.dst),
                    "frame: dst: expected a worker of this process, got {}", header.dst);
}

void ZmqTransport::deliver_data(const wire::FrameHeader& header, ::zmq::message_t payload) {
  auto message = std::make_shared<::zmq::message_t>(std::move(payload));
  const void* data = message->data();
  std::shared_ptr<const void> owner = message;
  if (reinterpret_cast<std::uintptr_t>(data) % core::size_of(header.dtype) != 0) {  // typed reads need alignment
    auto copy = std::make_shared<core::Buffer>(header.count, header.dtype);
    std::memcpy(copy->data(), data, header.payload_bytes);
    data = copy->data();
    owner = std::move(copy);
  }
  world_->deliver_remote(header.src, header.dst, header.tag, core::ConstView(data, header.count, header.dtype),
                         std::move(owner));
}

void ZmqTransport::check_peers() {
  const double now = clock();
  if (expelled_.load() || !watch_own_stall(now)) return;  // a process that left the run counts nobody lost
  for (const ProcessInfo& peer : table_) {
    if (peer.rank == process_ || peer.vacant) continue;
    check_streams(peer.rank);
    const InboundShared& in = *inbound_[static_cast<std::size_t>(peer.rank)];
    if (in.failed.load()) {
      mark_lost(peer.rank, in.failure, false);  // once: a process lost already is left as it is
      continue;
    }
    double silent = 0;
    {
      std::lock_guard<std::mutex> lock(peers_mutex_);
      const PeerState& s = peers_[static_cast<std::size_t>(peer.rank)];
      if (s.lost) continue;
      silent = now - s.last_heard;
    }
    if (silent > settings_.peer_timeout)
      mark_lost(peer.rank,
                fmt::format("lost: no message or heartbeat for {:.1f} s (peer timeout {} s): the process died, froze "
                            "or its network is cut",
                            silent, settings_.peer_timeout),
                false);
  }
}

void ZmqTransport::mark_said_bye(int process, const std::string& reason) {
  if (reason.empty()) {
    mark_lost(process, "left the run (its workers ended)", true, true);
    return;
  }
  std::string_view root = reason;
  constexpr std::string_view kWorker = "worker ", kFailed = ") failed: ";
  while (root.starts_with(kWorker)) {
    const std::size_t failed = root.find(kFailed);
    if (failed == std::string_view::npos || !root.substr(failed + kFailed.size()).starts_with(kWorker)) break;
    root.remove_prefix(failed + kFailed.size());
  }
  mark_lost(process, fmt::format("failed: {}", root), false, true);
}

void ZmqTransport::mark_lost(int process, const std::string& why, bool clean, bool said_bye) {
  const ProcessInfo& peer = table_[static_cast<std::size_t>(process)];
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    PeerState& s = peers_[static_cast<std::size_t>(process)];
    if (s.lost) return;
    s.lost = true;
    s.ended = clean;
    s.failed_bye_at = said_bye && !clean ? clock() : -1;
    s.reason = why;
    lost_[static_cast<std::size_t>(process)] = true;
    if (!clean)
      for (int w = peer.first_worker; w < peer.first_worker + peer.workers; ++w)
        events_.push_back({.at = world_->state().now(),
                           .worker = w,
                           .joined = false,
                           .detail = fmt::format("{} {}", peer.where(), why)});
  }
  peers_cv_.notify_all();
  std::string first;
  for (int w = peer.first_worker; w < peer.first_worker + peer.workers; ++w) {
    const std::string message = fmt::format("worker {} ({}) {}", w, peer.where(), why);
    if (first.empty()) first = message;
    world_->fail_source(w, message);
  }
  {
    OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
    std::lock_guard<std::mutex> lock(out.mutex);
    drop_pending(out);  // never to be received
  }
  // A process that ended cleanly waits for our own bye (and watches our heartbeats) before it
  // exits: its socket stays open. One that failed and said so waits for our bye too, for a peer
  // timeout without our heartbeats (PeerState::failed_bye_at). A lost one's is closed, dropping
  // what was queued for it.
  if (clean) return;
  if (!said_bye && links_[static_cast<std::size_t>(process)]) links_[static_cast<std::size_t>(process)]->close();
  pulse_links_[static_cast<std::size_t>(process)].reset();
  core::log(core::LogLevel::warn, "zmq runtime: {}", first);
  if (on_lost_) on_lost_(first);
}

bool ZmqTransport::gone_after_its_failure(int process) const {
  std::lock_guard<std::mutex> lock(peers_mutex_);
  const PeerState& s = peers_[static_cast<std::size_t>(process)];
  return s.failed_bye_at >= 0 && clock() - s.failed_bye_at >= settings_.peer_timeout;
}

void ZmqTransport::finish(const std::string& error, double limit_seconds) {
  const std::string text = error.substr(0, kMaxReasonBytes);
  finish_error_ = text;  // before finishing_: the I/O thread reads it once it sees finishing_
  finishing_ = true;  // before the table is read: a rank revived from here on gets its bye from revive()
  if (polls_in_caller()) sleep_begin();  // no waiter polls from here on: the streams' threads read the byes
  ProcessTable table;
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);  // revive() may replace an entry meanwhile
    table = table_;
  }
  for (const ProcessInfo& peer : table) {
    if (peer.rank == process_ || peer.vacant) continue;
    if (gone_after_its_failure(peer.rank)) {  // no bye: its link would linger for it at our exit
      if (links_[static_cast<std::size_t>(peer.rank)]) links_[static_cast<std::size_t>(peer.rank)]->close();
      continue;
    }
    if (!bye_through_stream(peer.rank, text)) send_frame(peer.rank, control_frame(wire::FrameKind::bye, peer, text));
  }
  if (expelled_.load()) return;  // the others counted it lost: nobody answers its bye
  std::unique_lock<std::mutex> lock(peers_mutex_);
  const bool all = peers_cv_.wait_for(lock, std::chrono::duration<double>(limit_seconds), [&] {
    if (expelled_.load()) return true;  // counted lost meanwhile: nobody answers its bye
    for (std::size_t p = 0; p < peers_.size(); ++p)
      if (static_cast<int>(p) != process_ && !peers_[p].lost) return false;
    return true;
  });
  if (!all)
    core::log(core::LogLevel::warn, "zmq runtime: some processes did not end within {} s; leaving", limit_seconds);
}

}  // namespace fast::runtime::zmq
