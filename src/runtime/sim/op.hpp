#pragma once
// Messages and receives of the sim runtime, and the Work handles that wait on them.
//
// A send reads the caller's memory in place for as long as the caller may not change it (its
// send under way, Context::send). When the caller may change it (it saw the send complete, or
// dropped its Work) a message not yet delivered is delivered there and then if its transfer has
// arrived and its receive is matched, and otherwise keeps a copy (Message::release_source,
// Payload::keep); one Payload serves several sends of the same memory while the first is under
// way. It
// starts its simulated transfer from the sender's host to the receiver's host at once, sized by
// the real byte count (Comm::sendto_async: eager, like TCP with large buffers). The message is
// queued in the receiver's Inbox in send order and matched with receives there. A matched receive
// completes when the transfer has arrived, copying (or adding) the bytes into its destination, or,
// held (recv_each_then), without moving them: its receiver reads the message where it is once
// all of the call's messages are in (read_held), and until then the message counts as not
// delivered. The send completes when its transfer has arrived, whether or not it was matched.
//
// A send of a buffer the runtime owns (SimContext::send_owned) that finds its receive posted
// moves its bytes into it at once (deliver_early) and lets go of the buffer; the receive still
// completes when the transfer arrives, as above, so the simulated events are those of a delivery
// then, and only the memory held meanwhile differs.
//
// Waits never use an OS primitive: a receive not yet matched sleeps on the inbox's SimGrid
// condition variable; a transfer under way is waited with Comm::wait_any_for, which (unlike
// Comm::wait_for) does not cancel the transfer when the wait times out. All limits are simulated
// seconds.

#include <simgrid/s4u/Comm.hpp>

#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "fast/core/buffer.hpp"
#include "fast/core/work.hpp"
#include "fast/runtime/context.hpp"

namespace fast::runtime::sim {

class WorldState;

// Traffic of one worker towards one peer. Plain counters: only the running actor touches them.
struct LinkCounters {
  std::uint64_t bytes_sent = 0, messages_sent = 0, bytes_received = 0, messages_received = 0;
};

// A worker's LinkCounters by peer (SimContext keeps one): an entry for each peer it exchanged a
// message with, zeros for the others, so that a world of n workers holds an entry per link in use
// (a torus gossip: 4 per worker), not n per worker. Only the running actor touches it.
class LinkCounterTable {
 public:
  LinkCounters& at(int peer) { return counters_[peer]; }
  LinkCounters get(int peer) const {
    const auto it = counters_.find(peer);
    return it == counters_.end() ? LinkCounters{} : it->second;
  }

 private:
  std::unordered_map<int, LinkCounters> counters_;
};

// The bytes of one or more sends of the same memory (SimContext::payload_of): the sender's memory
// itself until a message of it must outlive the sender's promise not to change that memory, then
// a copy of it. Touched by the running actor only (plain fields), except that compute threads
// read the sender's memory for deliveries under way (note_read).
class Payload {
 public:
  explicit Payload(core::ConstView source) : source_(source), bytes_(source.bytes()) {}
  // A buffer the runtime owns (SimContext::send_owned): it is the copy from the start.
  explicit Payload(std::shared_ptr<const core::Buffer> owned)
      : source_(owned->view()), copy_(std::move(owned)), bytes_(source_.bytes()), owned_(true) {}
  // What a delivery reads: the copy once made, else the sender's memory (valid and unchanged while
  // any send of it is under way, by Context::send's contract).
  core::ConstView view() const { return copy_ ? copy_->view() : source_; }
  // Copies the sender's memory, once, while it is still the content sent (called before the sender
  // may change it). With a spare offered (offer_spare), writes the sender's new contents into the
  // spare and swaps it with the sender's memory instead: the spare then holds the content sent and
  // becomes the copy, nothing is allocated, and the sender's memory holds its new contents. Throws
  // what the allocation throws.
  void keep();
  bool copied() const noexcept { return copy_ != nullptr; }
  // The bytes sent (also once handed over).
  std::size_t bytes() const noexcept { return bytes_; }
  // Whether it is a buffer the runtime owns, not yet handed over.
  bool owned() const noexcept { return owned_ && copy_ != nullptr; }
  // Gives up the owned buffer to its early delivery (deliver_early): view() is empty from then on.
  std::shared_ptr<const core::Buffer> hand_over() noexcept {
    source_ = {};
    return std::move(copy_);
  }
  // The number of messages that share this payload (SimContext::payload_of counts them).
  std::size_t messages() const noexcept { return messages_; }
  void add_message() noexcept { ++messages_; }
  // A delivery under way on a compute thread that reads view() while it is the sender's memory:
  // keep() waits for it before it writes that memory.
  void note_read(std::shared_future<void> read) { reads_.push_back(std::move(read)); }
  // Offers `spare` (source's dtype and length) to keep(), with `write`, which forms the new contents
  // of `target` (the source's memory) from target and spare (Context::finish_sends_then_write).
  // All must stay valid until withdraw_spare().
  void offer_spare(core::MutableView target, core::Buffer& spare, const Context::ElementWrite& write);
  // Ends the offer. Returns whether keep() used the spare (the target holds its new contents, the
  // spare is left empty); with `restore`, the target gets the content sent back then.
  bool withdraw_spare(bool restore);

