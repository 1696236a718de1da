#include "fast/wire/frame.hpp"

#include <zlib.h>

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "fast/core/hash.hpp"

namespace fast::wire {

namespace {

template <typename T>
void put(std::byte* out, std::size_t offset, T value) {
  static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");
  std::memcpy(out + offset, &value, sizeof(T));
}

template <typename T>
T get(const std::byte* in, std::size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

bool known_kind(std::uint8_t k) { return k >= 1 && k <= 4; }
bool known_dtype(std::uint8_t d) { return d <= static_cast<std::uint8_t>(core::DType::u8); }

}  // namespace

std::uint32_t checksum(std::span<const std::byte> bytes) { return static_cast<std::uint32_t>(core::xxh3_64(bytes)); }

std::array<std::uint64_t, 2> checksum128(std::span<const std::byte> bytes, std::uint64_t seed) {
  return core::xxh3_128(bytes, seed);
}

std::uint32_t crc32(std::span<const std::byte> bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  std::size_t left = bytes.size();
  while (left > 0) {  // zlib takes uInt lengths
    const auto n = static_cast<uInt>(std::min<std::size_t>(left, std::numeric_limits<uInt>::max()));
    crc = ::crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<std::uint32_t>(crc);
}

void encode_header(const FrameHeader& h, std::span<std::byte, kHeaderBytes> out) {
  FAST_ENFORCE(h.payload_bytes == h.count * core::size_of(h.dtype),
               "frame: payload_bytes: expected count x {} = {}, got {}", core::size_of(h.dtype),
               h.count * core::size_of(h.dtype), h.payload_bytes);
  std::byte* o = out.data();
  std::memset(o, 0, kHeaderBytes);
  put<std::uint32_t>(o, 0, kMagic);
  put<std::uint16_t>(o, 4, kVersion);
  put<std::uint8_t>(o, 6, static_cast<std::uint8_t>(h.kind));
  put<std::uint8_t>(o, 7, h.flags);
  put<std::uint8_t>(o, 8, static_cast<std::uint8_t>(h.dtype));
  put<std::int32_t>(o, 12, h.src);
  put<std::int32_t>(o, 16, h.dst);
  put<std::uint32_t>(o, 20, h.payload_checksum);
  put<std::uint64_t>(o, 24, h.tag);
  put<std::uint64_t>(o, 32, h.count);
  put<std::uint64_t>(o, 40, h.payload_bytes);
  put<std::uint32_t>(o, 48, checksum({o, 48}));
}

FrameHeader decode_header(std::span<const std::byte> bytes, const Limits& limits) {
  if (bytes.size() != kHeaderBytes)
    throw FrameError(fmt::format("frame: header length: expected {} bytes, got {}", kHeaderBytes, bytes.size()));
  const std::byte* in = bytes.data();
  const auto magic = get<std::uint32_t>(in, 0);
  if (magic != kMagic) throw FrameError(fmt::format("frame: magic: expected {:#010x}, got {:#010x}", kMagic, magic));
  const auto version = get<std::uint16_t>(in, 4);
  if (version != kVersion) throw FrameError(fmt::format("frame: version: expected {}, got {}", kVersion, version));
  const auto sum = get<std::uint32_t>(in, 48), want = checksum({in, 48});
  if (sum != want) throw FrameError(fmt::format("frame: header checksum: expected {:#010x}, got {:#010x}", want, sum));
  const auto kind = get<std::uint8_t>(in, 6), flags = get<std::uint8_t>(in, 7), dtype = get<std::uint8_t>(in, 8);
  if (!known_kind(kind)) throw FrameError(fmt::format("frame: kind: expected 1 (data) to 4 (bye), got {}", kind));
  const std::uint8_t known = limits.allow_shared ? (kFlagPayloadChecksum | kFlagPayloadShared) : kFlagPayloadChecksum;
  if ((flags & ~known) != 0 || flags == (kFlagPayloadChecksum | kFlagPayloadShared))
    throw FrameError(fmt::format("frame: flags: expected {}, got {:#04x}",
                                 limits.allow_shared ? "bit 0 or bit 1, not both" : "only bit 0", flags));
  if (!known_dtype(dtype)) throw FrameError(fmt::format("frame: dtype: expected 0 to 6, got {}", dtype));
  if (get<std::uint8_t>(in, 9) != 0 || get<std::uint16_t>(in, 10) != 0 || get<std::uint32_t>(in, 52) != 0)
    throw FrameError("frame: reserved bytes: expected 0, got other values");
  FrameHeader h{.kind = static_cast<FrameKind>(kind),
                .flags = flags,
                .dtype = static_cast<core::DType>(dtype),
                .src = get<std::int32_t>(in, 12),
                .dst = get<std::int32_t>(in, 16),
                .tag = get<std::uint64_t>(in, 24),
                .count = get<std::uint64_t>(in, 32),
                .payload_bytes = get<std::uint64_t>(in, 40),
                .payload_checksum = get<std::uint32_t>(in, 20)};
  const std::uint64_t size = core::size_of(h.dtype);
  if (h.count > std::numeric_limits<std::uint64_t>::max() / size || h.count * size != h.payload_bytes)
    throw FrameError(fmt::format("frame: payload_bytes: expected count ({}) x {} bytes of {}, got {}", h.count, size,
                                 core::name_of(h.dtype), h.payload_bytes));
  if (h.payload_bytes > limits.max_payload_bytes)
    throw FrameError(
        fmt::format("frame: payload_bytes: expected at most {}, got {}", limits.max_payload_bytes, h.payload_bytes));
  if (limits.world_size > 0 && (h.src < 0 || h.src >= limits.world_size || h.dst < 0 || h.dst >= limits.world_size))
    throw FrameError(
        fmt::format("frame: src/dst: expected ranks in [0, {}), got {} and {}", limits.world_size, h.src, h.dst));
  return h;
}

void check_payload(const FrameHeader& h, std::span<const std::byte> payload) {
  if (payload.size() != h.payload_bytes)
    throw FrameError(fmt::format("frame: payload length: expected {} bytes, got {}", h.payload_bytes, payload.size()));
  if ((h.flags & kFlagPayloadChecksum) == 0) return;
  const std::uint32_t sum = checksum(payload);
  if (sum != h.payload_checksum)
    throw FrameError(fmt::format("frame: payload checksum: expected {:#010x}, got {:#010x}", h.payload_checksum, sum));
}

}  // namespace fast::wire
