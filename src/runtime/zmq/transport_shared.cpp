// ZmqTransport's shared memory with the processes of its host (transport.hpp, shared_ring.hpp):
// offering a ring, mapping a peer's, sending messages through them, and each mapped ring's reader.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "frames.hpp"
#include "hello.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

using nlohmann::json;

namespace {
// A record's body: the frame header (wire::kFlagPayloadShared set), then how many data frames the
// sender had sent to this process through ZeroMQ before it (u64, little-endian), then the payload.
constexpr std::size_t kAfterOffset = wire::kHeaderBytes;
constexpr std::size_t kRecordHeadBytes = ZmqTransport::kRecordHeadBytes;
static_assert(kRecordHeadBytes % 64 == 0, "the payload of a record stays 64-byte aligned");

// How long a reader sleeps at most between looks at its ring when no bell rings. The wake-ups are
// exact (shared_ring.hpp), so this only bounds what a faulty sender that clears `waiting` in its
// own ring costs its own messages; long, so that the idle readers of many processes on one host
// (one per other process) cost next to nothing.
constexpr std::chrono::milliseconds kReaderNap{1000};
}  // namespace

void ZmqTransport::offer_ring(int process) {
  const ProcessInfo& peer = table_[static_cast<std::size_t>(process)];
  const std::string& host = table_[static_cast<std::size_t>(process_)].host_id;
  if (settings_.shared_ring_bytes == 0 || peer.host_id != host) return;
  const auto peers = std::count_if(table_.begin(), table_.end(),
                                   [&](const ProcessInfo& p) { return p.rank != process_ && p.host_id == host; });
  const std::size_t capacity = ring_capacity(settings_.shared_ring_bytes, static_cast<int>(peers));
  std::unique_ptr<OutboundRing> ring;
  try {
    ring = std::make_unique<OutboundRing>(capacity);
  } catch (const core::Error& e) {
    core::log(core::LogLevel::info, "zmq runtime: no shared memory with {}: {}", peer.where(), e.what());
    return;
  }
  const std::uint64_t id = next_ring_id_++;
  const json offer = {{"shm", {{"id", id}, {"fd", ring->fd()}, {"bytes", ring->file_bytes()}}}};
  {
    OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
    std::lock_guard<std::mutex> lock(out.mutex);
    out.ring = std::move(ring);
    out.id = id;
    out.ready = false;
  }
  send_hello(process, offer);
}

void ZmqTransport::retire_ring(int process) {
  {
    OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
    std::lock_guard<std::mutex> lock(out.mutex);
    drop_pending(out);  // they were for the process that left
    out.ready = false;
    out.ring.reset();
    out.zmq_data = 0;  // the process that takes the rank back counts from 0
  }
  InboundShared& in = *inbound_[static_cast<std::size_t>(process)];
  stop_reader(in);
  std::lock_guard<std::mutex> lock(in.mutex);  // reset in place: pollers read inbound_ without a lock
  in.ring.reset();                             // payloads still held keep the old mapping
  in.assembled.reset();                        // a message its predecessor did not finish
  in.assembled_bytes = 0;
  in.mapped = false;
  in.zmq_data = 0;
  in.failed = false;
  in.failure.clear();
}

bool ZmqTransport::send_shared(OutboundShared& out, wire::FrameHeader header, core::ConstView data) {
  if (!out.ready) return false;
  header.flags = wire::kFlagPayloadShared;
  header.payload_checksum = 0;
  std::array<std::byte, kRecordHeadBytes> head{};
  wire::encode_header(header, std::span<std::byte, wire::kHeaderBytes>(head.data(), wire::kHeaderBytes));
  const std::uint64_t after = out.zmq_data;
  std::memcpy(head.data() + kAfterOffset, &after, sizeof(after));
  return out.ring->put(head, {static_cast<const std::byte*>(data.data()), data.bytes()});
}

