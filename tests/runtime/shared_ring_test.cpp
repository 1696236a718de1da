// The zmq runtime's shared-memory rings (src/runtime/zmq/shared_ring.hpp), both sides in this
// process: the receiver opens the sender's memfd through /proc/<this pid>/fd as another process
// of the host would.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <numeric>
#include <optional>
#include <random>
#include <thread>
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
  EXPECT_EQ(ring_capacity(0, 3), 0u);                      // off
  EXPECT_EQ(ring_capacity(65536, 100), 65536u);            // as set, whatever the peers
  EXPECT_EQ(ring_capacity(-1, 1), std::size_t{8} << 20);   // 256 MiB / 1, at most 8 MiB
  EXPECT_EQ(ring_capacity(-1, 32), std::size_t{8} << 20);  // 256 / 32 = 8 MiB
  EXPECT_EQ(ring_capacity(-1, 64), std::size_t{4} << 20);
  EXPECT_EQ(ring_capacity(-1, 63), (std::size_t{256} << 20) / 63 / 64 * 64);  // 4,260,864: a multiple of 64
  EXPECT_EQ(ring_capacity(-1, 1000), std::size_t{1} << 20);                   // at least 1 MiB
  EXPECT_EQ(ring_capacity(-1, 0), std::size_t{8} << 20);
}

// A record of `n` bytes of body occupies 64 (prefix) + n rounded up to 64 bytes.
std::uint64_t region(std::uint64_t n) { return (kRecordPrefixBytes + n + 63) / 64 * 64; }

TEST(SharedRing, RecordsArriveIntactInOrderAndFreedSpaceIsReusedAcrossTheEnd) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  ASSERT_EQ(in->capacity(), kCapacity);
  EXPECT_FALSE(in->peek().has_value());       // nothing published yet
  for (int round = 0; round < 50; ++round) {  // 50 x 1064 bytes through a 4096-byte ring: it wraps
    const auto head = bytes_of(64, 100 + round);
    const auto payload = bytes_of(1000, round);
    ASSERT_TRUE(out.put(head, payload)) << round;
    const auto body = in->peek();
    ASSERT_TRUE(body.has_value()) << round;
    ASSERT_EQ(body->size(), 1064u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(body->data()) % 64, 0u);
    InboundRing::Payload got = in->take();
    EXPECT_TRUE(std::equal(got.bytes.begin(), got.bytes.begin() + 64, head.begin())) << round;
    EXPECT_TRUE(std::equal(got.bytes.begin() + 64, got.bytes.end(), payload.begin())) << round;
    EXPECT_FALSE(in->peek().has_value()) << round;
  }  // each record's owner is released at the end of its iteration
}

TEST(SharedRing, SeveralRecordsPublishedBeforeAnyIsReadComeOutInTheOrderPut) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(out.put({}, bytes_of(700 + 100 * i, round * 3 + i))) << round << " " << i;
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(in->peek().has_value());
      ASSERT_EQ(in->peek()->size(), 700u + 100u * static_cast<unsigned>(i));  // peek() repeats until take()
      InboundRing::Payload got = in->take();
      const auto want = bytes_of(700 + 100 * static_cast<std::size_t>(i), round * 3 + i);
      EXPECT_TRUE(std::equal(got.bytes.begin(), got.bytes.end(), want.begin())) << round << " " << i;
    }
    EXPECT_FALSE(in->peek().has_value());
  }
}

