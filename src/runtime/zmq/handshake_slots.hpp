#pragma once
// HandshakeSlots: the accepted connections of a listening socket that have not authenticated yet
// (the direct streams', transport_stream.cpp), at most `capacity` at once. A connection that
// comes while every slot is taken takes the slot of another one, whose socket is shut down (its
// handshake thread then reads the end of the stream and fails): a peer's connection, which
// authenticates as soon as it is read, is thus not refused because strangers hold every slot with
// idle connections. (Refusing the newcomer instead, as before, let anyone who could reach the
// port keep a run's own connection out, and end the run.)
//
// Which one: the oldest that has not shown a preamble, that is, one whose handshake has not read a
// preamble naming an open offer (shown()) and whose socket does not hold `shown_bytes` unread
// bytes now (a peer writes its preamble right after it connects); only when every pending
// connection showed one, the oldest. So strangers who reconnect as fast as they are dropped evict
// one another, not a peer's connection that is waiting for its handshake thread to run. The
// connector also retries a connection dropped before it was accepted (transport_stream.cpp).
//
// Each entry holds the socket's descriptor until finish(): the handshake's thread must call
// finish() before it closes the descriptor or hands it on, so that an eviction never shuts down (or
// reads) a descriptor that was closed and reused.
//
// Thread-safety: every member may be called from any thread (one mutex).

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>

namespace fast::runtime::zmq {

class HandshakeSlots {
 public:
  // `shown_bytes`: how many unread bytes on a pending socket count as a preamble shown.
  HandshakeSlots(int capacity, std::size_t shown_bytes) : capacity_(capacity), shown_bytes_(shown_bytes) {}

  struct Admitted {
    std::uint64_t id = 0;         // pass to finish()
    std::string evicted_address;  // the address of the connection whose slot it took, or ""
  };

  // Registers the connection `fd` from `address`; when `capacity` are pending, first shuts down
  // one's socket (SHUT_RDWR; which one: above) and drops its entry.
  Admitted admit(int fd, std::string address) {
    std::lock_guard<std::mutex> lock(mutex_);
    Admitted out{.id = ++last_id_};
    if (static_cast<int>(pending_.size()) >= capacity_) {
      auto victim = std::find_if(pending_.begin(), pending_.end(), [&](const Entry& e) { return !showed(e); });
      if (victim == pending_.end()) victim = pending_.begin();
      ::shutdown(victim->fd, SHUT_RDWR);
      out.evicted_address = std::move(victim->address);
      pending_.erase(victim);
      ++evicted_;
    }
    pending_.push_back({out.id, fd, std::move(address)});
    return out;
  }

  // The handshake `id` read a preamble that names an open offer: it is evicted only after every
  // pending one that did not. No effect once it finished or was evicted.
  void shown(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Entry& e : pending_)
      if (e.id == id) e.shown = true;
  }

  // Ends the handshake `id` (authenticated, or failed): true when its slot was still its own,
  // false when a newer connection took it (its socket is shut down) or it had finished already.
  bool finish(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (it->id == id) {
        pending_.erase(it);
        return true;
      }
    return false;
  }

  int pending() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(pending_.size());
  }
  std::uint64_t evicted() const {  // connections whose slot a newer one took, since construction
    std::lock_guard<std::mutex> lock(mutex_);
    return evicted_;
  }
  int capacity() const noexcept { return capacity_; }

 private:
  struct Entry {
    std::uint64_t id;
    int fd;
    std::string address;
    bool shown = false;  // shown() was called
  };
  // Whether `e` showed a preamble (mutex_ held): marked so, or `shown_bytes_` bytes wait unread.
  bool showed(const Entry& e) const {
    if (e.shown) return true;
    std::array<char, 64> peek{};
    const std::size_t want = std::min(shown_bytes_, peek.size());
    return ::recv(e.fd, peek.data(), want, MSG_PEEK | MSG_DONTWAIT) >= static_cast<ssize_t>(want);
  }

  const int capacity_;
  const std::size_t shown_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> pending_;  // oldest first
  std::uint64_t last_id_ = 0;
  std::uint64_t evicted_ = 0;
};

}  // namespace fast::runtime::zmq
