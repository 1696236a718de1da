#include "mailbox.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "world_state.hpp"

namespace fast::runtime::threads {

std::shared_ptr<Op> Mailbox::pop_front(Queues& queues, Queues::iterator it) {
  auto& queue = it->second;
  std::shared_ptr<Op> op = std::move(queue.front());
  queue.pop_front();
  if (queue.empty()) queues.erase(it);
  return op;
}

std::shared_ptr<Op> Mailbox::match(Queues& mine, Queues& theirs, const std::shared_ptr<Op>& op,
                                   const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) throw core::RemoteError(fmt::format("{} refused: {}", op->describe(), world.abort_message()));
  const Key key{op->src, op->tag};
  auto it = theirs.find(key);
  if (it == theirs.end() && op->kind == Op::Kind::send) {
    it = any_recvs_.find(Key{Op::kAnySource, op->tag});
    if (it != any_recvs_.end()) {
      std::shared_ptr<Op> recv = pop_front(any_recvs_, it);
      recv->src = op->src;
      if (recv->recv_source != nullptr) *recv->recv_source = op->src;
      recv->matched = true;
      op->matched = true;
      return recv;
    }
  }
  if (it != theirs.end()) {
    std::shared_ptr<Op> other = pop_front(theirs, it);
    other->matched = true;
    op->matched = true;
    return other;
  }
  if (op->kind == Op::Kind::send) op->arrival = arrivals_++;
  if (op->kind != Op::Kind::send)
    if (auto lost = lost_.find(op->src); lost != lost_.end()) throw core::PeerLost(lost->second);
  mine[key].push_back(op);
  return nullptr;
}

std::shared_ptr<Op> Mailbox::match_any_source(const std::shared_ptr<Op>& recv, const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) throw core::RemoteError(fmt::format("{} refused: {}", recv->describe(), world.abort_message()));
  auto oldest = sends_.end();
  for (auto it = sends_.begin(); it != sends_.end(); ++it)
    if (it->first.tag == recv->tag && (oldest == sends_.end() || it->second.front()->arrival < oldest->second.front()->arrival))
      oldest = it;
  if (oldest == sends_.end()) {
    any_recvs_[Key{Op::kAnySource, recv->tag}].push_back(recv);
    return nullptr;
  }
  std::shared_ptr<Op> send = pop_front(sends_, oldest);
  recv->src = send->src;
  if (recv->recv_source != nullptr) *recv->recv_source = send->src;
  send->matched = true;
  recv->matched = true;
  return send;
}

std::shared_ptr<Op> Mailbox::post_send(const std::shared_ptr<Op>& send, const WorldState& world) {
  return match(sends_, recvs_, send, world);
}

std::shared_ptr<Op> Mailbox::post_recv(const std::shared_ptr<Op>& recv, const WorldState& world) {
  if (recv->src == Op::kAnySource) return match_any_source(recv, world);
  return match(recvs_, sends_, recv, world);
}

std::shared_ptr<Op> Mailbox::take_send(int src, Tag tag, const WorldState& world) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) throw core::RemoteError(fmt::format("try_recv from rank {} refused: {}", src, world.abort_message()));
  auto it = sends_.find(Key{src, tag});
  if (it == sends_.end()) return nullptr;
  std::shared_ptr<Op> send = pop_front(sends_, it);
  send->matched = true;
  return send;
}

bool Mailbox::cancel(Op& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (op.matched) return false;
  if (op.cancelled) return true;
  op.cancelled = true;
  Queues& queues = op.kind == Op::Kind::send ? sends_ : op.src == Op::kAnySource ? any_recvs_ : recvs_;
  auto it = queues.find(Key{op.src, op.tag});
  if (it != queues.end()) {
    auto& queue = it->second;
    queue.erase(std::remove_if(queue.begin(), queue.end(), [&](const auto& p) { return p.get() == &op; }), queue.end());
    if (queue.empty()) queues.erase(it);
  }
  return true;
}

void Mailbox::fail_source(int src, const std::string& reason) {
  std::vector<std::shared_ptr<Op>> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lost_.emplace(src, reason);
    for (auto it = recvs_.begin(); it != recvs_.end();) {
      if (it->first.src != src) {
        ++it;
        continue;
      }
      for (auto& op : it->second) {
        op->cancelled = true;
        failed.push_back(std::move(op));
      }
      it = recvs_.erase(it);
    }
  }
  for (auto& op : failed) op->complete(std::make_exception_ptr(core::PeerLost(reason)));
}

void Mailbox::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
}

}  // namespace fast::runtime::threads
