// The records of a direct stream (runtime/zmq/stream.hpp) as a receiver reads them without
// blocking (StreamReader::advance). The input is a sequence of records in clear: each a u16
// (little-endian: its low 15 bits the payload's length, at most 4,096 bytes taken from the input;
// its top bit set: the head's chunk size and the frame header's checksum are left as given, else
// made right (the chunk size the smallest a reader accepts) so that the fields behind them are
// reached), the record's plain head (its kind, chunk size, `after` and a 56-byte frame header),
// then its payload. The harness seals them as a
// sender does (an XXH3 checksum or an AEAD, chosen by the first input byte, under a fixed key),
// flips one byte of the sealed stream when the second input byte says so, and feeds the stream to
// a reader over a socket pair in pieces of uneven sizes, advancing after each piece, until it ends.
// A record may declare any payload size: the reader's allocation refuses more than 1 MiB with
// core::IoError, as the transport's refuses what it cannot allocate.

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "fast/wire/frame.hpp"
#include "harness.hpp"
#include "sealer.hpp"
#include "stream.hpp"

namespace {

namespace rz = fast::runtime::zmq;

// The sealed wire bytes of the records described by `in` (see the top of this file).
std::vector<std::byte> sealed_stream(rz::Protection protection, std::span<const std::byte> in) {
  rz::Sealer sealer(protection, rz::Sealer::Key{});
  std::vector<std::byte> wire;
  rz::Sealer::Tag tag{};
  std::size_t at = 0;
  while (at + 2 + rz::kHeadBytes <= in.size()) {
    const std::size_t word = static_cast<std::size_t>(in[at]) | static_cast<std::size_t>(in[at + 1]) << 8;
    const std::size_t length = std::min<std::size_t>(word & 0x7fff, 4096);
    const bool fix = (word & 0x8000) == 0;
    std::vector<std::byte> head(in.begin() + static_cast<std::ptrdiff_t>(at + 2),
                                in.begin() + static_cast<std::ptrdiff_t>(at + 2 + rz::kHeadBytes));
    at += 2 + rz::kHeadBytes;
    if (fix) {  // the chunk size at byte 4; the frame header's checksum over its first 48 bytes, at byte 48
      const std::uint32_t chunk = rz::kMinChunkBytes;
      std::memcpy(head.data() + 4, &chunk, sizeof(chunk));
      const std::uint32_t sum = fast::wire::checksum(std::span<const std::byte>(head).subspan(16, 48));
      std::memcpy(head.data() + 16 + 48, &sum, sizeof(sum));
    }
    const std::size_t take = std::min(length, in.size() - at);
    const std::span<const std::byte> payload = in.subspan(at, take);
    at += take;
    std::vector<std::byte> out(std::max(head.size(), payload.size()));
    sealer.seal(head, out.data(), tag);
    const std::byte* h = sealer.encrypts() ? out.data() : head.data();
    wire.insert(wire.end(), h, h + head.size());
    wire.insert(wire.end(), tag.begin(), tag.end());
    for (std::size_t c = 0; c < payload.size(); c += rz::kChunkBytes) {
      const std::span<const std::byte> chunk = payload.subspan(c, std::min(rz::kChunkBytes, payload.size() - c));
      sealer.seal(chunk, out.data(), tag);
      const std::byte* p = sealer.encrypts() ? out.data() : chunk.data();
      wire.insert(wire.end(), p, p + chunk.size());
      wire.insert(wire.end(), tag.begin(), tag.end());
    }
  }
  return wire;
}

void read_stream(rz::Protection protection, const std::vector<std::byte>& wire, unsigned pieces) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return;
  const int feed = fds[0];
  rz::StreamReader reader(fds[1], protection, rz::Sealer::Key{});  // owns fds[1]
  const rz::StreamReader::Allocate allocate = [](std::size_t bytes) {
    if (bytes > (1u << 20))
      FAST_THROW(fast::core::IoError, "stream: a record of {} bytes: more than this reader allocates", bytes);
    return std::shared_ptr<std::byte>(new std::byte[std::max<std::size_t>(bytes, 1)],
                                      std::default_delete<std::byte[]>());
  };
  fast::fuzz::expect_accepted_or_refused([&] {
    std::size_t fed = 0;
    unsigned piece = pieces;
    while (fed < wire.size()) {
      piece = piece * 1103515245u + 12345u;
      const std::size_t n = std::min<std::size_t>(piece % 9000 + 1, wire.size() - fed);
      if (::send(feed, wire.data() + fed, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) break;
      fed += n;
      while (reader.advance(allocate) == rz::StreamReader::Step::record) {
        const rz::StreamReader::Record& r = reader.current();
        if (r.head.header.payload_bytes > 0 && !r.payload) throw std::logic_error("a record without its payload");
      }
    }
    ::shutdown(feed, SHUT_WR);
    for (int i = 0; i < 1 << 16; ++i)  // the end: every record left, then `end` (or a refusal)
      if (reader.advance(allocate) == rz::StreamReader::Step::end) return;
    throw std::logic_error("the reader did not see the stream's end");  // escapes: a bug
  });
  ::close(feed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const rz::Protection protections[] = {rz::Protection::checksum, rz::Protection::aes_256_gcm,
                                        rz::Protection::chacha20_poly1305};
  const rz::Protection protection = protections[data[0] % 3];
  std::vector<std::byte> wire = sealed_stream(protection, fast::fuzz::bytes_of(data + 2, size - 2));
  if ((data[1] & 1) != 0 && !wire.empty()) wire[(data[1] * 131u) % wire.size()] ^= std::byte{0x20};
  read_stream(protection, wire, data[0]);
  return 0;
}
