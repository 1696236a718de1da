// The sim runtime reads a send's memory in place and copies it only once its sender may change it
// before delivery (Payload, Message::release_source). Whatever the sender does with its memory
// after it saw the send complete, or after it dropped the send's Work, the receiver gets the bytes
// the memory held at the send.
#include <gtest/gtest.h>

#include <vector>

#include "common/star_cluster.hpp"
#include "common/views.hpp"
#include "fast/runtime/sim/world.hpp"

namespace fast::runtime {
namespace {

using testing::cview;
using testing::mview;

// A transfer of a few floats on star_cluster takes about 2 ms of simulated time: a receiver that
// sleeps 1 s first finds every message arrived, and its sender long told the send completed.
constexpr double kLate = 1.0;

void run(int workers, const WorkerFn& fn) {
  sim::World world({.size = workers, .cluster = testing::star_cluster(workers)});
  world.run(fn);
}

TEST(SimPayload, MemoryChangedAfterTheSendCompletedStillDeliversTheBytesSent) {
  std::vector<float> got(4, -1.0f);
  run(2, [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 1, 0);
    if (ctx.rank() == 0) {
      std::vector<float> data{1, 2, 3, 4};
      ctx.send(1, tag, cview(data)).wait();
      data.assign(4, 9.0f);  // allowed: the send completed, and the receiver has not received yet
      ctx.sleep(2 * kLate);
    } else {
      ctx.sleep(kLate);
      ctx.recv(0, tag, mview(got)).wait();
    }
  });
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4}));
}

TEST(SimPayload, MemoryChangedAfterTheSendsWorkWasDroppedStillDeliversTheBytesSent) {
  std::vector<float> got(3, -1.0f);
  run(2, [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 2, 0);
    if (ctx.rank() == 0) {
      std::vector<float> data{5, 6, 7};
      { Work dropped = ctx.send(1, tag, cview(data)); }  // its transfer has not even arrived
      data.assign(3, 0.0f);
      ctx.sleep(2 * kLate);
    } else {
      ctx.sleep(kLate);
      ctx.recv(0, tag, mview(got)).wait();
    }
  });
  EXPECT_EQ(got, (std::vector<float>{5, 6, 7}));
}

// Two sends of one memory share its bytes while both are under way; a third, after the sender saw
// them complete and changed the memory, carries the new bytes, not the shared copy of the old ones.
TEST(SimPayload, SendsOfOneMemoryShareTheBytesOnlyWhileUnderWay) {
  std::vector<float> first1(2, -1.0f), first2(2, -1.0f), second2(2, -1.0f);
  run(3, [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 3, 0);
    if (ctx.rank() == 0) {
      std::vector<float> data{1, 2};
      Work a = ctx.send(1, tag, cview(data));
      Work b = ctx.send(2, tag, cview(data));
      a.wait();
      b.wait();
      data = {3, 4};
      ctx.send(2, tag, cview(data)).wait();
      data = {0, 0};
      ctx.sleep(2 * kLate);
    } else if (ctx.rank() == 1) {
      ctx.sleep(kLate);
      ctx.recv(0, tag, mview(first1)).wait();
    } else {
      ctx.sleep(kLate);
      ctx.recv(0, tag, mview(first2)).wait();
      ctx.recv(0, tag, mview(second2)).wait();
    }
  });
  EXPECT_EQ(first1, (std::vector<float>{1, 2}));
  EXPECT_EQ(first2, (std::vector<float>{1, 2}));
  EXPECT_EQ(second2, (std::vector<float>{3, 4}));
}

// A receive posted before the send reads the sender's memory in place on arrival; the sender
// changes it only after it saw the send complete.
TEST(SimPayload, AReceivePostedFirstGetsTheBytesSentAndAddsThemWithSum) {
  std::vector<float> got{10, 20};
  run(2, [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 4, 0);
    if (ctx.rank() == 0) {
      ctx.sleep(0.1);
      std::vector<float> data{1, 2};
      ctx.send(1, tag, cview(data)).wait();
      data = {7, 7};
    } else {
      ctx.recv(0, tag, mview(got), Combine::sum).wait();
    }
  });
  EXPECT_EQ(got, (std::vector<float>{11, 22}));
}

// A receive posted and matched before its transfer arrived is delivered when the sender sees its
// send complete (no copy of the sender's memory): the sender may change its memory at once, and
// the receiver, waiting only later, finds the bytes sent, added exactly once, and one message
// counted.
TEST(SimPayload, AMatchedReceiveIsDeliveredWhenTheSenderSeesItsSendCompleteAndOnlyOnce) {
  std::vector<float> got{10, 20};
  std::vector<float> copied(2, -1.0f);
  LinkStats stats;
  run(2, [&](Context& ctx) {
    constexpr Tag sum_tag = make_tag(TagKind::user, 5, 0);
    constexpr Tag copy_tag = make_tag(TagKind::user, 5, 1);
    if (ctx.rank() == 0) {
      ctx.sleep(0.1);  // the receives are posted first
      std::vector<float> data{1, 2};
      ctx.send(1, sum_tag, cview(data)).wait();
      data = {7, 7};
      ctx.send(1, copy_tag, cview(data)).wait();
      data = {0, 0};
    } else {
      Work add = ctx.recv(0, sum_tag, mview(got), Combine::sum);
      Work copy = ctx.recv(0, copy_tag, mview(copied));
      ctx.sleep(kLate);  // both transfers arrived and their sender changed the memory meanwhile
      EXPECT_TRUE(add.is_completed());
      add.wait();
      copy.wait();
      stats = ctx.link_stats(0);
    }
  });
  EXPECT_EQ(got, (std::vector<float>{11, 22}));
  EXPECT_EQ(copied, (std::vector<float>{7, 7}));
  EXPECT_EQ(stats.messages_received, 2u);
  EXPECT_EQ(stats.bytes_received, 4 * sizeof(float));
}

}  // namespace
}  // namespace fast::runtime