TEST(SharedRing, AFullRingRefusesUntilTheOldestRecordIsReleased) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  std::vector<InboundRing::Payload> held;
  for (int i = 0; i < 4; ++i) {  // 4 x (64 + 960) bytes fill the ring exactly
    ASSERT_TRUE(out.put({}, bytes_of(960, i))) << i;
    ASSERT_TRUE(in->peek().has_value());
    held.push_back(in->take());
  }
  EXPECT_FALSE(out.put({}, bytes_of(1, 9)));  // nothing written
  EXPECT_FALSE(in->peek().has_value());
  held[2].owner.reset();  // released out of order: the oldest still holds its region
  held[1].owner.reset();
  EXPECT_FALSE(out.put({}, bytes_of(1, 9)));
  held[0].owner.reset();  // now the first three regions are free, in order
  ASSERT_TRUE(out.put({}, bytes_of(3 * 1024 - 64, 7)));
  // The fourth region (positions 3072-4096 of the first lap) is still held: nothing else fits.
  EXPECT_FALSE(out.put({}, bytes_of(1, 9)));
  ASSERT_TRUE(in->peek().has_value());
  const InboundRing::Payload last = in->take();
  const auto want = bytes_of(3 * 1024 - 64, 7);
  ASSERT_EQ(last.bytes.size(), want.size());
  EXPECT_TRUE(std::equal(last.bytes.begin(), last.bytes.end(), want.begin()));
  EXPECT_FALSE(out.put({}, {}));  // not even the 64-byte prefix of an empty body fits
  held[3].owner.reset();
  EXPECT_TRUE(out.put({}, {}));                            // an empty body is a record too
  EXPECT_FALSE(out.put({}, bytes_of(kCapacity - 63, 0)));  // larger than the ring can ever carry
  EXPECT_EQ(out.max_body(), kCapacity - 64);
}

TEST(SharedRing, ARecordThatWouldCrossTheEndStartsTheNextLapBehindAWrapMarker) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  ASSERT_TRUE(out.put({}, bytes_of(3000, 1)));  // region 0 - 3072
  ASSERT_TRUE(in->peek().has_value());
  in->take();                                   // released at once (the owner is dropped)
  ASSERT_TRUE(out.put({}, bytes_of(1500, 2)));  // 3072 + 1564 > 4096: marker at 3072, record at 4096
  const auto body = in->peek();
  ASSERT_TRUE(body.has_value());
  const auto want = bytes_of(1500, 2);
  EXPECT_TRUE(std::equal(body->begin(), body->end(), want.begin()));
  EXPECT_EQ(body->data(), in->peek()->data());
  // The marker's space and the first record are free; the second record is held: 4096 - 1600
  // bytes remain, ending where the held record begins.
  const InboundRing::Payload held = in->take();
  EXPECT_TRUE(out.put({}, bytes_of(4096 - region(1500) - 64, 3)));
}

// A record that must start at the next lap and finds no room there yet marks the wrap at once:
// the record held before it keeps the rest of the lap's start, and once it is released the record
// goes to the next lap.
TEST(SharedRing, ARecordThatFindsNoRoomAtTheNextLapMarksTheWrapAndGoesThereOnceRoomIsFree) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  ASSERT_TRUE(out.put({}, bytes_of(1500, 1)));  // region 0 - 1600
  ASSERT_TRUE(in->peek().has_value());
  std::optional<InboundRing::Payload> held = in->take();
  // 1600 + 3072 > 4096: it must start at 4096, where the held record's region still counts.
  EXPECT_FALSE(out.put({}, bytes_of(3000, 2)));
  EXPECT_FALSE(in->peek().has_value());  // the reader passes the marker: nothing to take
  EXPECT_FALSE(out.put({}, bytes_of(3000, 2)));
  held.reset();
  ASSERT_TRUE(out.put({}, bytes_of(3000, 2)));
  const auto body = in->peek();
  ASSERT_TRUE(body.has_value());
  const auto want = bytes_of(3000, 2);
  EXPECT_TRUE(std::equal(body->begin(), body->end(), want.begin()));
}

