#pragma once
// The message frame every FAST transport sends between processes: a fixed 56-byte little-endian
// header, then `payload_bytes` bytes of payload (a separate ZeroMQ message part). The header is
// validated completely, with overflow-checked arithmetic, before anything is allocated or read
// from the payload; a bad frame is a FrameError naming the field, expected versus got.
//
// Layout (offsets in bytes, little-endian):
//    0  u32  magic            kMagic ("FAST")
//    4  u16  version          kVersion
//    6  u8   kind             FrameKind
//    7  u8   flags            kFlagPayloadChecksum, kFlagPayloadShared (not both); other bits must be 0
//    8  u8   dtype            core::DType
//    9  u8[3] reserved        0
//   12  i32  src              sender rank
//   16  i32  dst              receiver rank
//   20  u32  payload_checksum checksum() of the payload when kFlagPayloadChecksum, else 0
//   24  u64  tag
//   32  u64  count            elements of dtype
//   40  u64  payload_bytes    must equal count * size_of(dtype)
//   48  u32  header_checksum  checksum() of bytes 0..47
//   52  u32  reserved         0

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fast/core/dtype.hpp"
#include "fast/core/error.hpp"
#include "fast/core/tensor_view.hpp"

namespace fast::wire {

inline constexpr std::uint32_t kMagic = 0x54534146;  // "FAST" little-endian
// Version 3: the checksums are XXH3's (checksum()); in version 2 they were zlib's CRC-32.
// Version 2: a kFlagPayloadShared header heads a record in a shared-memory ring; in
// version 1 it travelled in a ZeroMQ frame with an 8-byte locator. A process of another version
// is refused at its first frame ("frame: version: expected 3, got 2").
inline constexpr std::uint16_t kVersion = 3;
enum class FrameKind : std::uint8_t { data = 1, heartbeat = 2, hello = 3, bye = 4 };
inline constexpr std::uint8_t kFlagPayloadChecksum = 1;  // payload_checksum is set and must match
// The header heads a record of the sender's shared-memory ring (processes of one host, zmq
// runtime) and its payload follows it there; such a header never travels in a ZeroMQ frame.
// Accepted only where Limits::allow_shared.
inline constexpr std::uint8_t kFlagPayloadShared = 2;

struct FrameHeader {
  FrameKind kind = FrameKind::data;
  std::uint8_t flags = 0;
  core::DType dtype = core::DType::u8;
  std::int32_t src = 0;  // sender rank
  std::int32_t dst = 0;  // receiver rank
  std::uint64_t tag = 0;
  std::uint64_t count = 0;          // elements of dtype
  std::uint64_t payload_bytes = 0;  // must equal count * size_of(dtype)
  std::uint32_t payload_checksum = 0;
};

inline constexpr std::size_t kHeaderBytes = 56;

// The header of a data message of `data` from rank src to rank dst under `tag` (no flags).
inline FrameHeader data_header(std::int32_t src, std::int32_t dst, std::uint64_t tag, core::ConstView data) {
  return {.kind = FrameKind::data,
          .dtype = data.dtype(),
          .src = src,
          .dst = dst,
          .tag = tag,
          .count = data.numel(),
          .payload_bytes = data.bytes()};
}

struct Limits {
  std::uint64_t max_payload_bytes = 1ull << 34;  // a frame declaring more is refused
  std::int32_t world_size = 0;                   // src and dst must be in [0, world_size); 0: unchecked
  bool allow_shared = false;                     // kFlagPayloadShared is refused unless set
};

// A malformed frame.
class FrameError : public core::InvalidArgument {
 public:
  using core::InvalidArgument::InvalidArgument;
};

// Writes the header (magic, version and header checksum included). InvalidArgument when
// payload_bytes != count * size_of(dtype).
void encode_header(const FrameHeader& header, std::span<std::byte, kHeaderBytes> out);
// Validates, in order: length, magic, version, header checksum, kind, flags, dtype, reserved
// bytes, count * size_of(dtype) without overflow, payload_bytes <= limits.max_payload_bytes,
// ranks in range. Throws FrameError "frame: <field>: expected X, got Y". Allocates nothing but the
// error message.
FrameHeader decode_header(std::span<const std::byte> bytes, const Limits& limits);
// payload.size() == header.payload_bytes, and the checksum when kFlagPayloadChecksum is set.
void check_payload(const FrameHeader& header, std::span<const std::byte> payload);
// The frames' checksum: the low 32 bits of XXH3-64 (xxHash >= 0.8, seed 0). It detects
// corruption, not forgery: only CURVE authenticates (docs/launch.md). It was zlib's CRC-32 until
// frame version 3; under --insecure every process checksums each payload it sends and receives,
// and XXH3 does that several times faster than CRC-32 on one core.
std::uint32_t checksum(std::span<const std::byte> bytes);
// XXH3-128 of `bytes` with `seed`, {low 64 bits, high 64 bits}: the direct streams' checksum under
// --insecure (runtime/zmq/sealer.hpp). Both run on the widest vector unit of this CPU (AVX-512,
// AVX2 or SSE2 on x86-64), with the same results on every one.
std::array<std::uint64_t, 2> checksum128(std::span<const std::byte> bytes, std::uint64_t seed);
// CRC-32 of zlib, for files whose format names it (checkpoints: strategy/checkpoint.hpp).
std::uint32_t crc32(std::span<const std::byte> bytes);

}  // namespace fast::wire
