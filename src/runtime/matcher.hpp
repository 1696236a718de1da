#pragma once
// Matcher: the message matching of every backend, written once (private header of the runtime
// layer). Unmatched messages and unmatched receives of ONE receiving worker, keyed by (source
// rank, tag), matched in FIFO order:
//   - a message goes to the oldest receive posted for its own source, else to the oldest receive
//     from any source with its tag, else it is queued;
//   - a receive from a source takes the oldest queued message of (source, tag); a receive from
//     any source takes the oldest queued message with its tag, whatever its source (arrival order).
// Msg needs `int src; Tag tag;`; Recv needs `int src; Tag tag;` with src == kAnySource for a
// receive from any source, set to the sender's rank when matched. Ordered maps keep the order of
// every operation deterministic (the sim runtime's reproducibility depends on it).
//
// Not thread-safe: the owner locks (threads, zmq) or runs one actor at a time (sim).

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <utility>

#include "fast/runtime/tag.hpp"

namespace fast::runtime::detail {

inline constexpr int kAnySource = -1;

template <typename Msg, typename Recv>
class Matcher {
 public:
  // The receive that takes `message` (removed from the queue; an any-source one gets src set),
  // or null after queueing the message.
  std::shared_ptr<Recv> post_message(const std::shared_ptr<Msg>& message) {
    std::shared_ptr<Recv> recv = pop(recvs_, {message->src, message->tag});
    if (!recv) recv = pop(any_recvs_, {kAnySource, message->tag});
    if (recv) {
      recv->src = message->src;
      return recv;
    }
    messages_[{message->src, message->tag}].push_back({arrivals_++, message});
    return nullptr;
  }

  // The message `recv` takes (removed; an any-source recv gets src set), or null after queueing
  // the receive.
  std::shared_ptr<Msg> post_recv(const std::shared_ptr<Recv>& recv) {
    std::shared_ptr<Msg> message = recv->src == kAnySource ? pop_oldest(recv->tag) : take(recv->src, recv->tag);
    if (message) {
      recv->src = message->src;
      return message;
    }
    (recv->src == kAnySource ? any_recvs_ : recvs_)[{recv->src, recv->tag}].push_back(recv);
    return nullptr;
  }

  // The oldest queued message of (src, tag) if `ready(message)`, removed; else null.
  template <typename Ready>
  std::shared_ptr<Msg> take_if(int src, Tag tag, Ready ready) {
    auto it = messages_.find({src, tag});
    if (it == messages_.end() || !ready(*it->second.front().second)) return nullptr;
    return pop_message(it);
  }
  std::shared_ptr<Msg> take(int src, Tag tag) {
    return take_if(src, tag, [](const Msg&) { return true; });
  }
  // The first queued message of (src, tag) or null, left in place.
  std::shared_ptr<Msg> peek(int src, Tag tag) const {
    auto it = messages_.find({src, tag});
    return it == messages_.end() ? nullptr : it->second.front().second;
  }

  // Removes a queued receive; false if it was not queued (matched already).
  bool cancel_recv(const Recv& recv) {
    return erase(recv.src == kAnySource ? any_recvs_ : recvs_, {recv.src, recv.tag}, &recv);
  }
  // Removes a queued message; false if it was not queued (matched already).
  bool cancel_message(const Msg& message) {
    auto it = messages_.find({message.src, message.tag});
    if (it == messages_.end()) return false;
    auto& q = it->second;
    for (auto m = q.begin(); m != q.end(); ++m)
      if (m->second.get() == &message) {
        q.erase(m);
        if (q.empty()) messages_.erase(it);
        return true;
      }
    return false;
  }

  // Drops every message queued from source `src` (a remote sender that was replaced).
  void drop_messages_from(int src) {
    for (auto it = messages_.lower_bound({src, 0}); it != messages_.end() && it->first.first == src;)
      it = messages_.erase(it);
  }

  // Removes and returns every receive queued for source `src` (not those from any source).
  template <typename Fn>
  void drain_recvs_from(int src, Fn&& fn) {
    for (auto it = recvs_.lower_bound({src, 0}); it != recvs_.end() && it->first.first == src;) {
      for (auto& recv : it->second) fn(std::move(recv));
      it = recvs_.erase(it);
    }
  }

 private:
  using Key = std::pair<int, Tag>;
  template <typename T>
  using Queues = std::map<Key, std::deque<T>>;

  template <typename T>
  static std::shared_ptr<T> pop(Queues<std::shared_ptr<T>>& queues, const Key& key) {
    auto it = queues.find(key);
    if (it == queues.end()) return nullptr;
    std::shared_ptr<T> item = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) queues.erase(it);
    return item;
  }
  static bool erase(Queues<std::shared_ptr<Recv>>& queues, const Key& key, const Recv* recv) {
    auto it = queues.find(key);
    if (it == queues.end()) return false;
    auto& q = it->second;
    for (auto r = q.begin(); r != q.end(); ++r)
      if (r->get() == recv) {
        q.erase(r);
        if (q.empty()) queues.erase(it);
        return true;
      }
    return false;
  }
  std::shared_ptr<Msg> pop_message(typename Queues<std::pair<std::uint64_t, std::shared_ptr<Msg>>>::iterator it) {
    std::shared_ptr<Msg> m = std::move(it->second.front().second);
    it->second.pop_front();
    if (it->second.empty()) messages_.erase(it);
    return m;
  }
  std::shared_ptr<Msg> pop_oldest(Tag tag) {
    auto oldest = messages_.end();
    for (auto it = messages_.begin(); it != messages_.end(); ++it)
      if (it->first.second == tag &&
          (oldest == messages_.end() || it->second.front().first < oldest->second.front().first))
        oldest = it;
    return oldest == messages_.end() ? nullptr : pop_message(oldest);
  }

  std::uint64_t arrivals_ = 0;  // queue order of messages, for receives from any source
  Queues<std::pair<std::uint64_t, std::shared_ptr<Msg>>> messages_;
  Queues<std::shared_ptr<Recv>> recvs_;      // receives from one source
  Queues<std::shared_ptr<Recv>> any_recvs_;  // receives from any source, keyed by {kAnySource, tag}
};

}  // namespace fast::runtime::detail
