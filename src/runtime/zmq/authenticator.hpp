#pragma once
// Authenticator: ZeroMQ's ZAP handler for one zmq::context_t. Every CURVE handshake on a socket of
// that context asks it whether the client's public key is admitted; keys outside the allow-list are
// refused (the connection never carries a message) and logged with the peer's address. The
// admitted key becomes the connection's User-Id, which the transport checks against the sender a
// frame claims to be (transport.hpp).
//
// Runs its own thread from construction to destruction.

#include <zmq.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fast::runtime::zmq {

class Authenticator {
 public:
  // allowed: Z85 public keys. Binds inproc://zeromq.zap.01 in `context` before returning.
  Authenticator(::zmq::context_t& context, const std::vector<std::string>& allowed);
  ~Authenticator();
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;

  // The handshakes refused so far, and the last one's reason with the peer's address ("" when
  // none). Thread-safe.
  struct Refusals {
    int count = 0;
    std::string last;
  };
  Refusals refusals() const;

 private:
  void serve(::zmq::socket_t socket);
  bool answer(::zmq::socket_t& socket);

  void refused(std::string why);

  std::set<std::string> allowed_;
  mutable std::mutex mutex_;  // guards refusals_
  Refusals refusals_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The Z85 text of a 32-byte key.
std::string z85_key(const void* key32);

}  // namespace fast::runtime::zmq
