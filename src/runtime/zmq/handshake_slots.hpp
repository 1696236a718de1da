#pragma once
// HandshakeSlots: the accepted connections of a listening socket that have not authenticated yet
// (the direct streams', transport_stream.cpp), at most `capacity` at once. A connection that
// comes while every slot is taken takes the slot of the oldest one, whose socket is shut down
// (its handshake thread then reads the end of the stream and fails): a peer's connection, which
// authenticates as soon as it is read, is thus not refused because strangers hold every slot with
// idle connections; strangers would have to open `capacity` connections in the moment between
// its acceptance and its first read. (Refusing the newcomer instead, as before, let anyone who
// could reach the port keep a run's own connection out, and end the run.)
//
// Each entry holds the socket's descriptor until finish(): the handshake's thread must call
// finish() before it closes the descriptor or hands it on, so that an eviction never shuts down a
// descriptor that was closed and reused.
//
// Thread-safety: every member may be called from any thread (one mutex).

#include <sys/socket.h>

#include <cstdint>
#include <list>
#include <mutex>
#include <string>

namespace fast::runtime::zmq {

class HandshakeSlots {
 public:
  explicit HandshakeSlots(int capacity) : capacity_(capacity) {}

  struct Admitted {
    std::uint64_t id = 0;         // pass to finish()
    std::string evicted_address;  // the address of the connection whose slot it took, or ""
  };

  // Registers the connection `fd` from `address`; when `capacity` are pending, first shuts down
  // the oldest one's socket (SHUT_RDWR) and drops its entry.
  Admitted admit(int fd, std::string address) {
    std::lock_guard<std::mutex> lock(mutex_);
    Admitted out{.id = ++last_id_};
    if (static_cast<int>(pending_.size()) >= capacity_) {
      ::shutdown(pending_.front().fd, SHUT_RDWR);
      out.evicted_address = std::move(pending_.front().address);
      pending_.pop_front();
      ++evicted_;
    }
    pending_.push_back({out.id, fd, std::move(address)});
    return out;
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
  };
  const int capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> pending_;  // oldest first
  std::uint64_t last_id_ = 0;
  std::uint64_t evicted_ = 0;
};

}  // namespace fast::runtime::zmq
