// ZmqTransport's shared memory with the processes of its host (transport.hpp, shared_ring.hpp):
// offering a ring, mapping a peer's, sending and delivering payloads through them.
#include <algorithm>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "frames.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

using nlohmann::json;

void ZmqTransport::offer_ring(int process) {
  const ProcessInfo& peer = table_[static_cast<std::size_t>(process)];
  const std::string& host = table_[static_cast<std::size_t>(process_)].host_id;
  if (settings_.shared_ring_bytes == 0 || peer.host_id != host) return;
  const auto peers = std::count_if(table_.begin(), table_.end(), [&](const ProcessInfo& p) {
    return p.rank != process_ && p.host_id == host;
  });
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
  OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
  {
    std::lock_guard<std::mutex> lock(out.mutex);
    out.ready = false;
    out.ring.reset();
  }
  inbound_[static_cast<std::size_t>(process)].reset();  // payloads still held keep the mapping
}

bool ZmqTransport::send_shared(int process, wire::FrameHeader header, core::ConstView data) {
  OutboundShared& out = *outbound_[static_cast<std::size_t>(process)];
  std::lock_guard<std::mutex> lock(out.mutex);
  if (!out.ready) return false;
  header.flags = wire::kFlagPayloadShared;
  header.payload_checksum = 0;
  const std::span<const std::byte> payload(static_cast<const std::byte*>(data.data()), data.bytes());
  const std::optional<std::uint64_t> position = out.ring->put(payload);
  if (!position) return false;
  // Still under out.mutex: frames to this process leave in the order of their ring positions.
  const auto locator = wire::encode_locator(*position);
  send_frame(process, {header_message(header), ::zmq::message_t(locator.data(), locator.size())});
  return true;
}

void ZmqTransport::on_shared_hello(int from, const json& body) {
  const ProcessInfo& peer = table_[static_cast<std::size_t>(from)];
  try {
    if (body.contains("shm")) {
      const json& offer = body.at("shm");
      const auto id = offer.at("id").get<std::uint64_t>();
      FAST_ENFORCE(peer.host_id == table_[static_cast<std::size_t>(process_)].host_id,
                   "frame: a shared-memory ring offered by {}, which is on another host", peer.where());
      try {
        inbound_[static_cast<std::size_t>(from)] =
            InboundRing::open(peer.pid, offer.at("fd").get<int>(), offer.at("bytes").get<std::uint64_t>());
        send_hello(from, {{"shm_ready", id}});
        core::log(core::LogLevel::debug, "zmq runtime: payloads from {} come through shared memory", peer.where());
      } catch (const core::Error& e) {
        inbound_[static_cast<std::size_t>(from)].reset();
        send_hello(from, {{"shm_refused", id}});
        core::log(core::LogLevel::info, "zmq runtime: payloads from {} come through ZeroMQ, not shared memory: {}",
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
  } catch (const json::exception& e) {
    FAST_THROW(core::InvalidArgument, "frame: malformed shared-memory hello from {}: {}", peer.where(), e.what());
  }
}

void ZmqTransport::deliver_shared(int from, const wire::FrameHeader& header, const ::zmq::message_t& locator) {
  const std::shared_ptr<InboundRing>& ring = inbound_[static_cast<std::size_t>(from)];
  if (!ring)
    throw wire::FrameError(fmt::format("frame: flags: a shared payload from {}, whose ring is not mapped here",
                                       table_[static_cast<std::size_t>(from)].where()));
  InboundRing::Payload payload = ring->take(wire::decode_locator(bytes_of(locator)), header.payload_bytes);
  world_->deliver_remote(header.src, header.dst, header.tag,
                         core::ConstView(payload.bytes.data(), header.count, header.dtype), std::move(payload.owner));
}

}  // namespace fast::runtime::zmq