void ZmqTransport::on_shared_hello(int from, const json& body) {
  const ProcessInfo& peer = table_[static_cast<std::size_t>(from)];
  try {
    if (body.contains("shm")) {
      const json& offer = body.at("shm");
      const auto id = offer.at("id").get<std::uint64_t>();
      FAST_ENFORCE(peer.host_id == table_[static_cast<std::size_t>(process_)].host_id,
                   "frame: a shared-memory ring offered by {}, which is on another host", peer.where());
      InboundShared& in = *inbound_[static_cast<std::size_t>(from)];
      stop_reader(in);  // an earlier offer of the same process (not sent by this code; refused below if bad)
      try {
        auto ring = InboundRing::open(
            peer.pid, json_int<int>(offer, "fd", 0, std::numeric_limits<int>::max(), "frame: shm offer"),
            json_int<std::uint64_t>(offer, "bytes", 0, 64LL << 30, "frame: shm offer"));
        // A payload's owner may release room after this transport is gone: the weak pointer.
        ring->set_on_room([reply = std::weak_ptr<OutboundShared>(outbound_[static_cast<std::size_t>(from)])] {
          if (auto out = reply.lock()) tell_room(*out);
        });
        {
          std::lock_guard<std::mutex> poll_lock(poll_mutex_);
          std::lock_guard<std::mutex> lock(in.mutex);
          ring->set_polled(polled_.load());
          in.ring = std::move(ring);
          in.mapped = true;
        }
        start_reader(from);
        send_hello(from, {{"shm_ready", id}});
        core::log(core::LogLevel::debug, "zmq runtime: messages from {} come through shared memory", peer.where());
      } catch (const core::Error& e) {
        send_hello(from, {{"shm_refused", id}});
        core::log(core::LogLevel::info, "zmq runtime: messages from {} come through ZeroMQ, not shared memory: {}",
                  peer.where(), e.what());
      }
      return;
    }
    const bool ready = body.contains("shm_ready");
    const auto id = body.at(ready ? "shm_ready" : "shm_refused").get<std::uint64_t>();
    OutboundShared& out = *outbound_[static_cast<std::size_t>(from)];
    std::lock_guard<std::mutex> lock(out.mutex);
    if (!out.ring || out.id != id) return;  // an answer to an offer since withdrawn (a rank taken back)
    out.ready = ready;
    if (!ready) out.ring.reset();
    flush_pending(from, out);  // a refused ring sends what waited through ZeroMQ
  } catch (const json::exception& e) {
    FAST_THROW(core::InvalidArgument, "frame: malformed shared-memory hello from {}: {}", peer.where(), e.what());
  }
}

void ZmqTransport::start_reader(int from) {
  std::shared_ptr<InboundShared> in = inbound_[static_cast<std::size_t>(from)];
  in->stop = false;
  in->reader = std::thread([this, from, in] {
    while (!in->stop.load()) {
      std::shared_ptr<InboundRing> ring;
      std::uint32_t seen = 0;
      {
        std::lock_guard<std::mutex> lock(in->mutex);
        if (!in->ring) return;
        ring = in->ring;
        seen = ring->bell();
        drain(from, *in);
      }
      flush_waiting(from);  // the bell also rings when `from` released room for what waits
      ring->sleep(seen, kReaderNap);
    }
  });
}

void ZmqTransport::stop_reader(InboundShared& in) {
  if (!in.reader.joinable()) return;
  in.stop = true;
  {
    std::lock_guard<std::mutex> lock(in.mutex);
    if (in.ring) in.ring->wake();
  }
  in.reader.join();
}

void ZmqTransport::drain(int from, InboundShared& in) {
  if (!in.ring) return;
  const ProcessInfo& sender = table_[static_cast<std::size_t>(from)];
  try {
    while (std::optional<std::span<const std::byte>> body = in.ring->peek()) {
      if (body->size() < kRecordHeadBytes)
        throw wire::FrameError(fmt::format("shared-memory ring: record of {} bytes: expected at least {}", body->size(),
                                           kRecordHeadBytes));
      std::array<std::byte, kRecordHeadBytes> head{};  // read once: the sender may change its ring
      std::memcpy(head.data(), body->data(), head.size());
      std::uint64_t after = 0;
      std::memcpy(&after, head.data() + kAfterOffset, sizeof(after));
      if (after > in.zmq_data) return;  // a frame sent through ZeroMQ before it has not been handled yet
      const std::size_t part = body->size() - kRecordHeadBytes;
      const wire::FrameHeader header = wire::decode_header(std::span<const std::byte>(head.data(), wire::kHeaderBytes),
                                                           {.max_payload_bytes = wire::Limits{}.max_payload_bytes,
                                                            .world_size = world_->state().size(),
                                                            .allow_shared = true});
      if (header.kind != wire::FrameKind::data || header.flags != wire::kFlagPayloadShared ||
          header.payload_bytes < part)
        throw wire::FrameError(fmt::format(
            "shared-memory ring: record: expected a data frame with kFlagPayloadShared and at least {} payload bytes, "
            "got kind {}, flags {:#x}, {} bytes",
            part, static_cast<int>(header.kind), header.flags, header.payload_bytes));
      check_endpoints(sender, header);
      InboundRing::Payload payload = in.ring->take();
      if (in.assembled || part < header.payload_bytes) {  // a part of a message sent in fragments
        assemble(in, header, payload.bytes.subspan(kRecordHeadBytes));
        continue;
      }
      try {
        world_->deliver_remote(header.src, header.dst, header.tag,
                               core::ConstView(payload.bytes.data() + kRecordHeadBytes, header.count, header.dtype),
                               std::move(payload.owner), /*copy_when_queued=*/true);  // regions free in order:
                                                                                      // none may wait long
      } catch (const core::Error& e) {  // the message, not the ring, is at fault: the next record follows
        core::log(core::LogLevel::warn, "zmq runtime: dropped a message from {}: {}", sender.where(), e.what());
      }
    }
  } catch (const core::Error& e) {
    // The ring cannot be read past a broken record: the process is counted lost (check_peers()).
    in.failure = fmt::format("sent a malformed shared-memory record: {}", e.what());
    in.failed = true;
    in.ring.reset();  // the reader ends when it finds no ring
    in.mapped = false;
  }
}

