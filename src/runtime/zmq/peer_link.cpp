#include "peer_link.hpp"

#include <cerrno>

namespace fast::runtime::zmq {

bool PeerLink::try_send(Frame& frame) {
  try {
    if (!frame.header_sent) {
      if (!dealer_->send(frame.header, ::zmq::send_flags::sndmore | ::zmq::send_flags::dontwait)) return false;
      frame.header_sent = true;
    }
    return dealer_->send(frame.payload, ::zmq::send_flags::dontwait).has_value();
  } catch (const ::zmq::error_t& e) {
    if (e.num() == EINTR) return false;  // a signal (a stop request): queued, the I/O thread sends it
    throw;
  }
}

PeerLink::Result PeerLink::send(Frame frame) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!dealer_) return Result::closed;
  if (backlog_.empty() && try_send(frame)) return Result::sent;
  backlog_.push_back(std::move(frame));
  return Result::queued;
}

bool PeerLink::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!dealer_) return false;
  while (!backlog_.empty() && try_send(backlog_.front())) backlog_.pop_front();
  return !backlog_.empty();
}

void PeerLink::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  backlog_.clear();
  if (!dealer_) return;
  dealer_->set(::zmq::sockopt::linger, 0);
  dealer_.reset();
}

void PeerLink::reopen(std::unique_ptr<::zmq::socket_t> dealer) {
  std::lock_guard<std::mutex> lock(mutex_);
  backlog_.clear();
  if (dealer_) dealer_->set(::zmq::sockopt::linger, 0);
  dealer_ = std::move(dealer);
}

}  // namespace fast::runtime::zmq
