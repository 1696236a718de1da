// ZmqTransport's heartbeats (transport.hpp): their own sockets and connections, on the context's
// second I/O thread, so that a heartbeat never waits behind a data message; and who a frame is
// from, checked the same way on both sockets.
#include <zmq_addon.hpp>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "frames.hpp"
#include "log_limit.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

namespace {
// "p<k>" -> k, or -1.
int parse_routing_id(const ::zmq::message_t& id, int processes) {
  const std::string text = id.to_string();
  if (text.size() < 2 || text.size() > 11 || text[0] != 'p') return -1;
  int k = 0;
  for (std::size_t i = 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    k = k * 10 + (text[i] - '0');
    if (k >= processes) return -1;
  }
  return k;
}
}  // namespace

std::unique_ptr<::zmq::socket_t> ZmqTransport::make_pulse_dealer(const ProcessInfo& peer) {
  std::unique_ptr<::zmq::socket_t> dealer = new_dealer(kPulseAffinity, peer);
  dealer->set(::zmq::sockopt::sndhwm, kPulseBacklog);  // beyond: dropped (send_heartbeats)
  dealer->set(::zmq::sockopt::linger, 0);              // a heartbeat is worth nothing once late
  dealer->connect(settings_.transport == "ipc" ? peer.pulse_ipc_endpoint : peer.pulse_tcp_endpoint);
  return dealer;
}

void ZmqTransport::send_heartbeats() {
  for (const ProcessInfo& peer : table_) {
    std::unique_ptr<::zmq::socket_t>& socket = pulse_links_[static_cast<std::size_t>(peer.rank)];
    if (peer.rank == process_ || !socket) continue;
    Frame beat = control_frame(wire::FrameKind::heartbeat, peer, "");
    // Both parts or neither: ZeroMQ queues a multipart message whole once its first part is taken.
    if (socket->send(beat.header, ::zmq::send_flags::sndmore | ::zmq::send_flags::dontwait))
      (void)socket->send(beat.payload, ::zmq::send_flags::dontwait);
  }
}

void ZmqTransport::receive_pulses() {
  for (int i = 0; i < kMaxFramesPerWakeUp; ++i) {
    std::vector<::zmq::message_t> parts;
    if (!::zmq::recv_multipart(pulse_, std::back_inserter(parts), ::zmq::recv_flags::dontwait)) return;
    int from = -1;
    try {
      from = authenticated_sender(parts);
      const wire::FrameHeader header =
          wire::decode_header(bytes_of(parts[1]), {.max_payload_bytes = 0, .world_size = world_->state().size()});
      FAST_ENFORCE(header.kind == wire::FrameKind::heartbeat,
                   "frame: kind: expected a heartbeat on the heartbeat "
                   "socket, got kind {}",
                   static_cast<int>(header.kind));
      check_endpoints(table_[static_cast<std::size_t>(from)], header);
      wire::check_payload(header, bytes_of(parts[2]));
      heard_from(from);
    } catch (const core::Error& e) {
      dropped_frames_log().log(
          core::LogLevel::warn,
          fmt::format("zmq runtime: dropped a heartbeat from {}: {}",
                      from >= 0 ? table_[static_cast<std::size_t>(from)].where() : std::string("an unknown sender"),
                      e.what()));
    }
  }
}

int ZmqTransport::authenticated_sender(const std::vector<::zmq::message_t>& parts) const {
  const int from = parts.empty() ? -1 : parse_routing_id(parts[0], static_cast<int>(table_.size()));
  FAST_ENFORCE(from >= 0 && from != process_, "frame: sender: expected a process of this run, got routing id '{}'",
               parts.empty() ? std::string() : parts[0].to_string());
  const ProcessInfo& sender = table_[static_cast<std::size_t>(from)];
  FAST_ENFORCE(!sender.vacant, "frame: sender: {} holds no process", sender.where());
  FAST_ENFORCE(parts.size() == 3, "frame from {}: parts: expected 3 (routing id, header, payload), got {}",
               sender.where(), parts.size());
  if (!settings_.insecure) {
    const char* key = zmq_msg_gets(parts[1].handle(), "User-Id");
    FAST_ENFORCE(key != nullptr && sender.public_key == key, "frame: key: expected the key of {} ({}), got {}",
                 sender.where(), sender.public_key, key ? key : "none");
  }
  return from;
}

void ZmqTransport::heard_from(int process) {
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    peers_[static_cast<std::size_t>(process)].last_heard = clock();
  }
  peers_cv_.notify_all();  // settle_lost_peers() waits for news of every peer
}

}  // namespace fast::runtime::zmq