// Records of every size up to the largest, put while the reader lags behind by a random number of
// records and holds some of those it took: every put that says true is read back intact and in
// order, no check of the reader fails, and a put that says false succeeds once the reader caught
// up and let go of everything (a second put, when the first had to mark the wrap).
TEST(SharedRing, RecordsOfRandomSizesWithALaggingReaderArriveIntactAndInOrder) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  std::mt19937 rng(7);
  std::deque<std::pair<std::size_t, int>> sent;  // put, not taken yet: size, seed
  std::deque<InboundRing::Payload> held;
  int seed = 0, refused = 0;
  const auto take_one = [&] {
    const auto body = in->peek();
    ASSERT_TRUE(body.has_value());
    const auto want = bytes_of(sent.front().first, sent.front().second);
    ASSERT_TRUE(std::equal(body->begin(), body->end(), want.begin(), want.end())) << "record " << sent.front().second;
    held.push_back(in->take());
    sent.pop_front();
    if (held.size() > rng() % 3) held.pop_front();  // hold up to 2, released oldest first or not
  };
  for (int round = 0; round < 3000; ++round) {
    const std::size_t size = 1 + rng() % out.max_body();
    if (!out.put({}, bytes_of(size, seed))) {
      ++refused;
      while (!sent.empty()) take_one();
      held.clear();
      if (!out.put({}, bytes_of(size, seed))) {  // it had no room to mark the wrap before: now it does
        EXPECT_FALSE(in->peek().has_value());    // the reader passes the marker
        ASSERT_TRUE(out.put({}, bytes_of(size, seed))) << "an empty ring refused " << size << " bytes";
      }
    }
    sent.emplace_back(size, seed++);
    for (std::size_t n = rng() % 3; n > 0 && !sent.empty(); --n) take_one();
  }
  EXPECT_GT(refused, 100);  // the ring was full often: the test went through its edge cases
}

// Without the marker, a record longer than both the rest of the lap and the lap's part before it
// found no room even in an empty ring (it waited forever): now it goes to the next lap.
TEST(SharedRing, AnEmptyRingTakesARecordOfAnySizeUpToItsLargest) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  ASSERT_TRUE(out.put({}, bytes_of(1500, 1)));  // region 0 - 1600
  ASSERT_TRUE(in->peek().has_value());
  in->take();  // released at once: the ring is empty, its next record at 1600
  const std::size_t largest = out.max_body();
  EXPECT_FALSE(out.put({}, bytes_of(largest, 2)));  // marks the wrap: the reader must pass it first
  EXPECT_FALSE(in->peek().has_value());             // it does, and releases the rest of the lap
  ASSERT_TRUE(out.put({}, bytes_of(largest, 2)));
  const auto body = in->peek();
  ASSERT_TRUE(body.has_value());
  const auto want = bytes_of(largest, 2);
  EXPECT_TRUE(std::equal(body->begin(), body->end(), want.begin()));
}

TEST(SharedRing, RecordsTakenAsFastAsTheyComeStayInTheRingsFirstPages) {
  // The rule (OutboundRing::put): back to the ring's start when the record fits there with
  // max(its region, min(8 regions, a quarter of the ring)) still free behind it; else on from the
  // last record. Records of 500 bytes (8 regions > a quarter of 4 KiB) and empty ones (64 bytes).
  for (const std::size_t bytes : {std::size_t{500}, std::size_t{0}}) {
    OutboundRing out(kCapacity);
    auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
    const std::uint64_t r = region(bytes);
    const std::uint64_t reserve = std::max<std::uint64_t>(r, std::min<std::uint64_t>(8 * r, kCapacity / 4));
    std::uint64_t next = 0;  // the model's offset of the next record, all before it released
    const std::byte* first = nullptr;
    bool wrapped = false;
    for (int round = 0; round < 40; ++round) {
      ASSERT_TRUE(out.put({}, bytes_of(bytes, round))) << bytes << " " << round;
      const auto body = in->peek();
      ASSERT_TRUE(body.has_value()) << round;
      if (round == 0) first = body->data();
      const std::uint64_t at = next >= r + reserve ? 0 : next;  // the jump: lap + r + reserve - head <= capacity
      wrapped = wrapped || (round > 0 && at == 0);
      EXPECT_EQ(body->data(), first + at) << bytes << " " << round;
      EXPECT_LT(at, r + reserve) << bytes << " " << round;  // warm pages: a record and the reserve
      const auto want = bytes_of(bytes, round);
      EXPECT_TRUE(std::equal(body->begin(), body->end(), want.begin())) << round;
      in->take();  // released at once
      next = at + r;
    }
    EXPECT_TRUE(wrapped) << bytes;
  }
}

