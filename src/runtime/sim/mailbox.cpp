#include "mailbox.hpp"

#include <algorithm>
#include <mutex>

#include "sim_sync.hpp"

namespace fast::runtime::sim {

Inbox::Inbox(WorldState& world) : world_(world), mutex_(new_mutex()), cv_(new_condition_variable()) {}

std::shared_ptr<RecvOp> Inbox::post_message(const std::shared_ptr<Message>& message) {
  std::shared_ptr<RecvOp> recv = matcher_.post_message(message);
  if (!recv) return nullptr;
  if (recv->source != nullptr) *recv->source = message->src;
  recv->message = message;
  message->receive = recv;
  wake();
  return recv;
}

bool Inbox::post_recv(const std::shared_ptr<RecvOp>& recv) {
  std::shared_ptr<Message> message = matcher_.post_recv(recv);
  if (!message) return false;
  if (recv->source != nullptr) *recv->source = message->src;
  message->receive = recv;
  recv->message = std::move(message);
  return true;
}

std::shared_ptr<Message> Inbox::take_arrived(int src, Tag tag) {
  const std::shared_ptr<Message> first = matcher_.peek(src, tag);
  if (!first) return nullptr;
  if (!transfer_arrived(world_, *first)) return nullptr;  // a simcall: other actors may run meanwhile
  return matcher_.take_if(src, tag, [&](const Message& m) { return &m == first.get(); });  // unless taken meanwhile
}

void Inbox::cancel(RecvOp& recv) {
  if (recv.message || recv.cancelled) return;
  recv.cancelled = true;
  matcher_.cancel_recv(recv);
}

bool Inbox::sleep(double timeout_seconds, const std::function<bool()>& ready) {
  KeepCaughtExceptions keep;  // locking, waiting and unlocking are simcalls
  std::unique_lock<simgrid::s4u::Mutex> lock(*mutex_);
  if (ready()) return true;  // checked again once locked: locking is a simcall, other actors ran
  if (timeout_seconds < 0) {
    cv_->wait(lock);
    return true;
  }
  return cv_->wait_for(lock, timeout_seconds) == std::cv_status::no_timeout;
}

void Inbox::wake() {
  KeepCaughtExceptions keep;
  cv_->notify_all();
}

}  // namespace fast::runtime::sim