void ZmqTransport::assemble(InboundShared& in, const wire::FrameHeader& header, std::span<const std::byte> part) {
  const wire::FrameHeader& whole = in.assembling;
  if (!in.assembled) {
    if (part.empty())
      throw wire::FrameError("shared-memory ring: record: an empty fragment of a message of " +
                             std::to_string(header.payload_bytes) + " bytes");
    try {
      if (!in.assembly_pool) in.assembly_pool = std::make_shared<BufferPool>();
      in.assembled = in.assembly_pool->take(header.payload_bytes);
    } catch (const std::bad_alloc&) {
      throw wire::FrameError(
          fmt::format("shared-memory ring: a message of {} bytes: out of memory", header.payload_bytes));
    }
    in.assembling = header;
    in.assembled_bytes = 0;
  } else if (header.src != whole.src || header.dst != whole.dst || header.tag != whole.tag ||
             header.dtype != whole.dtype || header.count != whole.count ||
             header.payload_bytes != whole.payload_bytes || part.empty() ||
             part.size() > whole.payload_bytes - in.assembled_bytes) {
    throw wire::FrameError(fmt::format(
        "shared-memory ring: record: a fragment of {} bytes that does not continue the message being assembled "
        "(from worker {} to worker {}, tag {:#x}, {} of {} bytes)",
        part.size(), whole.src, whole.dst, whole.tag, in.assembled_bytes, whole.payload_bytes));
  }
  std::memcpy(in.assembled.get() + in.assembled_bytes, part.data(), part.size());
  in.assembled_bytes += part.size();
  if (in.assembled_bytes < whole.payload_bytes) return;
  std::shared_ptr<std::byte> buffer = std::move(in.assembled);
  in.assembled_bytes = 0;
  try {
    world_->deliver_remote(whole.src, whole.dst, whole.tag, core::ConstView(buffer.get(), whole.count, whole.dtype),
                           buffer);
  } catch (const core::Error& e) {  // the message, not the ring, is at fault
    core::log(core::LogLevel::warn, "zmq runtime: dropped a message from worker {}: {}", whole.src, e.what());
  }
}

void ZmqTransport::publish_polled(bool on) {
  polled_ = on;
  if (!on) polled_cv_.notify_all();  // the streams' threads read again
  for (const auto& in : inbound_) {
    if (!in->mapped.load(std::memory_order_acquire)) continue;
    std::lock_guard<std::mutex> lock(in->mutex);
    if (in->ring) in->ring->set_polled(on);
  }
}

void ZmqTransport::drain_all() {
  for (std::size_t p = 0; p < inbound_.size(); ++p) {
    InboundShared& in = *inbound_[p];
    if (!in.mapped.load(std::memory_order_acquire)) continue;
    std::lock_guard<std::mutex> lock(in.mutex);
    if (in.ring && in.ring->pending()) drain(static_cast<int>(p), in);
  }
}

