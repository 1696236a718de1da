#include "mailbox.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "world_state.hpp"

namespace fast::runtime::threads {

std::shared_ptr<Op> Mailbox::match(Queues& mine, Queues& theirs, const std::shared_ptr<Op>& op,
                                   const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) throw core::RemoteError(fmt::format("{} refused: {}", op->describe(), world.abort_message()));
  const Key key{op->src, op->tag};
  auto it = theirs.find(key);
  if (it != theirs.end()) {
    auto& queue = it->second;
    std::shared_ptr<Op> other = std::move(queue.front());
    queue.pop_front();
    if (queue.empty()) theirs.erase(it);
    other->matched = true;
    op->matched = true;
    return other;
  }
  mine[key].push_back(op);
  return nullptr;
}

std::shared_ptr<Op> Mailbox::post_send(const std::shared_ptr<Op>& send, const WorldState& world) {
  return match(sends_, recvs_, send, world);
}

std::shared_ptr<Op> Mailbox::post_recv(const std::shared_ptr<Op>& recv, const WorldState& world) {
  return match(recvs_, sends_, recv, world);
}

std::shared_ptr<Op> Mailbox::take_send(int src, Tag tag, const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) throw core::RemoteError(fmt::format("try_recv from rank {} refused: {}", src, world.abort_message()));
  auto it = sends_.find(Key{src, tag});
  if (it == sends_.end()) return nullptr;
  std::shared_ptr<Op> send = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) sends_.erase(it);
  send->matched = true;
  return send;
}

bool Mailbox::cancel(Op& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (op.matched) return false;
  if (op.cancelled) return true;
  op.cancelled = true;
  Queues& queues = op.kind == Op::Kind::send ? sends_ : recvs_;
  auto it = queues.find(Key{op.src, op.tag});
  if (it != queues.end()) {
    auto& queue = it->second;
    queue.erase(std::remove_if(queue.begin(), queue.end(), [&](const auto& p) { return p.get() == &op; }), queue.end());
    if (queue.empty()) queues.erase(it);
  }
  return true;
}

void Mailbox::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
}

}  // namespace fast::runtime::threads
