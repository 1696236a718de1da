// The zmq runtime's shared-memory rings (src/runtime/zmq/shared_ring.hpp), both sides in this
// process: the receiver opens the sender's memfd through /proc/<this pid>/fd as another process
// of the host would.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <numeric>
#include <optional>
#include <vector>

#include "fast/core/error.hpp"
#include "fast/wire/frame.hpp"
#include "shared_ring.hpp"

namespace fast::runtime::zmq {
namespace {

constexpr std::size_t kCapacity = 4096;

std::vector<std::byte> bytes_of(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 31 + static_cast<std::size_t>(seed)) & 0xff);
  return v;
}

TEST(SharedRing, PlacementStartsWhereAllocatedOrAtTheNextLapAndEndsOnSixtyFourBytes) {
  EXPECT_EQ(place(0, 1, 4096).start, 0u);
  EXPECT_EQ(place(0, 1, 4096).end, 64u);
  EXPECT_EQ(place(64, 64, 4096).end, 128u);
  EXPECT_EQ(place(4032, 64, 4096).start, 4032u);  // fits exactly before the end
  EXPECT_EQ(place(4032, 64, 4096).end, 4096u);
  EXPECT_EQ(place(4032, 65, 4096).start, 4096u);  // would cross the end: the next lap
  EXPECT_EQ(place(4032, 65, 4096).end, 4096u + 128u);
  EXPECT_EQ(place(3 * 4096 + 10 * 64, 4096, 4096).start, 4 * 4096u);
  EXPECT_EQ(place(3 * 4096, 4096, 4096).start, 3 * 4096u);  // a whole lap from its start
}

TEST(SharedRing, AutomaticCapacitySharesTwoHundredFiftySixMiBAmongThePeersOfTheHost) {
  EXPECT_EQ(ring_capacity(0, 3), 0u);                     // off
  EXPECT_EQ(ring_capacity(65536, 100), 65536u);           // as set, whatever the peers
  EXPECT_EQ(ring_capacity(-1, 1), std::size_t{32} << 20);  // 256 MiB / 1, at most 32 MiB
  EXPECT_EQ(ring_capacity(-1, 8), std::size_t{32} << 20);  // 256 / 8 = 32 MiB
  EXPECT_EQ(ring_capacity(-1, 16), std::size_t{16} << 20);
  EXPECT_EQ(ring_capacity(-1, 15), (std::size_t{256} << 20) / 15 / 64 * 64);  // 17,895,680: a multiple of 64
  EXPECT_EQ(ring_capacity(-1, 1000), std::size_t{1} << 20);  // at least 1 MiB
  EXPECT_EQ(ring_capacity(-1, 0), std::size_t{32} << 20);
}

TEST(SharedRing, PayloadsArriveIntactAndFreedSpaceIsReusedAcrossTheEnd) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  ASSERT_EQ(in->capacity(), kCapacity);
  std::uint64_t expected = 0;
  for (int round = 0; round < 50; ++round) {  // 50 x 1000 bytes through a 4096-byte ring: it wraps
    const auto payload = bytes_of(1000, round);
    const auto position = out.put(payload);
    ASSERT_TRUE(position.has_value()) << round;
    EXPECT_EQ(*position, expected);
    InboundRing::Payload got = in->take(*position, payload.size());
    ASSERT_EQ(got.bytes.size(), payload.size());
    EXPECT_TRUE(std::equal(got.bytes.begin(), got.bytes.end(), payload.begin())) << round;
    expected = place(*position, 1000, kCapacity).end;
  }  // each payload's owner is released at the end of its iteration
}

