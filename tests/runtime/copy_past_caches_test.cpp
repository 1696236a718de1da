// copy_past_caches (src/runtime/zmq/copy_past_caches.hpp): the bytes a memcpy would write, at every
// alignment of both ends and every length around the 64-byte steps, and nothing outside the range;
// and large records through a shared-memory ring, which put() copies that way, arrive intact.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "copy_past_caches.hpp"
#include "shared_ring.hpp"

namespace fast::runtime::zmq {
namespace {

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  return v;
}

TEST(CopyPastCaches, WritesExactlyTheSourceBytesAtEveryAlignmentAndLength) {
  constexpr std::size_t kGuard = 48;
  const auto src = pattern(4096 + 64, 1);
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (std::size_t n : {1023u, 1024u, 1025u, 4095u, 4096u}) lengths.push_back(n);
  for (std::size_t dst_off = 0; dst_off < 16; ++dst_off)
    for (std::size_t src_off : {0u, 1u, 8u, 15u})
      for (std::size_t n : lengths) {
        std::vector<std::byte> dst(kGuard + 16 + n + kGuard, std::byte{0xa5});
        copy_past_caches(dst.data() + kGuard + dst_off, src.data() + src_off, n);
        std::byte* at = dst.data() + kGuard + dst_off;
        ASSERT_TRUE(std::equal(at, at + n, src.begin() + static_cast<std::ptrdiff_t>(src_off)))
            << "dst offset " << dst_off << ", src offset " << src_off << ", " << n << " bytes";
        ASSERT_TRUE(std::all_of(dst.data(), at, [](std::byte b) { return b == std::byte{0xa5}; }))
            << "wrote before the range: dst offset " << dst_off << ", " << n << " bytes";
        ASSERT_TRUE(std::all_of(at + n, dst.data() + dst.size(), [](std::byte b) { return b == std::byte{0xa5}; }))
            << "wrote after the range: dst offset " << dst_off << ", " << n << " bytes";
      }
}

TEST(CopyPastCaches, LargeRecordsThroughARingArriveIntact) {
  // Payloads on both sides of kPastCachesBytes, from sources at odd addresses, after heads of the
  // transport's size (a multiple of 64) and of none: put() copies those from kPastCachesBytes on
  // past the caches.
  constexpr std::size_t kCapacity = std::size_t{4} << 20;  // room for every record at its start
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  const auto source = pattern(3 * kPastCachesBytes + 64, 2);
  const auto head = pattern(128, 3);
  unsigned round = 0;
  for (std::size_t n : {kPastCachesBytes - 1, kPastCachesBytes, kPastCachesBytes + 17, 3 * kPastCachesBytes + 5})
    for (std::size_t head_bytes : {std::size_t{0}, std::size_t{128}})
      for (std::size_t src_off : {0u, 3u}) {
        ++round;
        const std::span<const std::byte> h(head.data(), head_bytes);
        const std::span<const std::byte> p(source.data() + src_off, n);
        ASSERT_TRUE(out.put(h, p)) << round;
        const auto body = in->peek();
        ASSERT_TRUE(body.has_value()) << round;
        ASSERT_EQ(body->size(), head_bytes + n) << round;
        InboundRing::Payload got = in->take();
        EXPECT_TRUE(std::equal(h.begin(), h.end(), got.bytes.begin())) << round;
        EXPECT_TRUE(std::equal(p.begin(), p.end(), got.bytes.begin() + static_cast<std::ptrdiff_t>(head_bytes)))
            << n << " bytes after a head of " << head_bytes << ", source offset " << src_off;
      }
}

}  // namespace
}  // namespace fast::runtime::zmq
