// Wire frames (wire/frame.hpp) and the service requests carried in them (wire/requests.hpp). The
// input is a 56-byte header and its payload; it is decoded as given and again with its checksums
// made right, so that the fields behind the header checksum are reached too. The same bytes, as
// i64 words, are a window request and a parameter-server request.

#include <cstring>
#include <vector>

#include "fast/wire/frame.hpp"
#include "fast/wire/requests.hpp"
#include "harness.hpp"

namespace {

void decode(std::span<const std::byte> header, std::span<const std::byte> payload, int world_size) {
  for (const bool shared : {false, true}) {
    fast::fuzz::expect_accepted_or_refused([&] {
      const fast::wire::FrameHeader h = fast::wire::decode_header(
          header, {.max_payload_bytes = 1 << 20, .world_size = world_size, .allow_shared = shared});
      fast::wire::check_payload(h, payload);
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using fast::wire::kHeaderBytes;
  const auto bytes = fast::fuzz::bytes_of(data, size);
  const int world_size = size > 0 ? data[0] % 5 : 0;
  if (size < kHeaderBytes) {
    decode(bytes, {}, world_size);
  } else {
    decode(bytes.first(kHeaderBytes), bytes.subspan(kHeaderBytes), world_size);
    std::vector<std::byte> fixed(bytes.begin(), bytes.end());
    const std::uint32_t payload_sum = fast::wire::checksum(std::span<const std::byte>(fixed).subspan(kHeaderBytes));
    std::memcpy(fixed.data() + 20, &payload_sum, 4);
    const std::uint32_t header_sum = fast::wire::checksum(std::span<const std::byte>(fixed).first(48));
    std::memcpy(fixed.data() + 48, &header_sum, 4);
    decode(std::span<const std::byte>(fixed).first(kHeaderBytes),
           std::span<const std::byte>(fixed).subspan(kHeaderBytes), world_size);
  }
  std::vector<std::int64_t> words(size / 8);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 8);
  fast::fuzz::expect_accepted_or_refused([&] {
    const auto r = fast::wire::WindowRequest::from_words(words);
    if (fast::wire::WindowRequest::from_words(r.to_words()).to_words() != r.to_words()) __builtin_trap();
  });
  fast::fuzz::expect_accepted_or_refused([&] {
    const auto r = fast::wire::PsRequest::from_words(words);
    if (fast::wire::PsRequest::from_words(r.to_words()).to_words() != r.to_words()) __builtin_trap();
  });
  return 0;
}