 private:
  core::ConstView source_;
  std::shared_ptr<const core::Buffer> copy_;
  std::size_t bytes_ = 0;
  bool owned_ = false;
  std::size_t messages_ = 0;
  std::vector<std::shared_future<void>> reads_;
  core::MutableView target_;
  core::Buffer* spare_ = nullptr;
  const Context::ElementWrite* write_ = nullptr;
  bool swapped_ = false;
};

struct RecvOp;

// The move of an owned message's bytes into its receive at the send (deliver_early): `done` is
// valid while it runs on a compute thread (invalid: it ran inline); `error` is the move's outcome
// (another dtype or length), read once `done` is waited for. The move lets go of `bytes` when it
// ends.
struct EarlyDelivery {
  std::shared_future<void> done;
  std::shared_ptr<const core::Buffer> bytes;
  std::exception_ptr error;
  void wait() const {
    if (done.valid()) done.wait();
  }
};

struct Message {
  int src = 0;
  int dst = 0;
  Tag tag = 0;
  // The sender's elements, shared (read-only) by the messages one worker sent from the same memory
  // while the first one's send was under way (SimContext::payload_of).
  std::shared_ptr<Payload> data;
  simgrid::s4u::CommPtr transfer;  // its simulated transfer
  bool arrived = false;            // the transfer finished (cached once seen)
  bool delivered = false;          // its bytes were written into a receive (deliver) or read (read_held)
  bool failed = false;             // its transfer failed: it is never delivered
  // The receive it was matched with (Inbox), while that receive is posted.
  std::weak_ptr<RecvOp> receive;
  // Valid while a compute thread delivers or reads it (deliver_beside, read_held), reading the
  // sender's memory:
  // release_source() waits for it before the sender may change that memory.
  std::shared_future<void> delivering;
  // Set when its bytes went into its receive at the send (deliver_early); that receive's delivery
  // then only waits for the move and takes its outcome.
  std::shared_ptr<EarlyDelivery> early;
  // The sender may change the memory from now on. A message still to be delivered is delivered
  // now when its transfer has arrived and its receive is matched (the bytes the receiver would
  // read later, written into the memory it posted, which only the receive may touch until it
  // completes); otherwise it keeps a copy (an owned buffer is one already). A message moved at the
  // send (early) ends its arrived, matched receive here too, as that delivery would. Defined in op.cpp.
  void release_source();
};

struct RecvOp {
  // view: into dst_view; buffer: into *out; held: nowhere, its message is read in place by the
  // receiver once every receive of a recv_each_then has completed (read_held).
  enum class Kind { view, buffer, held };
  static constexpr int kAnySource = -1;  // = detail::kAnySource (../matcher.hpp)

  Kind kind = Kind::view;
  int src = 0;  // kAnySource until matched
  int dst = 0;
  Tag tag = 0;
  core::MutableView dst_view;        // Kind::view
  Combine combine = Combine::copy;   // Kind::view
  core::Buffer* out = nullptr;       // Kind::buffer
  int* source = nullptr;             // any-source receives: where the sender's rank goes
  LinkCounterTable* counters = nullptr;  // the receiver's per-peer counters

