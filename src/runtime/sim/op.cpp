#include "op.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "../deliver.hpp"
#include "compute_pool.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/time_limit.hpp"
#include "mailbox.hpp"
#include "sim_sync.hpp"
#include "world_state.hpp"

namespace fast::runtime::sim {

namespace sg = simgrid::s4u;

std::string RecvOp::describe() const {
  if (src == kAnySource) return fmt::format("recv from any rank to rank {} (tag {:#x})", dst, tag);
  return fmt::format("recv from rank {} to rank {} (tag {:#x})", src, dst, tag);
}

namespace {
[[noreturn]] void throw_transfer_failed(const WorldState& world, const Message& m) {
  if (world.lost(m.src)) throw core::PeerLost(world.lost_message(m.src));
  if (world.lost(m.dst)) throw core::PeerLost(world.lost_message(m.dst));
  FAST_THROW(core::IoError, "transfer from worker {} to worker {} (tag {:#x}) failed at {} s (simulated)", m.src, m.dst,
             m.tag, world.now());
}

// in: the message's bytes (the sender's memory, or its copy once released).
void move_payload(core::ConstView in, const Message& m, RecvOp& recv) {
  if (recv.kind == RecvOp::Kind::buffer)
    detail::deliver_into(in, *recv.out);
  else
    detail::deliver_into(in, recv.dst_view, recv.combine, m.src, m.dst, m.tag);
}
}  // namespace

bool transfer_arrived(WorldState& world, Message& m) {
  if (m.arrived) return true;
  try {
    KeepCaughtExceptions keep;
    if (m.transfer->test()) m.arrived = true;
  } catch (const simgrid::Exception&) {
    m.failed = true;
    throw_transfer_failed(world, m);
  }
  return m.arrived;
}

bool wait_transfer(WorldState& world, Message& m, double timeout_seconds) {
  if (m.arrived) return true;
  try {
    // wait_any_for, not wait_for: a timed-out Comm::wait_for cancels the transfer for everyone.
    KeepCaughtExceptions keep;
    if (simgrid::s4u::Comm::wait_any_for({m.transfer}, timeout_seconds) < 0) return false;
    m.arrived = true;
  } catch (const simgrid::Exception&) {
    m.failed = true;
    throw_transfer_failed(world, m);
  }
  return true;
}

namespace {
// The receive's end, once its bytes are in: the counters, or the error of the move. An owned
// buffer (send_owned) goes now: nothing reads a delivered message's bytes again.
void finish_delivery(RecvOp& recv, const Message& m, std::exception_ptr error) {
  if (m.data->owned()) (void)m.data->hand_over();
  if (!error && recv.counters != nullptr) {
    LinkCounters& c = recv.counters->at(m.src);
    c.bytes_received += m.data->bytes();
    c.messages_received += 1;
  }
  recv.error = std::move(error);
  recv.done = true;
}

// The end of a receive whose bytes went in at the send (deliver_early): the move's outcome.
void finish_early(RecvOp& recv, const Message& m) {
  m.early->wait();
  finish_delivery(recv, m, m.early->error);
}
}  // namespace

void deliver_early(WorldState& world, Message& m, const std::shared_ptr<RecvOp>& recv) noexcept {
  if (!m.data->owned() || recv->kind == RecvOp::Kind::held || recv->done || recv->cancelled) return;
  std::shared_ptr<EarlyDelivery> early;
  try {
    early = std::make_shared<EarlyDelivery>();
  } catch (const std::bad_alloc&) {  // then delivered when its transfer arrives, as any message
    return;
  }
  const int src = m.src, dst = m.dst;
  const Tag tag = m.tag;
  // Reads the buffer and writes the receive's destination only, then lets go of the buffer.
  const auto move = [early, recv, src, dst, tag] {
    try {
      if (recv->kind == RecvOp::Kind::buffer)
        detail::deliver_into(early->bytes->view(), *recv->out);
      else
        detail::deliver_into(early->bytes->view(), recv->dst_view, recv->combine, src, dst, tag);
    } catch (...) {
      early->error = std::current_exception();
    }
    early->bytes.reset();
  };
  early->bytes = m.data->hand_over();
  m.early = early;
  m.delivered = true;  // its bytes are in the receive or on their way there: nothing keeps them again
  if (ComputePool* pool = world.compute_pool(); pool != nullptr && m.data->bytes() >= kBesideBytes) {
    try {
      early->done = pool->submit(move).share();
      return;
    } catch (const std::bad_alloc&) {  // no memory for the task: the move runs here instead
    }
  }
  move();
}

void deliver(RecvOp& recv) {
  if (recv.done) return;
  if (recv.message->early) {  // moved at the send
    finish_early(recv, *recv.message);
    return;
  }
  if (recv.kind == RecvOp::Kind::held) {  // read later where it is (read_held), not moved now
    recv.done = true;
    return;
  }
  Message& m = *recv.message;
  m.delivered = true;  // read now or never (a mismatch fails the receive): no copy needed after this
  std::exception_ptr error;
  try {
    move_payload(m.data->view(), m, recv);
  } catch (const std::exception&) {
    error = std::current_exception();
  }
  finish_delivery(recv, m, std::move(error));
}

namespace {
// Runs `read` (which reads the messages' bytes: the senders' memory or their copies) on a compute
// thread while the other actors of the instant run: each message's `delivering` holds the read, so
// that a sender releasing its memory meanwhile waits for it (Message::release_source), and a
// payload not yet copied notes it. `read` must not throw (it keeps its own error). Whatever
// happens, the read has ended when this returns or throws: it uses the caller's frame.
void read_beside(ComputePool& pool, std::span<Message* const> messages, const std::function<void()>& read) {
  const std::shared_future<void> reading = pool.submit(read).share();
  const auto forget = [&] {
    for (Message* m : messages) m->delivering = {};
  };
  try {
    for (Message* m : messages) {
      m->delivering = reading;
      if (!m->data->copied()) m->data->note_read(reading);
    }
  } catch (...) {  // note_read's allocation
    reading.wait();
    forget();
    throw;
  }
  std::exception_ptr yielded;
  try {
    yield_to_others();
  } catch (...) {
    yielded = std::current_exception();  // this actor is killed: the read still ends first
  }
  reading.wait();
  forget();
  if (yielded) std::rethrow_exception(yielded);
}
}  // namespace

void deliver_beside(WorldState& world, RecvOp& recv) {
  if (recv.done) return;
  Message& m = *recv.message;
  ComputePool* pool = world.compute_pool();
  if (m.data->bytes() < kBesideBytes || recv.kind == RecvOp::Kind::held) {
    deliver(recv);
    return;
  }
  if (m.early) {  // moved at the send: the yield of a delivery here, so that the events are the same
    finish_early(recv, m);
    yield_to_others();
    return;
  }
  if (pool == nullptr) {
    deliver(recv);
    yield_to_others();
    return;
  }
  m.delivered = true;
  const core::ConstView in = m.data->view();  // read here: the sender may make its copy meanwhile
  std::exception_ptr error;
  Message* const messages[] = {&m};
  try {
    read_beside(*pool, messages, [in, &m, &recv, &error] {
      try {
        move_payload(in, m, recv);
      } catch (const std::exception&) {
        error = std::current_exception();
      }
    });
  } catch (...) {  // this actor is killed (or note_read could not allocate): the move has ended
    finish_delivery(recv, m, std::move(error));  // the receive is done: nothing delivers it again
    throw;
  }
  finish_delivery(recv, m, std::move(error));
}

namespace {
// Swaps the bytes of a and b (same length), through a small buffer on the stack.
void swap_bytes(void* a, void* b, std::size_t bytes) {
  constexpr std::size_t kChunk = 4096;
  alignas(64) unsigned char held[kChunk];
  auto* x = static_cast<unsigned char*>(a);
  auto* y = static_cast<unsigned char*>(b);
  for (std::size_t at = 0; at < bytes; at += kChunk) {
    const std::size_t n = std::min(kChunk, bytes - at);
    std::memcpy(held, x + at, n);
    std::memcpy(x + at, y + at, n);
    std::memcpy(y + at, held, n);
  }
}
}  // namespace

void Payload::keep() {
  if (copy_) return;
  if (spare_ == nullptr) {
    copy_ = std::make_shared<const core::Buffer>(core::Buffer::copy_of(source_));
    return;
  }
  for (const std::shared_future<void>& read : reads_) read.wait();  // nobody reads the target now
  reads_.clear();
  // The holder first: once the contents are swapped nothing may throw, or the bytes sent would be
  // in a spare that no message reads.
  auto holder = std::make_shared<core::Buffer>();
  (*write_)(spare_->view());  // the new contents, from the sender's memory and the spare
  swap_bytes(target_.data(), spare_->data(), target_.bytes());
  *holder = std::exchange(*spare_, core::Buffer{});
  copy_ = std::move(holder);
  swapped_ = true;
}

void Payload::offer_spare(core::MutableView target, core::Buffer& spare, const Context::ElementWrite& write) {
  FAST_ENFORCE(target.data() == source_.data() && target.numel() == source_.numel() &&
                   target.dtype() == source_.dtype() && spare.numel() == source_.numel() &&
                   spare.dtype() == source_.dtype(),
               "Payload::offer_spare: the target and the spare must be the sent memory's length and dtype");
  target_ = target;
  spare_ = &spare;
  write_ = &write;
  swapped_ = false;
}

bool Payload::withdraw_spare(bool restore) {
  const bool used = swapped_;
  if (used && restore) std::memcpy(target_.data(), copy_->data(), target_.bytes());
  spare_ = nullptr;
  write_ = nullptr;
  target_ = {};
  swapped_ = false;
  return used;
}

void Message::release_source() {
  if (delivering.valid()) delivering.wait();  // a compute thread still reads the sender's memory
  if (failed || (delivered && !early)) return;
  if (arrived)
    if (const std::shared_ptr<RecvOp> recv = receive.lock();
        recv && !recv->done && !recv->cancelled && recv->kind != RecvOp::Kind::held) {
      // Sets delivered: the receive reads nothing more from this message. A message moved at the
      // send (early) ends its receive here all the same, so the receiver's wait sees what it
      // would see after a delivery here.
      deliver(*recv);
      return;
    }
  if (!early) data->keep();  // also for a held receive: its receiver reads the message later
}

void read_held(WorldState& world, std::span<const std::shared_ptr<RecvOp>> ops, core::DType dtype, std::size_t numel,
               const Context::ReduceReceived& reduce) {
  std::vector<core::ConstView> received;
  received.reserve(ops.size());
  std::size_t bytes = 0;
  for (const std::shared_ptr<RecvOp>& op : ops) {
    const Message& m = *op->message;
    received.push_back(m.data->view());  // the copy once made, else the sender's memory
    detail::check_received(received.back(), dtype, numel, m.src, m.dst, m.tag);
    bytes += received.back().bytes();
  }
  std::vector<Message*> messages;
  messages.reserve(ops.size());
  for (const std::shared_ptr<RecvOp>& op : ops) messages.push_back(op->message.get());
  for (Message* m : messages) m->delivered = true;  // read now, no copy needed after
  std::exception_ptr error;
  const auto read = [&] {
    try {
      reduce(received);
    } catch (...) {
      error = std::current_exception();
    }
  };
  ComputePool* pool = world.compute_pool();
  if (bytes < kBesideBytes) {
    read();
  } else if (pool == nullptr) {
    read();
    yield_to_others();
  } else {
    read_beside(*pool, messages, read);
  }
  if (error) std::rethrow_exception(error);
  for (const std::shared_ptr<RecvOp>& op : ops) {
    LinkCounters& c = op->counters->at(op->message->src);
    c.bytes_received += op->message->data->bytes();
    c.messages_received += 1;
  }
}

void SendWork::finish() const {
  done_ = true;
  message_->release_source();
}

// Destroyed before its sender saw it complete: the memory may change or go once the handle is
// gone (core::Work's contract), so a message still to be delivered keeps a copy now.
SendWork::~SendWork() {
  if (!done_) message_->release_source();
}

bool SendWork::completed() const {
  if (done_) return true;
  try {
    if (transfer_arrived(world_, *message_)) finish();
  } catch (const std::exception&) {
    error_ = std::current_exception();
    finish();
  }
  return done_;
}

bool SendWork::wait_for(double timeout_seconds) {
  if (done_) return true;
  if (world_.lost(message_->src)) {  // this worker was lost: nothing may block any more
    error_ = std::make_exception_ptr(core::PeerLost(world_.lost_message(message_->src)));
    finish();
    return true;
  }
  try {
    if (!wait_transfer(world_, *message_, timeout_seconds < 0 ? -1.0 : timeout_seconds)) return false;
  } catch (const std::exception&) {
    error_ = std::current_exception();
  }
  finish();
  return true;
}

void RecvWork::fail(std::exception_ptr e) const {
  if (op_->message && op_->message->early) op_->message->early->wait();  // it writes the destination
  op_->error = std::move(e);
  op_->done = true;
}

RecvWork::~RecvWork() {
  if (op_->done) return;
  if (!op_->message) {
    world_.inbox(op_->dst).cancel(*op_);
    return;
  }
  if (op_->message->early) op_->message->early->wait();  // it writes the destination: it ends first
  // Matched: the message was consumed, so it is delivered (the memory is still valid by contract),
  // unless this worker is being killed or the world aborted.
  if (world_.lost(op_->dst) || world_.aborted()) return;
  try {
    if (wait_transfer(world_, *op_->message, -1.0)) deliver(*op_);
  } catch (const std::exception&) {
  }
}

bool RecvWork::completed() const {
  if (op_->done) return true;
  if (!op_->message) return false;
  try {
    if (transfer_arrived(world_, *op_->message)) deliver(*op_);
  } catch (const std::exception&) {
    fail(std::current_exception());
  }
  return op_->done;
}

bool RecvWork::wait_for(double timeout_seconds) {
  if (op_->done) return true;
  Inbox& inbox = world_.inbox(op_->dst);
  if (world_.lost(op_->dst)) {  // this worker was lost: nothing may block any more
    inbox.cancel(*op_);
    fail(std::make_exception_ptr(core::PeerLost(world_.lost_message(op_->dst))));
    return true;
  }
  const bool default_limit = timeout_seconds < 0;
  const double limit = default_limit ? world_.op_timeout() : timeout_seconds;
  const double deadline = world_.now() + limit;
  const bool specific = op_->src != RecvOp::kAnySource;
  // A peer that ended sent everything it will: its messages matched (or wait in the inbox) at their send.
  auto peer_lost = [&] { return specific && (world_.lost(op_->src) || world_.ended(op_->src)); };
  // A timed wait of an any-source receive (a service waiting for requests) returns early, not
  // completed, when a worker is lost meanwhile, so the service can take the loss into account.
  const std::uint64_t losses = world_.losses();
  auto loss_seen = [&] { return !specific && !default_limit && world_.losses() != losses; };
  while (!op_->message) {
    if (world_.lost(op_->dst)) {  // this worker was lost while it waited: it stops now
      inbox.cancel(*op_);
      fail(std::make_exception_ptr(core::PeerLost(world_.lost_message(op_->dst))));
      return true;
    }
    if (peer_lost()) {  // before the abort check: a loss that aborted the world is this wait's cause
      inbox.cancel(*op_);
      const std::string why = world_.lost(op_->src) ? world_.lost_message(op_->src) : world_.ended_message(op_->src);
      fail(std::make_exception_ptr(core::PeerLost(fmt::format("{} failed: {}", op_->describe(), why))));
      return true;
    }
    if (world_.aborted()) {
      inbox.cancel(*op_);
      fail(std::make_exception_ptr(
          core::RemoteError(fmt::format("{} abandoned: {}", op_->describe(), world_.abort_message()))));
      return true;
    }
    if (loss_seen()) return false;
    const double remaining = deadline - world_.now();
    if (remaining <= 0) {
      if (!default_limit) return false;
      inbox.cancel(*op_);
      fail(std::make_exception_ptr(
          core::TimeoutError(time_limit_message(op_->describe(), limit, " of simulated time"))));
      return true;
    }
    inbox.sleep(remaining, [&] {
      return op_->message != nullptr || world_.aborted() || peer_lost() || loss_seen() || world_.lost(op_->dst);
    });
  }
  try {
    const double remaining = default_limit ? -1.0 : std::max(0.0, deadline - world_.now());
    if (!wait_transfer(world_, *op_->message, remaining)) return false;
    deliver_beside(world_, *op_);
  } catch (const std::exception&) {
    fail(std::current_exception());
  }
  return true;
}

}  // namespace fast::runtime::sim
