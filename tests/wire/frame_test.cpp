// The wire frame (include/fast/wire/frame.hpp): round trips of every field, each validation error
// with the field named and both values, and a fuzz run of 100,000+ random, truncated and hostile
// frames: each is rejected with a FrameError (or, when valid, re-encodes to the same bytes), none
// crashes, and decoding never allocates more than a small bound (only its error message).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <random>
#include <string>

#include "fast/wire/frame.hpp"

// Counting allocator for this test binary: the largest single allocation while `g_watch` is set.
namespace {
std::atomic<bool> g_watch{false};
std::atomic<std::size_t> g_largest{0};
void note(std::size_t n) {
  if (!g_watch.load(std::memory_order_relaxed)) return;
  std::size_t seen = g_largest.load(std::memory_order_relaxed);
  while (n > seen && !g_largest.compare_exchange_weak(seen, n)) {
  }
}
}  // namespace

// GCC 12 pairs the free() below with the malloc() of operator new only through the replaced
// operators, and reports it as mismatched (-Wmismatched-new-delete): both sides are this file's.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  note(n);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace fast::wire {
namespace {

using Bytes = std::array<std::byte, kHeaderBytes>;

Bytes encoded(const FrameHeader& h) {
  Bytes b{};
  encode_header(h, b);
  return b;
}

FrameHeader sample() {
  return {.kind = FrameKind::data,
          .flags = kFlagPayloadChecksum,
          .dtype = core::DType::f64,
          .src = 3,
          .dst = 1,
          .tag = 0x0123456789abcdefull,
          .count = 1000,
          .payload_bytes = 8000,
          .payload_checksum = 0xdeadbeef};
}

std::string error_of(std::span<const std::byte> bytes, const Limits& limits = {}) {
  try {
    decode_header(bytes, limits);
  } catch (const FrameError& e) {
    return e.what();
  }
  return "no error";
}

// Rewrites the header checksum after a field was changed by hand, so the field's own check runs.
void reseal(Bytes& b) {
  const std::uint32_t sum = checksum({b.data(), 48});
  std::memcpy(b.data() + 48, &sum, 4);
}

template <typename T>
void poke(Bytes& b, std::size_t offset, T value) {
  std::memcpy(b.data() + offset, &value, sizeof(T));
  reseal(b);
}

TEST(WireFrame, EveryFieldRoundTrips) {
  const FrameHeader h = sample();
  const Bytes b = encoded(h);
  const FrameHeader d = decode_header(b, {.world_size = 4});
  EXPECT_EQ(d.kind, h.kind);
  EXPECT_EQ(d.flags, h.flags);
  EXPECT_EQ(d.dtype, h.dtype);
  EXPECT_EQ(d.src, h.src);
  EXPECT_EQ(d.dst, h.dst);
  EXPECT_EQ(d.tag, h.tag);
  EXPECT_EQ(d.count, h.count);
  EXPECT_EQ(d.payload_bytes, h.payload_bytes);
  EXPECT_EQ(d.payload_checksum, h.payload_checksum);
  for (auto kind : {FrameKind::heartbeat, FrameKind::hello, FrameKind::bye}) {
    FrameHeader k{.kind = kind};
    EXPECT_EQ(decode_header(encoded(k), {}).kind, kind);
  }
}

TEST(WireFrame, EachValidationNamesTheFieldAndBothValues) {
  const Bytes good = encoded(sample());
  EXPECT_NE(error_of(std::span(good).first(47)).find("header length: expected 56 bytes, got 47"), std::string::npos);
  Bytes b = good;
  poke<std::uint32_t>(b, 0, 0);
  EXPECT_NE(error_of(b).find("magic: expected 0x54534146, got 0x00000000"), std::string::npos) << error_of(b);
  b = good;
  poke<std::uint16_t>(b, 4, 9);
  EXPECT_NE(error_of(b).find("version: expected 3, got 9"), std::string::npos) << error_of(b);
  b = good;
  b[30] ^= std::byte{1};  // a flipped bit in the tag, checksum not updated
  EXPECT_NE(error_of(b).find("header checksum"), std::string::npos) << error_of(b);
  b = good;
  poke<std::uint8_t>(b, 6, 77);
  EXPECT_NE(error_of(b).find("kind: expected 1 (data) to 4 (bye), got 77"), std::string::npos) << error_of(b);
  b = good;
  poke<std::uint8_t>(b, 7, 0x82);
  EXPECT_NE(error_of(b).find("flags: expected only bit 0, got 0x82"), std::string::npos) << error_of(b);
  b = good;
  poke<std::uint8_t>(b, 8, 42);
  EXPECT_NE(error_of(b).find("dtype: expected 0 to 6, got 42"), std::string::npos) << error_of(b);
  b = good;
  poke<std::uint64_t>(b, 40, 8001);
  EXPECT_NE(error_of(b).find("payload_bytes: expected count (1000) x 8 bytes of f64, got 8001"), std::string::npos)
      << error_of(b);
  b = good;
  poke<std::uint64_t>(b, 32, (1ull << 62) + 1);  // count x 8 overflows 64 bits
  poke<std::uint64_t>(b, 40, 8);
  EXPECT_NE(error_of(b).find("payload_bytes: expected count"), std::string::npos) << error_of(b);
  EXPECT_NE(error_of(good, {.max_payload_bytes = 4096}).find("payload_bytes: expected at most 4096, got 8000"),
            std::string::npos);
  EXPECT_NE(error_of(good, {.world_size = 2}).find("src/dst: expected ranks in [0, 2), got 3 and 1"),
            std::string::npos);
  b = good;
  poke<std::uint8_t>(b, 10, 1);
  EXPECT_NE(error_of(b).find("reserved bytes"), std::string::npos);
}

TEST(WireFrame, PayloadLengthAndChecksumAreChecked) {
  std::vector<std::byte> payload(8000, std::byte{7});
  FrameHeader h = sample();
  h.payload_checksum = checksum(payload);
  EXPECT_NO_THROW(check_payload(h, payload));
  payload[4000] = std::byte{8};
  EXPECT_THROW(check_payload(h, payload), FrameError);
  h.flags = 0;  // without the flag only the length counts
  EXPECT_NO_THROW(check_payload(h, payload));
  try {
    check_payload(h, std::span(payload).first(7999));
    ADD_FAILURE();
  } catch (const FrameError& e) {
    EXPECT_NE(std::string(e.what()).find("payload length: expected 8000 bytes, got 7999"), std::string::npos);
  }
}

TEST(WireFrame, TheChecksumIsXxh3AndCatchesEveryBitFlip) {
  // XXH3-64 of no bytes is 0x2D06800538D394C2 (xxHash's published test vector); the checksum is
  // its low 32 bits.
  EXPECT_EQ(checksum({}), 0x38D394C2u);
  std::vector<std::byte> payload(4096);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  const std::uint32_t sum = checksum(payload);
  int missed = 0;
  for (std::size_t i = 0; i < payload.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      payload[i] ^= static_cast<std::byte>(1 << bit);
      missed += checksum(payload) == sum;
      payload[i] ^= static_cast<std::byte>(1 << bit);
    }
  EXPECT_EQ(missed, 0);
}

TEST(WireFrame, Crc32IsZlibsForCheckpointFiles) {
  EXPECT_EQ(crc32({}), 0u);
  const char* text = "123456789";  // the CRC-32 check value
  EXPECT_EQ(crc32({reinterpret_cast<const std::byte*>(text), 9}), 0xCBF43926u);
}

TEST(WireFrame, TheSharedFlagIsAcceptedOnlyWhereAllowedAndNeverWithAChecksum) {
  FrameHeader h = sample();
  h.flags = kFlagPayloadShared;
  h.payload_checksum = 0;
  const Bytes b = encoded(h);
  EXPECT_NE(error_of(b).find("flags: expected only bit 0, got 0x02"), std::string::npos) << error_of(b);
  const FrameHeader d = decode_header(b, {.allow_shared = true});
  EXPECT_EQ(d.flags, kFlagPayloadShared);
  EXPECT_EQ(d.payload_bytes, 8000u);
  h.flags = kFlagPayloadShared | kFlagPayloadChecksum;
  EXPECT_NE(error_of(encoded(h), {.allow_shared = true}).find("flags: expected bit 0 or bit 1, not both, got 0x03"),
            std::string::npos);
  EXPECT_NE(error_of(encoded(h)).find("flags: expected only bit 0, got 0x03"), std::string::npos);
}

TEST(WireFrame, EncodeRefusesACountThatDisagreesWithTheBytes) {
  FrameHeader h = sample();
  h.payload_bytes = 12;
  Bytes b{};
  EXPECT_THROW(encode_header(h, b), core::InvalidArgument);
}

// One fuzz case: decode, and when valid, the frame re-encodes to the same bytes.
void fuzz_one(std::span<const std::byte> bytes, const Limits& limits, int& rejected, int& accepted) {
  try {
    const FrameHeader h = decode_header(bytes, limits);
    const Bytes again = encoded(h);
    ASSERT_TRUE(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()))
        << "a valid frame did not round-trip";
    ++accepted;
  } catch (const FrameError& e) {
    ASSERT_NE(std::string(e.what()).find("frame: "), std::string::npos);
    ++rejected;
  }
}

