#include "authenticator.hpp"

#include <zmq_addon.hpp>

#include "fast/core/log.hpp"
#include "log_limit.hpp"
#include "poll_signal.hpp"

namespace fast::runtime::zmq {

std::string z85_key(const void* key32) {
  char text[41] = {};
  zmq_z85_encode(text, static_cast<const std::uint8_t*>(key32), 32);
  return text;
}

Authenticator::Authenticator(::zmq::context_t& context, const std::vector<std::string>& allowed)
    : allowed_(allowed.begin(), allowed.end()) {
  ::zmq::socket_t socket(context, ::zmq::socket_type::rep);
  socket.set(::zmq::sockopt::linger, 0);
  socket.bind("inproc://zeromq.zap.01");
  thread_ = std::thread([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
}

Authenticator::~Authenticator() {
  stop_ = true;
  thread_.join();
}

void Authenticator::serve(::zmq::socket_t socket) {
  while (!stop_) {
    ::zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    poll_through_signals(&item, 1, std::chrono::milliseconds(100));
    if (item.revents & ZMQ_POLLIN) answer(socket);
  }
}

void Authenticator::refused(std::string why) {
  refused_connections_log().log(core::LogLevel::warn, "zmq runtime: refused " + why);
  const std::lock_guard lock(mutex_);
  ++refusals_.count;
  refusals_.last = std::move(why);
}

Authenticator::Refusals Authenticator::refusals() const {
  const std::lock_guard lock(mutex_);
  return refusals_;
}

// ZAP (ZeroMQ RFC 27): version, request id, domain, address, routing id, mechanism, credentials;
// the reply: version, request id, status code, status text, user id, metadata.
bool Authenticator::answer(::zmq::socket_t& socket) {
  std::vector<::zmq::message_t> request;
  if (!::zmq::recv_multipart(socket, std::back_inserter(request), ::zmq::recv_flags::dontwait)) return false;
  std::string status = "400", text = "malformed ZAP request", user;
  if (request.size() >= 6) {
    const std::string address = request[3].to_string();
    const std::string mechanism = request[5].to_string();
    if (mechanism == "CURVE" && request.size() >= 7 && request[6].size() == 32) {
      const std::string key = z85_key(request[6].data());
      if (allowed_.count(key)) {
        status = "200", text = "OK", user = key;
      } else {
        text = "key not in the allow-list";
        refused(fmt::format("a peer from {}: its key {} is not in the allow-list", address, key));
      }
    } else {
      text = "mechanism " + mechanism + " is not admitted";
      refused(fmt::format("a peer from {}: mechanism {} (expected CURVE)", address, mechanism));
    }
  }
  std::vector<::zmq::const_buffer> reply = {
      ::zmq::str_buffer("1.0"), ::zmq::buffer(request.size() > 1 ? request[1].to_string_view() : std::string_view()),
      ::zmq::buffer(status),    ::zmq::buffer(text),
      ::zmq::buffer(user),      ::zmq::const_buffer()};
  ::zmq::send_multipart(socket, reply);
  return true;
}

}  // namespace fast::runtime::zmq