TEST(SharedRing, AFullRingRefusesUntilTheOldestPayloadIsReleased) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  std::vector<InboundRing::Payload> held;
  for (int i = 0; i < 4; ++i) {  // 4 x 1024 bytes fill the ring exactly
    const auto position = out.put(bytes_of(1024, i));
    ASSERT_TRUE(position.has_value()) << i;
    held.push_back(in->take(*position, 1024));
  }
  EXPECT_FALSE(out.put(bytes_of(1, 9)).has_value());  // no position: no frame is sent for it
  held[2].owner.reset();  // released out of order: the oldest still holds its region
  held[1].owner.reset();
  EXPECT_FALSE(out.put(bytes_of(1, 9)).has_value());
  held[0].owner.reset();  // now the first three regions are free, in order
  const auto position = out.put(bytes_of(3 * 1024, 7));
  ASSERT_TRUE(position.has_value());
  EXPECT_EQ(*position, 4096u);
  // The fourth region (positions 3072-4096 of the first lap) is still held: 3 KiB fill the rest.
  EXPECT_FALSE(out.put(bytes_of(1, 9)).has_value());
  const InboundRing::Payload last = in->take(*position, 3 * 1024);
  const auto want = bytes_of(3 * 1024, 7);
  EXPECT_TRUE(std::equal(last.bytes.begin(), last.bytes.end(), want.begin()));
  EXPECT_FALSE(out.put({}).has_value());  // empty or larger than the ring: never through it
  EXPECT_FALSE(out.put(bytes_of(kCapacity + 1, 0)).has_value());
}

TEST(SharedRing, APayloadOwnerKeepsTheMappingAfterTheRingIsDropped) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  const auto payload = bytes_of(2000, 3);
  InboundRing::Payload got = in->take(*out.put(payload), payload.size());
  in.reset();  // the transport forgets the ring (its process was replaced)
  EXPECT_TRUE(std::equal(got.bytes.begin(), got.bytes.end(), payload.begin()));
}

TEST(SharedRing, TheReceiverRefusesAPositionOrSizeItDoesNotExpectAndKeepsItsState) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  EXPECT_THROW(in->take(64, 100), wire::FrameError);          // not the next position
  EXPECT_THROW(in->take(0, 0), wire::FrameError);             // empty
  EXPECT_THROW(in->take(0, kCapacity + 1), wire::FrameError);  // larger than the ring
  try {
    in->take(128, 10);
    ADD_FAILURE();
  } catch (const wire::FrameError& e) {
    EXPECT_NE(std::string(e.what()).find("position: expected 0, got 128"), std::string::npos) << e.what();
  }
  const auto payload = bytes_of(100, 1);
  const auto position = out.put(payload);
  ASSERT_EQ(position, 0u);
  EXPECT_NO_THROW(in->take(*position, payload.size()));
}

TEST(SharedRing, TheSenderTreatsAReleasedValueThatCannotBeRightAsAFullRing) {
  OutboundRing out(kCapacity);
  // A hostile receiver's mapping of the control page.
  auto* control = static_cast<std::uint64_t*>(
      mmap(nullptr, OutboundRing::kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, out.fd(), 0));
  ASSERT_NE(control, MAP_FAILED);
  ASSERT_TRUE(out.put(bytes_of(1024, 0)).has_value());  // head 1024
  for (std::uint64_t lie : {std::uint64_t{2048}, ~std::uint64_t{0}}) {  // beyond what was sent
    std::atomic_ref<std::uint64_t>(*control).store(lie);
    EXPECT_FALSE(out.put(bytes_of(64, 1)).has_value()) << lie;
  }
  std::atomic_ref<std::uint64_t>(*control).store(1024);  // a plausible value: room again
  EXPECT_TRUE(out.put(bytes_of(64, 1)).has_value());
  munmap(control, OutboundRing::kControlBytes);
}

TEST(SharedRing, OpeningRefusesWhatIsNotASealedRingOfTheDeclaredSize) {
  OutboundRing out(kCapacity);
  EXPECT_THROW(InboundRing::open(getpid(), out.fd(), out.file_bytes() + 64), core::InvalidArgument);  // size
  EXPECT_THROW(InboundRing::open(getpid(), out.fd(), 100), core::InvalidArgument);  // not a control page and data
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(ftruncate(unsealed, static_cast<off_t>(out.file_bytes())), 0);
  try {
    InboundRing::open(getpid(), unsealed, out.file_bytes());
    ADD_FAILURE() << "an unsealed memfd was accepted";
  } catch (const core::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("seals"), std::string::npos) << e.what();
  }
  close(unsealed);
  EXPECT_THROW(InboundRing::open(getpid(), 100000, out.file_bytes()), core::IoError);  // no such descriptor
  EXPECT_THROW(OutboundRing(100), core::InvalidArgument);  // not a multiple of 64
}

}  // namespace
}  // namespace fast::runtime::zmq