TEST(WireFrame, FuzzOf120000FramesRejectsEveryBadOneWithoutCrashOrLargeAllocation) {
  std::mt19937_64 random(20261123);
  const Limits strict{.max_payload_bytes = 1ull << 30, .world_size = 8};
  const Limits shared{.max_payload_bytes = 1ull << 30, .world_size = 8, .allow_shared = true};
  int rejected = 0, accepted = 0;
  std::vector<std::byte> buffer(2 * kHeaderBytes);
  const auto hostile_u64 = [&] {
    const std::uint64_t values[] = {0, 1, ~0ull, ~0ull - 7, 1ull << 63, (1ull << 61) + 1, 1ull << 34, 1ull << 30};
    return values[random() % 8] + (random() % 3);
  };
  g_largest = 0;
  g_watch = true;
  for (int i = 0; i < 120000; ++i) {
    const int mode = i % 6;
    const Limits& limits = i % 2 == 0 ? strict : shared;
    FrameHeader h{.kind = static_cast<FrameKind>(1 + random() % 4),
                  .flags = static_cast<std::uint8_t>(random() % 4),
                  .dtype = static_cast<core::DType>(random() % 7),
                  .src = static_cast<std::int32_t>(random() % 8),
                  .dst = static_cast<std::int32_t>(random() % 8),
                  .tag = random(),
                  .count = random() % 100000};
    h.payload_bytes = h.count * core::size_of(h.dtype);
    Bytes b = encoded(h);
    std::span<const std::byte> input(b);
    if (mode == 0) {  // random bytes of random length
      const std::size_t n = random() % buffer.size();
      for (std::size_t k = 0; k < n; ++k) buffer[k] = static_cast<std::byte>(random());
      input = std::span<const std::byte>(buffer.data(), n);
    } else if (mode == 1) {  // a truncated valid header
      input = input.first(random() % kHeaderBytes);
    } else if (mode == 2) {  // one random byte changed, checksum not updated
      b[random() % kHeaderBytes] ^= static_cast<std::byte>(1 + random() % 255);
    } else if (mode == 3) {  // one random byte changed, checksum updated: the field's own check
      b[random() % 48] ^= static_cast<std::byte>(1 + random() % 255);
      reseal(b);
    } else if (mode == 4) {  // hostile count and length: near 2^64, disagreeing, over the limit
      poke<std::uint64_t>(b, 32, hostile_u64());
      poke<std::uint64_t>(b, 40, hostile_u64());
    } else {  // hostile ranks
      poke<std::int32_t>(b, 12 + 4 * (random() % 2), static_cast<std::int32_t>(hostile_u64()));
    }
    fuzz_one(input, limits, rejected, accepted);
  }
  g_watch = false;
  EXPECT_EQ(rejected + accepted, 120000);
  EXPECT_GT(rejected, 100000);  // nearly all are bad; the valid ones re-encoded identically
  // Decoding allocates only its error message (a few hundred bytes), never what a frame declares.
  EXPECT_LT(g_largest.load(), 4096u);
}

}  // namespace
}  // namespace fast::wire
