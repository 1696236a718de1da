// Worker checkpoint files (strategy/checkpoint.hpp, decode_checkpoint): the header, the CRC, the
// section kinds, names and counts, against the bytes present. The input is decoded as given and
// again with its CRC made right, so that the sections behind the CRC are reached too.

#include <cstring>
#include <vector>

#include "fast/strategy/checkpoint.hpp"
#include "fast/wire/frame.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = fast::fuzz::bytes_of(data, size);
  fast::fuzz::expect_accepted_or_refused([&] { (void)fast::strategy::decode_checkpoint(bytes, "fuzz.ckpt"); });
  if (size >= 4) {
    std::vector<std::byte> fixed(bytes.begin(), bytes.end());
    const std::uint32_t crc = fast::wire::crc32(std::span<const std::byte>(fixed).first(size - 4));
    std::memcpy(fixed.data() + size - 4, &crc, 4);
    fast::fuzz::expect_accepted_or_refused([&] {
      const fast::strategy::Checkpoint c = fast::strategy::decode_checkpoint(fixed, "fuzz.ckpt");
      // What it decodes, encodes back to the same bytes.
      if (fast::strategy::encode_checkpoint(c).size() != size) __builtin_trap();
    });
  }
  return 0;
}