void ZmqTransport::sleep_begin() {
  {
    std::lock_guard<std::mutex> lock(poll_mutex_);
    if (++sleepers_ == 1 && polled_.load()) publish_polled(false);
  }
  // A sender that saw `polled` set left the reader asleep: what it published is delivered here;
  // and what the streams hold; and a receiver that saw it set told no reader of room released.
  drain_all();
  poll_streams();
  for (std::size_t p = 0; p < outbound_.size(); ++p) flush_waiting(static_cast<int>(p));
}

void ZmqTransport::sleep_end() {
  std::lock_guard<std::mutex> lock(poll_mutex_);
  --sleepers_;  // the next poll() sets `polled` again once no thread blocks
}

void ZmqTransport::flush_pending(int process, OutboundShared& out) {
  while (!out.pending.empty()) {
    OutboundShared::Pending& p = out.pending.front();
    if (p.fits && out.ready) {
      if (!send_shared(out, p.header, p.data)) break;  // still no room
      if (p.done) p.done->complete();
    } else if (p.fragment) {  // the ring went away (its process left): the rest of the message too
      if (p.done) p.done->complete();
    } else {
      send_zmq(out, process, p.header, p.data, std::move(p.done));
    }
    out.pending.pop_front();
  }
  out.has_pending = !out.pending.empty();
  if (out.ring && out.ready && out.pending.empty()) out.ring->want_room(false);
}

void ZmqTransport::wait_for_room(int process, OutboundShared& out) {
  if (!out.ring || !out.ready) return;
  out.ring->want_room(true);
  flush_pending(process, out);  // room released before the receiver saw the flag
}

void ZmqTransport::flush_waiting(int process) {
  OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
  if (!out.has_pending.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(out.mutex, std::try_to_lock);
  if (lock) flush_pending(process, out);  // else its holder sends, or flushes, itself
}

void ZmqTransport::tell_room(OutboundShared& out) {
  // A holder of the lock is sending to that process: its record rings the same bell. (A holder
  // whose record finds no room leaves the sender to its I/O thread's next turn.)
  std::unique_lock<std::mutex> lock(out.mutex, std::try_to_lock);
  if (lock && out.ring && out.ready) out.ring->ring_bell();
}

void ZmqTransport::drop_pending(OutboundShared& out) {
  for (OutboundShared::Pending& p : out.pending)
    if (p.done) p.done->complete();
  out.pending.clear();
  out.has_pending = false;
}

bool ZmqTransport::any_pending() const {
  for (const auto& out : outbound_)
    if (out->has_pending.load(std::memory_order_relaxed)) return true;
  return false;
}

bool ZmqTransport::PolledWork::wait_for(double timeout_seconds) {
  // Polls for at most the poll budget (as WorldState::poll_transport), then sleeps on the
  // completion; the I/O thread copies queued messages meanwhile.
  if (done_->completed()) return true;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(transport_.settings_.poll_seconds, 1e-4));
  bool done = false;
  for (unsigned i = 1; !(done = done_->completed()); ++i) {
    transport_.poll();
    transport_.pause_between_looks();
    if (i % 16 == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  if (done) return true;
  transport_.sleep_begin();
  struct End {
    ZmqTransport& t;
    ~End() { t.sleep_end(); }
  } end{transport_};
  return done_->wait_for(timeout_seconds);
}

void ZmqTransport::poll() {
  // Without polling in the waiters (FAST_POLL_US=0) the readers deliver: `polled` stays clear.
  if (polls_in_caller() && !polled_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(poll_mutex_);
    if (sleepers_ == 0 && !polled_.load()) publish_polled(true);
  }
  for (std::size_t p = 0; p < outbound_.size(); ++p) flush_waiting(static_cast<int>(p));
  for (std::size_t p = 0; p < inbound_.size(); ++p) {
    InboundShared& in = *inbound_[p];
    if (!in.mapped.load(std::memory_order_acquire)) continue;
    std::unique_lock<std::mutex> lock(in.mutex, std::try_to_lock);
    if (lock && in.ring && in.ring->pending()) drain(static_cast<int>(p), in);  // else another thread drains it
  }
  if (stream_fd_ >= 0) {
    last_poll_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    poll_streams();
  }
}

void ZmqTransport::settle_ring(int from, bool counted_data_frame) {
  InboundShared& in = *inbound_[static_cast<std::size_t>(from)];
  std::lock_guard<std::mutex> lock(in.mutex);
  if (counted_data_frame) ++in.zmq_data;
  drain(from, in);
}

}  // namespace fast::runtime::zmq
