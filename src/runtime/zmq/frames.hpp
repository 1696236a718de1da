#pragma once
// ZeroMQ messages <-> wire/ frames: the two conversions the rendezvous and the transport share
// (private header of the zmq runtime).

#include <zmq.hpp>

#include <cstddef>
#include <span>

#include "fast/wire/frame.hpp"

namespace fast::runtime::zmq {

// A message holding the encoded header (wire::encode_header).
inline ::zmq::message_t header_message(const wire::FrameHeader& header) {
  ::zmq::message_t msg(wire::kHeaderBytes);
  wire::encode_header(
      header, std::span<std::byte, wire::kHeaderBytes>(static_cast<std::byte*>(msg.data()), wire::kHeaderBytes));
  return msg;
}

// The bytes of a message, for decode_header and check_payload.
inline std::span<const std::byte> bytes_of(const ::zmq::message_t& m) {
  return {static_cast<const std::byte*>(m.data()), m.size()};
}

}  // namespace fast::runtime::zmq
