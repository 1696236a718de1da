// HandshakeSlots (src/runtime/zmq/handshake_slots.hpp): a connection that comes while every slot is
// taken takes the oldest one's slot, and that one's socket is shut down (its reader sees the end of
// the stream at once); finish() says whether a handshake still held its slot.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <array>
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

// Whether `fd` reads the end of the stream now (0 bytes), rather than blocking for data.
bool at_end(int fd) {
  char byte = 0;
  return ::recv(fd, &byte, 1, MSG_DONTWAIT) == 0;
}

TEST(HandshakeSlots, ANewcomerWhenEverySlotIsTakenEvictsTheOldest) {
  HandshakeSlots slots(2);
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
// peer's connection, which authenticates as soon as it is read, keeps its slot unless `capacity`
// newer ones come before it finishes.
TEST(HandshakeSlots, IdleConnectionsHoldingEverySlotDoNotKeepAPeerOut) {
  constexpr int kCapacity = 16;
  HandshakeSlots slots(kCapacity);
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

}  // namespace
}  // namespace fast::runtime::zmq
