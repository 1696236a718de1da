// HandshakeSlots (src/runtime/zmq/handshake_slots.hpp): a connection that comes while every slot is
// taken takes the slot of the oldest one that showed no preamble (else of the oldest), and that
// one's socket is shut down (its reader sees the end of the stream at once); finish() says whether
// a handshake still held its slot.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "handshake_slots.hpp"

namespace fast::runtime::zmq {
namespace {

struct Pair {
  std::array<int, 2> fd{-1, -1};  // [0] the accepted side, [1] the peer
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd.data()), 0); }
  ~Pair() {
    for (int f : fd) ::close(f);
  }
};

constexpr std::size_t kShown = 24;  // bytes that count as a preamble shown

// Whether `fd` reads the end of the stream now (0 bytes), rather than blocking for data.
bool at_end(int fd) {
  char byte = 0;
  return ::recv(fd, &byte, 1, MSG_DONTWAIT) == 0;
}

TEST(HandshakeSlots, ANewcomerWhenEverySlotIsTakenEvictsTheOldest) {
  HandshakeSlots slots(2, kShown);
  std::vector<Pair> pairs(4);
  const auto a = slots.admit(pairs[0].fd[0], "a");
  const auto b = slots.admit(pairs[1].fd[0], "b");
  EXPECT_EQ(a.evicted_address, "");
  EXPECT_EQ(b.evicted_address, "");
  EXPECT_EQ(slots.pending(), 2);
  EXPECT_FALSE(at_end(pairs[0].fd[0]));  // nothing to read yet: it would block
  const auto c = slots.admit(pairs[2].fd[0], "c");
  EXPECT_EQ(c.evicted_address, "a");
  EXPECT_EQ(slots.pending(), 2);
  EXPECT_EQ(slots.evicted(), 1u);
  EXPECT_TRUE(at_end(pairs[0].fd[0]));   // shut down: its handshake fails at once
  EXPECT_FALSE(at_end(pairs[1].fd[0]));  // the others untouched
  EXPECT_FALSE(slots.finish(a.id));      // its slot was taken
  EXPECT_TRUE(slots.finish(b.id));       // authenticated in time
  EXPECT_FALSE(slots.finish(b.id));      // once only
  // A slot is free again: the next newcomer evicts nobody.
  const auto d = slots.admit(pairs[3].fd[0], "d");
  EXPECT_EQ(d.evicted_address, "");
  EXPECT_FALSE(at_end(pairs[2].fd[0]));
  EXPECT_TRUE(slots.finish(c.id));
  EXPECT_TRUE(slots.finish(d.id));
  EXPECT_EQ(slots.pending(), 0);
}

// Idle strangers holding every slot do not keep a peer out: each newcomer evicts the oldest, so a
// peer's connection keeps its slot unless `capacity` newer ones come before it finishes, even
// before it wrote anything.
TEST(HandshakeSlots, IdleConnectionsHoldingEverySlotDoNotKeepAPeerOut) {
  constexpr int kCapacity = 16;
  HandshakeSlots slots(kCapacity, kShown);
  std::vector<Pair> strangers(2 * kCapacity);
  std::vector<HandshakeSlots::Admitted> admitted;
  for (Pair& p : strangers) admitted.push_back(slots.admit(p.fd[0], "stranger"));
  Pair peer;
  const auto mine = slots.admit(peer.fd[0], "peer");
  EXPECT_EQ(mine.evicted_address, "stranger");
  EXPECT_FALSE(at_end(peer.fd[0]));
  for (int i = 0; i < kCapacity - 1; ++i) slots.admit(strangers[static_cast<std::size_t>(i)].fd[1], "stranger");
  EXPECT_TRUE(slots.finish(mine.id));  // 15 newer ones came meanwhile: still its slot
  EXPECT_EQ(slots.evicted(), static_cast<std::uint64_t>(2 * kCapacity));  // 16 + the peer's 1 + 15
}

// A connection whose preamble waits unread, or whose handshake read one (shown()), is evicted only
// after every idle one: strangers who reconnect as fast as they are dropped evict one another,
// however many come before the peer's handshake thread runs.
TEST(HandshakeSlots, AConnectionThatShowedAPreambleOutlastsIdleNewcomers) {
  constexpr int kCapacity = 4;
  HandshakeSlots slots(kCapacity, kShown);
  Pair written, read, partial;
  const std::vector<std::byte> preamble(kShown, std::byte{7});
  ASSERT_EQ(::send(written.fd[1], preamble.data(), kShown, 0), static_cast<ssize_t>(kShown));
  ASSERT_EQ(::send(partial.fd[1], preamble.data(), kShown - 1, 0), static_cast<ssize_t>(kShown - 1));
  const auto w = slots.admit(written.fd[0], "written");  // its preamble waits unread
  const auto r = slots.admit(read.fd[0], "read");        // its handshake read a preamble
  slots.shown(r.id);
  const auto p = slots.admit(partial.fd[0], "partial");  // one byte short: not a preamble
  std::vector<Pair> strangers(50);
  slots.admit(strangers[0].fd[0], "stranger");  // every slot taken
  std::vector<std::string> evicted;
  for (std::size_t i = 1; i < strangers.size(); ++i)
    evicted.push_back(slots.admit(strangers[i].fd[0], "stranger").evicted_address);
  EXPECT_EQ(evicted[0], "partial");  // the oldest idle one first
  for (std::size_t i = 1; i < evicted.size(); ++i) EXPECT_EQ(evicted[i], "stranger") << i;
  std::array<char, 64> unread{};  // shut down: past the bytes it sent, the end of the stream
  EXPECT_EQ(::recv(partial.fd[0], unread.data(), unread.size(), MSG_DONTWAIT), static_cast<ssize_t>(kShown - 1));
  EXPECT_TRUE(at_end(partial.fd[0]));
  EXPECT_FALSE(at_end(read.fd[0]));
  EXPECT_FALSE(slots.finish(p.id));
  EXPECT_TRUE(slots.finish(w.id));  // 49 newer ones came meanwhile: still their slots
  EXPECT_TRUE(slots.finish(r.id));
  // When every pending one showed a preamble, the oldest goes.
  HandshakeSlots full(2, kShown);
  Pair a, b, c;
  const auto first = full.admit(a.fd[0], "a");
  full.shown(first.id);
  full.shown(full.admit(b.fd[0], "b").id);
  EXPECT_EQ(full.admit(c.fd[0], "c").evicted_address, "a");
  EXPECT_FALSE(full.finish(first.id));
}

}  // namespace
}  // namespace fast::runtime::zmq
