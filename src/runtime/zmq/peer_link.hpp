#pragma once
// PeerLink: this process's connection to one other process: its DEALER socket and the frames the
// socket could not take yet, behind one lock. Any thread sends through it directly (a worker, an
// activity, the transport's I/O thread for control frames and retries): ZeroMQ allows a socket to move
// between threads behind a full memory barrier, which the lock is. Frames leave in the order they
// were given to send().
//
// Thread-safety: every method may be called from any thread.

#include <zmq.hpp>

#include <deque>
#include <memory>
#include <mutex>

namespace fast::runtime::zmq {

struct Frame {
  ::zmq::message_t header;
  ::zmq::message_t payload;
  bool header_sent = false;  // the socket took the header part; the payload part must follow
};

class PeerLink {
 public:
  explicit PeerLink(std::unique_ptr<::zmq::socket_t> dealer) : dealer_(std::move(dealer)) {}

  enum class Result { sent, queued, closed };
  // Sends at once when nothing waits and the socket takes it without blocking; else queues it
  // (then the caller wakes the I/O thread, which calls flush()). `closed`: the link was closed
  // (the peer is lost) and the frame dropped, which completes a zero-copy send.
  Result send(Frame frame);
  // Retries the queued frames in order, without blocking. True when some still wait.
  bool flush();
  // Closes the socket without lingering, dropping every queued frame.
  void close();
  // Replaces a closed (or open) socket by `dealer`, connected to the process that took the peer's
  // rank back (a rejoin); frames still queued for the old one are dropped.
  void reopen(std::unique_ptr<::zmq::socket_t> dealer);

 private:
  bool try_send(Frame& frame);  // lock held

  std::mutex mutex_;
  std::unique_ptr<::zmq::socket_t> dealer_;  // null once closed
  std::deque<Frame> backlog_;
};

}  // namespace fast::runtime::zmq
