#include "mailbox.hpp"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "world_state.hpp"

namespace fast::runtime::engine {

namespace {
void mark_matched(Op& a, Op& b) {
  a.matched = true;
  b.matched = true;
}

}  // namespace

void Mailbox::detach_payload(Op& send) {
  if (!copies_) copies_ = std::make_shared<BufferPool>(kMaxCachedCopyBytes);
  std::shared_ptr<std::byte> copy = copies_->take(send.send_data.bytes());
  if (send.send_data.bytes() > 0) std::memcpy(copy.get(), send.send_data.data(), send.send_data.bytes());
  send.send_data = core::ConstView(copy.get(), send.send_data.numel(), send.send_data.dtype());
  send.payload_owner = std::move(copy);
}

void Mailbox::check_open(const Op& op, const WorldState& world) const {
  if (aborted_) throw core::RemoteError(fmt::format("{} refused: {}", op.describe(), world.abort_message()));
}

std::shared_ptr<Op> Mailbox::post_send(const std::shared_ptr<Op>& send, const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_open(*send, world);
  std::shared_ptr<Op> recv = matcher_.post_message(send);
  if (!recv) {
    // Queued: nothing reads send_data before a receive matches it under this lock.
    if (send->copy_when_queued) detach_payload(*send);
    return nullptr;
  }
  if (recv->recv_source != nullptr) *recv->recv_source = send->src;
  mark_matched(*send, *recv);
  return recv;
}

std::shared_ptr<Op> Mailbox::post_recv(const std::shared_ptr<Op>& recv, const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_open(*recv, world);
  std::shared_ptr<Op> send;
  if (auto lost = lost_.find(recv->src); lost != lost_.end()) {
    send = matcher_.take(recv->src, recv->tag);  // sent before the loss: still delivered
    if (!send) throw core::PeerLost(lost->second);
  } else {
    send = matcher_.post_recv(recv);
  }
  if (!send) return nullptr;
  if (recv->recv_source != nullptr) *recv->recv_source = send->src;
  mark_matched(*send, *recv);
  return send;
}

std::shared_ptr<Op> Mailbox::take_send(int src, Tag tag, const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) throw core::RemoteError(fmt::format("try_recv from rank {} refused: {}", src, world.abort_message()));
  std::shared_ptr<Op> send = matcher_.take(src, tag);
  if (send) send->matched = true;
  return send;
}

bool Mailbox::cancel(Op& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (op.matched) return false;
  if (op.cancelled) return true;
  op.cancelled = true;
  if (op.kind == Op::Kind::send)
    matcher_.cancel_message(op);
  else
    matcher_.cancel_recv(op);
  return true;
}

void Mailbox::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
}

void Mailbox::fail_source(int src, const std::string& reason) {
  std::vector<std::shared_ptr<Op>> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lost_.emplace(src, reason);
    matcher_.drain_recvs_from(src, [&](std::shared_ptr<Op> op) {
      op->cancelled = true;
      failed.push_back(std::move(op));
    });
  }
  for (auto& op : failed) op->complete(std::make_exception_ptr(core::PeerLost(reason)));
}

void Mailbox::revive_source(int src) {
  std::lock_guard<std::mutex> lock(mutex_);
  lost_.erase(src);
  matcher_.drop_messages_from(src);
}

}  // namespace fast::runtime::engine
