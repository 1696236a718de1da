// Rendezvous and rejoin messages of the zmq runtime (runtime/zmq/hello.hpp): a hello frame (a
// wire header, then a JSON payload) and the process description and counts in it. The input is the
// 56-byte header and the payload; it is read as given and again with its header made right (kind
// hello, lengths and checksums), so that the JSON behind the header is reached too.

#include <algorithm>
#include <array>
#include <vector>

#include "fast/wire/frame.hpp"
#include "harness.hpp"
#include "hello.hpp"

namespace {

namespace rz = fast::runtime::zmq;

void read(const std::byte* header, std::size_t header_size, const std::byte* payload, std::size_t payload_size) {
  fast::fuzz::expect_accepted_or_refused([&] {
    std::vector<::zmq::message_t> parts;
    parts.emplace_back(header, header_size);
    parts.emplace_back(payload, payload_size);
    const nlohmann::json hello = rz::read_hello(parts, 0);
    // What the rendezvous and a rejoin read from it.
    if (hello.is_object() && hello.contains("process")) (void)rz::process_from_json(hello.at("process"));
    (void)rz::json_int<int>(hello, "world_size", 1, rz::kMaxProcesses, "hello");
    (void)rz::process_from_json(hello);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using fast::wire::kHeaderBytes;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  if (size < kHeaderBytes) {
    read(bytes, size, bytes, 0);
    return 0;
  }
  read(bytes, kHeaderBytes, bytes + kHeaderBytes, size - kHeaderBytes);
  const std::size_t payload = std::min(size - kHeaderBytes, rz::kMaxHelloBytes);
  std::array<std::byte, kHeaderBytes> header{};
  fast::wire::encode_header({.kind = fast::wire::FrameKind::hello,
                             .flags = fast::wire::kFlagPayloadChecksum,
                             .dtype = fast::core::DType::u8,
                             .count = payload,
                             .payload_bytes = payload,
                             .payload_checksum = fast::wire::checksum({bytes + kHeaderBytes, payload})},
                            header);
  read(header.data(), header.size(), bytes + kHeaderBytes, payload);
  return 0;
}
