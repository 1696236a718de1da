#include "wire.hpp"

#include <bit>

namespace fast::compress::wire {

std::uint8_t* begin_payload(core::Buffer& out, std::size_t bytes, CodecId id, std::size_t n) {
  out.resize(bytes, core::DType::u8);
  auto* p = static_cast<std::uint8_t*>(out.data());
  std::memcpy(p, kMagic, 4);
  p[4] = static_cast<std::uint8_t>(id);
  p[5] = kVersion;
  p[6] = 0;
  p[7] = 0;
  put<std::uint64_t>(p + 8, n);
  return p + kHeaderBytes;
}

std::span<const std::uint8_t> check_header(std::string_view codec, CodecId id, core::ConstView payload,
                                           core::MutableView out) {
  FAST_ENFORCE(payload.dtype() == core::DType::u8, "codec '{}': payload must be u8, got {}", codec,
               core::name_of(payload.dtype()));
  FAST_ENFORCE(out.dtype() == core::DType::f32, "codec '{}': decode output must be f32, got {}", codec,
               core::name_of(out.dtype()));
  const auto* p = static_cast<const std::uint8_t*>(payload.data());
  const std::size_t size = payload.numel();
  FAST_ENFORCE(size >= kHeaderBytes, "codec '{}': truncated payload of {} bytes, expected at least the {}-byte header",
               codec, size, kHeaderBytes);
  FAST_ENFORCE(std::memcmp(p, kMagic, 4) == 0,
               "codec '{}': bad magic {:02x} {:02x} {:02x} {:02x}, expected 46 43 44 43 (\"FCDC\")", codec, p[0], p[1],
               p[2], p[3]);
  FAST_ENFORCE(p[4] == static_cast<std::uint8_t>(id), "codec '{}': payload of codec id {}, expected {}", codec, p[4],
               static_cast<unsigned>(id));
  FAST_ENFORCE(p[5] == kVersion, "codec '{}': payload format version {}, expected {}", codec, p[5], kVersion);
  FAST_ENFORCE(p[6] == 0 && p[7] == 0, "codec '{}': reserved header bytes {} {}, expected 0 0", codec, p[6], p[7]);
  const auto n = get<std::uint64_t>(p + 8);
  FAST_ENFORCE(n == out.numel(), "codec '{}': payload holds n = {} elements, output has {}", codec, n, out.numel());
  return {p, size};
}

void check_length(std::string_view codec, std::size_t got, std::size_t expected, std::string_view what) {
  FAST_ENFORCE(got == expected, "codec '{}': {} payload of {} bytes, expected {} ({})", codec,
               got < expected ? "truncated" : "wrong-length", got, expected, what);
}

void check_input(std::string_view codec, core::ConstView input) {
  FAST_ENFORCE(input.dtype() == core::DType::f32, "codec '{}': input must be f32, got {}", codec,
               core::name_of(input.dtype()));
}

}  // namespace fast::compress::wire