TEST(SharedRing, AJumpBackToTheStartLeavesRoomForMoreRecordsBehindIt) {
  // Records of an eighth of the ring: taken at once, they go back to the start from 3/8 of the
  // ring on (a record and a quarter behind it: 8 records would be more than a quarter). Until the reader reaches that record, the lap's
  // rest that it passed over stays counted: 2 more records fit behind it, and a third does not.
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  const std::size_t body = kCapacity / 8 - kRecordPrefixBytes;
  ASSERT_EQ(region(body), kCapacity / 8);
  const std::byte* first = nullptr;
  for (int round = 0; round < 3; ++round) {  // at 0, 1/8, 2/8 of the ring
    ASSERT_TRUE(out.put({}, bytes_of(body, round)));
    ASSERT_TRUE(in->peek().has_value());
    if (round == 0) first = in->peek()->data();
    EXPECT_EQ(in->peek()->data(), first + round * (kCapacity / 8)) << round;
    in->take();
  }
  ASSERT_TRUE(out.put({}, bytes_of(body, 3)));  // from 3/8: back to the start
  ASSERT_TRUE(out.put({}, bytes_of(body, 4)));
  ASSERT_TRUE(out.put({}, bytes_of(body, 5)));
  EXPECT_FALSE(out.put({}, bytes_of(body, 6)));
  for (int round = 3; round <= 5; ++round) {
    ASSERT_TRUE(in->peek().has_value());
    EXPECT_EQ(in->peek()->data(), first + (round - 3) * (kCapacity / 8)) << round;
    const auto want = bytes_of(body, round);
    EXPECT_TRUE(std::equal(in->peek()->begin(), in->peek()->end(), want.begin())) << round;
    in->take();
  }
  EXPECT_TRUE(out.put({}, bytes_of(body, 6)));  // room again
}

TEST(SharedRing, TheReceiverTellsOfReleasedRoomOnlyWhileTheSenderWantsIt) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  int told = 0;
  in->set_on_room([&told] { ++told; });
  const auto pass_one = [&](int seed) {
    ASSERT_TRUE(out.put({}, bytes_of(100, seed)));
    ASSERT_TRUE(in->peek().has_value());
    in->take();  // the owner dropped at once: released
  };
  pass_one(0);
  EXPECT_EQ(told, 0);  // not wanted
  out.want_room(true);
  pass_one(1);
  EXPECT_EQ(told, 1);
  ASSERT_TRUE(out.put({}, bytes_of(100, 2)));
  ASSERT_TRUE(in->peek().has_value());
  std::optional<InboundRing::Payload> held = in->take();
  EXPECT_EQ(told, 1);  // nothing released yet
  held.reset();
  EXPECT_EQ(told, 2);
  out.want_room(false);
  pass_one(3);
  EXPECT_EQ(told, 2);
}

TEST(SharedRing, RingingTheBellWakesTheReaderWithoutARecord) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  const std::uint32_t seen = in->bell();
  std::thread ringer([&out] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    out.ring_bell();
  });
  const auto start = std::chrono::steady_clock::now();
  in->sleep(seen, std::chrono::milliseconds(10000));
  ringer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(9));  // woken, not timed out
  EXPECT_NE(in->bell(), seen);
  EXPECT_FALSE(in->peek().has_value());
}

TEST(SharedRing, APayloadOwnerKeepsTheMappingAfterTheRingIsDropped) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  const auto payload = bytes_of(2000, 3);
  ASSERT_TRUE(out.put({}, payload));
  ASSERT_TRUE(in->peek().has_value());
  InboundRing::Payload got = in->take();
  in.reset();  // the transport forgets the ring (its process was replaced)
  EXPECT_TRUE(std::equal(got.bytes.begin(), got.bytes.end(), payload.begin()));
}

