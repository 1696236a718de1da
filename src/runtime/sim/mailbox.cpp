#include "mailbox.hpp"

#include <algorithm>
#include <mutex>

namespace fast::runtime::sim {

namespace {
template <typename T, typename Q>
std::shared_ptr<T> pop_front(Q& queues, typename Q::iterator it) {
  std::shared_ptr<T> item = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) queues.erase(it);
  return item;
}
}  // namespace

Inbox::Inbox(WorldState& world)
    : world_(world), mutex_(simgrid::s4u::Mutex::create()), cv_(simgrid::s4u::ConditionVariable::create()) {}

std::shared_ptr<RecvOp> Inbox::post_message(const std::shared_ptr<Message>& message) {
  auto it = recvs_.find({message->src, message->tag});
  std::shared_ptr<RecvOp> recv;
  if (it != recvs_.end()) {
    recv = pop_front<RecvOp>(recvs_, it);
  } else if (auto any = any_recvs_.find({RecvOp::kAnySource, message->tag}); any != any_recvs_.end()) {
    recv = pop_front<RecvOp>(any_recvs_, any);
    recv->src = message->src;
    if (recv->source != nullptr) *recv->source = message->src;
  }
  if (recv) {
    recv->message = message;
    wake();
    return recv;
  }
  message->arrival = arrivals_++;
  messages_[{message->src, message->tag}].push_back(message);
  return nullptr;
}

bool Inbox::post_recv(const std::shared_ptr<RecvOp>& recv) {
  if (recv->src == RecvOp::kAnySource) {
    auto oldest = messages_.end();
    for (auto it = messages_.begin(); it != messages_.end(); ++it)
      if (it->first.second == recv->tag &&
          (oldest == messages_.end() || it->second.front()->arrival < oldest->second.front()->arrival))
        oldest = it;
    if (oldest == messages_.end()) {
      any_recvs_[{RecvOp::kAnySource, recv->tag}].push_back(recv);
      return false;
    }
    recv->message = pop_front<Message>(messages_, oldest);
    recv->src = recv->message->src;
    if (recv->source != nullptr) *recv->source = recv->src;
    return true;
  }
  auto it = messages_.find({recv->src, recv->tag});
  if (it == messages_.end()) {
    recvs_[{recv->src, recv->tag}].push_back(recv);
    return false;
  }
  recv->message = pop_front<Message>(messages_, it);
  return true;
}

std::shared_ptr<Message> Inbox::take_arrived(int src, Tag tag) {
  auto it = messages_.find({src, tag});
  if (it == messages_.end()) return nullptr;
  const std::shared_ptr<Message> first = it->second.front();
  if (!transfer_arrived(world_, *first)) return nullptr;  // a simcall: other actors may run meanwhile
  it = messages_.find({src, tag});
  if (it == messages_.end() || it->second.front() != first) return nullptr;  // taken meanwhile
  return pop_front<Message>(messages_, it);
}

void Inbox::cancel(RecvOp& recv) {
  if (recv.message || recv.cancelled) return;
  recv.cancelled = true;
  auto& queues = recv.src == RecvOp::kAnySource ? any_recvs_ : recvs_;
  auto it = queues.find({recv.src, recv.tag});
  if (it == queues.end()) return;
  auto& q = it->second;
  q.erase(std::remove_if(q.begin(), q.end(), [&](const auto& p) { return p.get() == &recv; }), q.end());
  if (q.empty()) queues.erase(it);
}

bool Inbox::sleep(double timeout_seconds, const std::function<bool()>& ready) {
  std::unique_lock<simgrid::s4u::Mutex> lock(*mutex_);
  if (ready()) return true;  // checked again once locked: locking is a simcall, other actors ran
  if (timeout_seconds < 0) {
    cv_->wait(lock);
    return true;
  }
  return cv_->wait_for(lock, timeout_seconds) == std::cv_status::no_timeout;
}

void Inbox::wake() { cv_->notify_all(); }

}  // namespace fast::runtime::sim