  std::shared_ptr<Message> message;  // set when matched
  bool cancelled = false;
  bool done = false;
  std::exception_ptr error;

  std::string describe() const;
};

// Waits (simulated seconds; < 0: forever) for a transfer; true when it arrived. Throws PeerLost
// (naming the lost worker) when it failed because a host was turned off.
bool wait_transfer(WorldState& world, Message& message, double timeout_seconds);
// Whether the transfer arrived, without blocking (a failed one throws as above).
bool transfer_arrived(WorldState& world, Message& message);

// An owned message (Payload::owned) matched at its send with a receive posted before it (not held,
// not done): marks it delivered and moves its bytes into the receive now, on a compute thread
// when the world has a pool and the message holds at least kBesideBytes, else inline; the move
// lets go of the buffer as it ends. The receive's destination is the receiver's alone until the
// receive completes, which waits for the move (deliver, ~RecvWork). Nothing for other messages.
// Does not throw: a move that fails (another dtype or length) fails the receive when it completes.
void deliver_early(WorldState& world, Message& m, const std::shared_ptr<RecvOp>& recv) noexcept;

// Copies or adds the arrived message into the receive, sets done (with an error on a mismatch of
// dtype or length) and counts the bytes received. Nothing when the receive is done already (its
// sender delivered it: Message::release_source).
void deliver(RecvOp& recv);
// The same for the receiving actor's own wait (RecvWork::wait_for). A message of at least
// kBesideBytes is copied or added as a computation of no simulated time: on a compute thread when
// the world has a pool, while the other actors of the instant run (a yield, made with and without a
// pool, so that the simulated events do not depend on the threads); smaller ones inline.
void deliver_beside(WorldState& world, RecvOp& recv);
inline constexpr std::size_t kBesideBytes = std::size_t{64} << 10;

// The end of recv_each_then's receives (Kind::held, every one completed): checks each message's
// dtype and length, marks them delivered and runs reduce on views of their bytes (where they are:
// the senders' memory or their copies) as deliver_beside runs a delivery, on a compute thread when
// the world has a pool and the messages hold at least kBesideBytes, with a yield either way for
// them; a sender that releases its memory meanwhile waits for the read (Message::delivering).
// Counts the bytes received. InvalidArgument naming the first message of another dtype or length
// (reduce not run, nothing delivered); what reduce throws.
void read_held(WorldState& world, std::span<const std::shared_ptr<RecvOp>> ops, core::DType dtype, std::size_t numel,
               const Context::ReduceReceived& reduce);

// A send's completion. Once it reports completion (completed() true, wait_for true) or is
// destroyed, its sender may change the memory sent: the message releases it (release_source).
class SendWork final : public core::WorkImpl {
 public:
  SendWork(std::shared_ptr<Message> message, WorldState& world) : message_(std::move(message)), world_(world) {}
  ~SendWork() override;
  SendWork(const SendWork&) = delete;
  SendWork& operator=(const SendWork&) = delete;
  bool completed() const override;
  // Whether the sender was told the send completed (so it may have changed the memory since).
  bool released() const noexcept { return done_; }
  bool wait_for(double timeout_seconds) override;
  std::exception_ptr error() const override { return error_; }
  const std::shared_ptr<Message>& message() const noexcept { return message_; }

 private:
  void finish() const;  // done_ = true, then the message releases the sender's memory
  std::shared_ptr<Message> message_;
  WorldState& world_;
  mutable bool done_ = false;
  mutable std::exception_ptr error_;
};

// A receive's wait: wait_for(t >= 0) of a receive from any source also returns false early when
// a worker is lost during the wait (services check who is still alive).
class RecvWork final : public core::WorkImpl {
 public:
  RecvWork(std::shared_ptr<RecvOp> op, WorldState& world) : op_(std::move(op)), world_(world) {}
  ~RecvWork() override;
  bool completed() const override;
  bool wait_for(double timeout_seconds) override;
  std::exception_ptr error() const override { return op_->error; }

 private:
  void fail(std::exception_ptr e) const;  // the receive ends with e (after an early move ended)
  std::shared_ptr<RecvOp> op_;
  WorldState& world_;
};

}  // namespace fast::runtime::sim