// A hostile sender's mapping of its own ring: the control page's fields (shared_ring.hpp) and
// the data area.
struct Forger {
  explicit Forger(const OutboundRing& out)
      : bytes(out.file_bytes()),
        base(static_cast<std::byte*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, out.fd(), 0))) {}
  ~Forger() { munmap(base, bytes); }
  void set_u64(std::size_t offset, std::uint64_t v) {
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base + offset)).store(v);
  }
  void published(std::uint64_t v) { set_u64(64, v); }
  void released(std::uint64_t v) { set_u64(0, v); }
  void length_at(std::uint64_t position, std::uint64_t v) { set_u64(OutboundRing::kControlBytes + position, v); }
  std::size_t bytes;
  std::byte* base;
};

std::string error_of(InboundRing& in) {
  try {
    in.peek();
  } catch (const wire::FrameError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SharedRing, TheReceiverRefusesPublishedPositionsAndLengthsThatBreakTheRules) {
  OutboundRing out(kCapacity);
  Forger forge(out);
  ASSERT_NE(forge.base, MAP_FAILED);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  forge.published(kCapacity + 64);  // more than a ring's worth ahead
  EXPECT_NE(error_of(*in).find("published: expected a position from 0 to 4096, got 4160"), std::string::npos)
      << error_of(*in);
  forge.published(100);  // not on a record boundary
  EXPECT_NE(error_of(*in).find("got 100"), std::string::npos) << error_of(*in);
  forge.published(128);
  forge.length_at(0, kCapacity);  // longer than any record can be
  EXPECT_NE(error_of(*in).find("record length at 0: expected at most 4032, got 4096"), std::string::npos)
      << error_of(*in);
  forge.length_at(0, 200);  // longer than what was published
  EXPECT_NE(error_of(*in).find("crosses the end of the ring or of what was published (128)"), std::string::npos)
      << error_of(*in);
  forge.length_at(0, kWrapMarker);  // a wrap marker whose lap is not published
  EXPECT_NE(error_of(*in).find("wrap marker at 0"), std::string::npos) << error_of(*in);
  forge.length_at(0, 64);  // a record of 64 bytes: valid
  EXPECT_EQ(error_of(*in), "no error");
  EXPECT_EQ(in->peek()->size(), 64u);
}

TEST(SharedRing, TheSenderTreatsAReleasedValueThatCannotBeRightAsAFullRing) {
  OutboundRing out(kCapacity);
  Forger forge(out);  // a hostile receiver's mapping
  ASSERT_NE(forge.base, MAP_FAILED);
  ASSERT_TRUE(out.put({}, bytes_of(960, 0)));                           // head 1024
  for (std::uint64_t lie : {std::uint64_t{2048}, ~std::uint64_t{0}}) {  // beyond what was sent
    forge.released(lie);
    EXPECT_FALSE(out.put({}, bytes_of(64, 1))) << lie;
  }
  forge.released(1024);  // a plausible value: room again
  EXPECT_TRUE(out.put({}, bytes_of(64, 1)));
}

// The reader's sleep ends when the sender publishes (the futex), not at its timeout; a bell rung
// before the sleep is not missed; wake() ends it too.
TEST(SharedRing, ASleepingReaderIsWokenByAPublicationOrByWake) {
  OutboundRing out(kCapacity);
  auto in = InboundRing::open(getpid(), out.fd(), out.file_bytes());
  const std::uint32_t before = in->bell();
  ASSERT_TRUE(out.put({}, bytes_of(10, 0)));
  auto start = std::chrono::steady_clock::now();
  in->sleep(before, std::chrono::seconds(30));  // rung since `before`: returns at once
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (bool by_wake : {false, true}) {
    const std::uint32_t seen = in->bell();
    std::atomic<bool> woke{false};
    std::thread reader([&] {
      in->sleep(seen, std::chrono::seconds(30));
      woke = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (by_wake)
      in->wake();
    else
      ASSERT_TRUE(out.put({}, bytes_of(10, 1)));
    start = std::chrono::steady_clock::now();
    reader.join();  // well before the 30 s timeout
    EXPECT_TRUE(woke.load());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << by_wake;
  }
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
  EXPECT_THROW(OutboundRing(100), core::InvalidArgument);                              // not a multiple of 64
}

}  // namespace
}  // namespace fast::runtime::zmq
