#include "handshake_monitor.hpp"

#include <atomic>
#include <cstring>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <zmq_addon.hpp>

#include "fast/core/log.hpp"
#include "log_limit.hpp"

namespace fast::runtime::zmq {

namespace {

// Why a handshake failed, for the log.
std::string protocol_error(std::uint32_t code) {
  if (code == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) return "CURVE failed: a wrong server key, or a forged message";
  if (code == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) return "not CURVE (an unauthenticated client)";
  return fmt::format("not the ZeroMQ protocol (error {:#x})", code);
}

}  // namespace

HandshakeMonitor::HandshakeMonitor(::zmq::context_t& context, ::zmq::socket_t& monitored, Role role)
    : role_(role), monitored_(monitored.handle()), monitor_(context, ::zmq::socket_type::pair) {
  // Unique per monitor: a socket made later at the address of a closed one gets another endpoint
  // (the closed monitor's may not be unbound yet).
  static std::atomic<std::uint64_t> made{0};
  const std::string endpoint = fmt::format("inproc://fast-monitor-{}-{}", monitored_, made.fetch_add(1));
  zmq_socket_monitor(
      monitored_, endpoint.c_str(),
      ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
  monitor_.connect(endpoint);
}

HandshakeMonitor::~HandshakeMonitor() { zmq_socket_monitor(monitored_, nullptr, 0); }

void HandshakeMonitor::log_refusals() {
  for (;;) {
    std::vector<::zmq::message_t> event;
    if (!::zmq::recv_multipart(monitor_, std::back_inserter(event), ::zmq::recv_flags::dontwait)) return;
    if (event.size() != 2 || event[0].size() < 6) continue;
    std::uint16_t id = 0;
    std::uint32_t value = 0;
    std::memcpy(&id, event[0].data(), 2);
    std::memcpy(&value, static_cast<const char*>(event[0].data()) + 2, 4);
    if (role_ == Role::client) {
      auth_refused_ = auth_refused_ || (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH && value == 400);
      continue;
    }
    // A system error (EPIPE, ECONNRESET) is a client that went away during the handshake: a client
    // writing garbage, or a peer that ended that early: info. Protocol and authentication failures
    // are intruders: warn.
    const bool went_away = id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
    const std::string why =
        id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? fmt::format("authentication failed (ZAP status {})", value)
        : id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
            ? protocol_error(value)
            : fmt::format("the client went away during its handshake ({})", std::strerror(static_cast<int>(value)));
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
      ++refused_;
      last_ = why;
    }
    refused_connections_log().log(
        went_away ? core::LogLevel::info : core::LogLevel::warn,
        fmt::format("zmq runtime: refused a connection on {}: {}", event[1].to_string(), why));
  }
}

}  // namespace fast::runtime::zmq
