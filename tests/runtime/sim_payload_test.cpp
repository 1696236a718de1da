// The sim runtime reads a send's memory in place and copies it only once its sender may change it
// before delivery (Payload, Message::release_source). Whatever the sender does with its memory
// after it saw the send complete, or after it dropped the send's Work, the receiver gets the bytes
// the memory held at the send.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/star_cluster.hpp"
#include "common/views.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
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

// finish_sends_then_write under sim: the messages still to be delivered when the sender replaces
// its memory take the scratch buffer's storage for the bytes sent (Payload::keep writes the new
// contents into it and swaps it with the sender's memory) instead of a copy; with every message
// delivered, the new contents are written in place and the scratch stays the caller's.
namespace lend {

constexpr Tag kTag = make_tag(TagKind::user, 6, 0);

// out <- x + 2 s, element by element: the new contents from the old ones (x) and the scratch (s);
// each call counted in `calls`.
Context::ElementWrite x_plus_twice(std::span<const float> x, std::span<const float> s, int& calls) {
  return [x, s, &calls](core::MutableView out_view) {
    ++calls;
    const std::span<float> out = out_view.as<float>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = x[i] + 2.0f * s[i];
  };
}

struct Seen {
  std::vector<float> data;              // the sender's memory after the call
  std::size_t scratch_numel = 0;        // the scratch's length after the call (0: the runtime took it)
  int writes = 0;                       // calls of the write (exactly one either way)
  std::vector<std::vector<float>> got;  // per receiver
};

// Rank 0 sends {1, 2, 3} to ranks 1..workers-1 and replaces it with {1, 2, 3} + 2 {3, 3, 3} =
// {7, 8, 9}; rank r receives after late[r] simulated seconds (0: its receive is posted before the
// send).
Seen run_lend(int workers, const std::vector<double>& late, bool extra_send = false) {
  Seen seen;
  seen.got.assign(static_cast<std::size_t>(workers), std::vector<float>(3, -1.0f));
  run(workers, [&](Context& ctx) {
    if (ctx.rank() == 0) {
      ctx.sleep(0.1);  // receives without a delay are posted first
      std::vector<float> data{1, 2, 3};
      core::Buffer scratch(3, core::DType::f32);
      std::fill_n(scratch.as<float>().begin(), 3, 3.0f);
      std::vector<Work> sends;
      for (int p = 1; p < ctx.size(); ++p) sends.push_back(ctx.send(p, kTag, cview(data)));
      // A send of the same memory left out of the list (a caller's mistake): nothing is lent, and
      // the copy its message shares with the listed one serves it.
      Work outside = extra_send ? ctx.send(1, kTag, cview(data)) : Work();
      ctx.finish_sends_then_write(sends, mview(data), scratch, x_plus_twice(data, scratch.as<float>(), seen.writes));
      seen.data = data;
      seen.scratch_numel = scratch.numel();
      outside.wait();
      data.assign(3, 0.0f);
      ctx.sleep(3 * kLate);
      return;
    }
    const double delay = late[static_cast<std::size_t>(ctx.rank())];
    if (delay > 0) ctx.sleep(delay);
    ctx.recv(0, kTag, mview(seen.got[static_cast<std::size_t>(ctx.rank())])).wait();
    if (extra_send && ctx.rank() == 1) {
      std::vector<float> again(3);
      ctx.recv(0, kTag, mview(again)).wait();
      EXPECT_EQ(again, (std::vector<float>{1, 2, 3}));
    }
  });
  return seen;
}

// recv_each_then's receives are matched before the sender changes its memory, but read only once
// both messages are in: the first message keeps a copy when its sender sees its send complete
// (held receives are never delivered early), so reduce sees the bytes sent; the counters count
// both messages.
TEST(SimPayload, RecvEachThenReadsTheBytesSentAlsoWhenTheSenderChangedThemMeanwhile) {
  std::vector<float> first, second;
  LinkStats stats;
  run(2, [&](Context& ctx) {
    constexpr Tag tag = make_tag(TagKind::user, 9, 0);
    if (ctx.rank() == 0) {
      std::vector<float> data{1, 2, 3, 4};
      ctx.send(1, tag, cview(data)).wait();
      data.assign(4, 9.0f);  // allowed: the send completed; the receiver has not read it yet
      ctx.sleep(kLate);
      std::vector<float> more{5, 6, 7, 8};
      ctx.send(1, tag, cview(more)).wait();
    } else {
      const int peers[] = {0, 0};
      ctx.recv_each_then(peers, tag, core::DType::f32, 4, [&](std::span<const core::ConstView> in) {
        const std::span<const float> a = in[0].as<float>(), b = in[1].as<float>();
        first.assign(a.begin(), a.end());
        second.assign(b.begin(), b.end());
      });
      stats = ctx.link_stats(0);
    }
  });
  EXPECT_EQ(first, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(second, (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(stats.messages_received, 2u);
  EXPECT_EQ(stats.bytes_received, 32u);
}

TEST(SimPayload, LateReceiversGetTheBytesSentFromTheLentBuffer) {
  const Seen seen = run_lend(3, {0, kLate, 2 * kLate});
  EXPECT_EQ(seen.data, (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(seen.writes, 1);
  EXPECT_EQ(seen.scratch_numel, 0u);  // taken: it holds the bytes sent for ranks 1 and 2
  EXPECT_EQ(seen.got[1], (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(seen.got[2], (std::vector<float>{1, 2, 3}));
}

TEST(SimPayload, WithEveryReceivePostedFirstNothingIsLentAndTheWriteIsInPlace) {
  const Seen seen = run_lend(3, {0, 0, 0});
  EXPECT_EQ(seen.data, (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(seen.writes, 1);
  EXPECT_EQ(seen.scratch_numel, 3u);
  EXPECT_EQ(seen.got[1], (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(seen.got[2], (std::vector<float>{1, 2, 3}));
}

TEST(SimPayload, OneReceiverEarlyAndOneLateBothGetTheBytesSent) {
  const Seen seen = run_lend(3, {0, 0, kLate});
  EXPECT_EQ(seen.data, (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(seen.writes, 1);
  EXPECT_EQ(seen.scratch_numel, 0u);
  EXPECT_EQ(seen.got[1], (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(seen.got[2], (std::vector<float>{1, 2, 3}));
}

TEST(SimPayload, ASendOfTheMemoryOutsideTheListKeepsTheScratchTheCallers) {
  const Seen seen = run_lend(2, {0, kLate}, /*extra_send=*/true);
  EXPECT_EQ(seen.data, (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(seen.writes, 1);
  EXPECT_EQ(seen.scratch_numel, 3u);
  EXPECT_EQ(seen.got[1], (std::vector<float>{1, 2, 3}));
}

// The sender lost (its host turned off) while it waits for its sends: the first send's message
// took the lent buffer, the next wait fails, and the call throws PeerLost with the sender's memory
// holding the bytes sent again; the late receivers still get them (a lost worker's messages sent
// before the loss arrive).
TEST(SimPayload, ASendThatFailsAfterTheLendingLeavesTheSendersMemoryAsSent) {
  Cluster c = testing::star_cluster(3);
  c.failures.push_back({.host = 0, .off = 1e-4});  // during the first wait: its transfer takes ~2 ms
  std::vector<float> after_failure;
  std::vector<std::vector<float>> got(3, std::vector<float>(3, -1.0f));
  bool lost = false;
  bool lent = false;  // the first message took the scratch before the failure
  int writes = 0;
  sim::World world({.size = 3, .cluster = c, .tolerate_lost = true});
  world.run([&](Context& ctx) {
    if (ctx.rank() == 0) {
      std::vector<float> data{1, 2, 3};
      core::Buffer scratch(3, core::DType::f32);
      std::vector<Work> sends{ctx.send(1, kTag, cview(data)), ctx.send(2, kTag, cview(data))};
      try {
        ctx.finish_sends_then_write(sends, mview(data), scratch, x_plus_twice(data, scratch.as<float>(), writes));
      } catch (const core::PeerLost&) {
        lost = true;
      }
      lent = scratch.numel() == 0;
      after_failure = data;
      data.assign(3, 0.0f);
      return;
    }
    ctx.sleep(kLate);
    ctx.recv(0, kTag, mview(got[static_cast<std::size_t>(ctx.rank())])).wait();
  });
  EXPECT_TRUE(lost);
  EXPECT_TRUE(lent);
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(after_failure, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(got[1], (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(got[2], (std::vector<float>{1, 2, 3}));
}

// Messages of 256 KiB are delivered on a compute thread (kBesideBytes) while the other actors of the
// instant run: the sender lends the buffer (swaps it with its memory) only once every delivery
// that reads its memory has ended. The late receiver's send is waited first, so that its release
// can come while the early receiver's delivery is still under way.
TEST(SimPayload, ADeliveryOnAComputeThreadEndsBeforeTheLentBufferIsSwappedIn) {
  constexpr std::size_t n = 65536;
  std::vector<float> sent(n), fresh(n);
  for (std::size_t i = 0; i < n; ++i) {
    sent[i] = static_cast<float>(i);
    fresh[i] = -static_cast<float>(i) - 1.0f;
  }
  std::vector<float> after;
  std::vector<std::vector<float>> got(3, std::vector<float>(n, 0.0f));
  bool lent = false;
  int writes = 0;
  sim::World world({.size = 3, .cluster = testing::star_cluster(3), .compute_threads = 2});
  world.run([&](Context& ctx) {
    if (ctx.rank() == 0) {
      ctx.sleep(0.1);  // rank 1's receive is posted first
      std::vector<float> data = sent;
      core::Buffer scratch(n, core::DType::f32);  // (fresh - sent) / 2: x + 2 s = fresh
      for (std::size_t i = 0; i < n; ++i) scratch.as<float>()[i] = (fresh[i] - sent[i]) / 2.0f;
      std::vector<Work> sends{ctx.send(2, kTag, cview(data)), ctx.send(1, kTag, cview(data))};
      ctx.finish_sends_then_write(sends, mview(data), scratch, x_plus_twice(data, scratch.as<float>(), writes));
      after = data;
      lent = scratch.numel() == 0;
      data.assign(n, 0.0f);
      ctx.sleep(3 * kLate);
      return;
    }
    if (ctx.rank() == 2) ctx.sleep(kLate);
    ctx.recv(0, kTag, mview(got[static_cast<std::size_t>(ctx.rank())])).wait();
  });
  EXPECT_EQ(after, fresh);
  EXPECT_TRUE(lent);
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(got[1], sent);
  EXPECT_EQ(got[2], sent);
}

}  // namespace lend

namespace owned {

constexpr Tag kTag = make_tag(TagKind::user, 7, 0);

struct Seen {
  std::vector<float> plain, owned;      // what ranks 1 and 2 received
  double plain_at = -1, owned_at = -1;  // simulated times at which their receives completed
  double sent_at = -1;                  // when rank 0 sent
  bool gone_at_send = false;
  bool gone_at_arrival = false;  // once the send completed
  bool gone_at_end = false;
  LinkStats stats;  // rank 0 to rank 2
};

// Rank 0 sends `n` floats (i / 4) at 0.1 s to rank 1 (send, from memory it keeps) and to rank 2
// (send_owned, keeping only a weak pointer); ranks 1 and 2 post their receives at 0 or, late, at
// kLate. The two transfers share rank 0's link alike, so a receive that completes when its
// transfer arrives completes at the same simulated time in both.
Seen exchange(bool late, std::size_t n, int threads) {
  Seen seen;
  seen.plain.assign(n, -1.0f);
  seen.owned.assign(n, -1.0f);
  sim::World world({.size = 3, .cluster = testing::star_cluster(3), .compute_threads = threads});
  world.run([&](Context& ctx) {
    if (ctx.rank() == 0) {
      ctx.sleep(0.1);  // a receive posted at 0 is posted first
      auto data = std::make_shared<core::Buffer>(n, core::DType::f32);
      for (std::size_t i = 0; i < n; ++i) data->as<float>()[i] = static_cast<float>(i) / 4;
      const core::Buffer kept = core::Buffer::copy_of(std::as_const(*data).view());
      const std::weak_ptr<core::Buffer> watch = data;
      seen.sent_at = ctx.now();
      Work plain = ctx.send(1, kTag, kept.view());
      Work sent = ctx.send_owned(2, kTag, std::move(data));
      seen.gone_at_send = watch.expired();
      plain.wait();
      sent.wait();
      seen.gone_at_arrival = watch.expired();
      ctx.sleep(2 * kLate);
      seen.gone_at_end = watch.expired();
      seen.stats = ctx.link_stats(2);
      return;
    }
    if (late) ctx.sleep(kLate);
    std::vector<float>& got = ctx.rank() == 1 ? seen.plain : seen.owned;
    ctx.recv(0, kTag, mview(got)).wait();
    (ctx.rank() == 1 ? seen.plain_at : seen.owned_at) = ctx.now();
  });
  return seen;
}

std::vector<float> quarters(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) / 4;
  return v;
}

// Into a receive posted first the bytes move at the send (inline without a pool: the buffer is gone
// before send_owned returns), and the receive completes when the transfer arrives, as send's.
TEST(SimPayload, AnOwnedBufferGoesAtTheSendIntoAReceivePostedFirst) {
  constexpr std::size_t n = 1000;
  const Seen seen = exchange(false, n, 1);
  EXPECT_EQ(seen.owned, quarters(n));
  EXPECT_EQ(seen.plain, quarters(n));
  EXPECT_TRUE(seen.gone_at_send);
  EXPECT_EQ(seen.owned_at, seen.plain_at);
  EXPECT_GT(seen.owned_at, seen.sent_at + 1e-3);  // at least the link's latency after the send
  EXPECT_EQ(seen.stats.bytes_sent, n * sizeof(float));
  EXPECT_EQ(seen.stats.messages_sent, 1u);
}

// A late receive: the message holds the buffer (after the send completed too) until it is
// delivered, then lets go of it.
TEST(SimPayload, AnOwnedBufferOfALateReceiveGoesWhenDelivered) {
  constexpr std::size_t n = 1000;
  const Seen seen = exchange(true, n, 1);
  EXPECT_EQ(seen.owned, quarters(n));
  EXPECT_FALSE(seen.gone_at_send);
  EXPECT_FALSE(seen.gone_at_arrival);
  EXPECT_TRUE(seen.gone_at_end);
  EXPECT_EQ(seen.owned_at, seen.plain_at);
}

// With a pool, a large message (past kBesideBytes) moves on a compute thread: the bytes are there
// and the receive completes as send's; the buffer is gone by the end.
TEST(SimPayload, AnOwnedBufferMovesOnAComputeThreadWithAPool) {
  constexpr std::size_t n = 100000;  // 400 KB
  const Seen seen = exchange(false, n, 2);
  EXPECT_EQ(seen.owned, quarters(n));
  EXPECT_EQ(seen.plain, quarters(n));
  EXPECT_TRUE(seen.gone_at_end);
  EXPECT_EQ(seen.owned_at, seen.plain_at);
  EXPECT_GT(seen.owned_at, seen.sent_at + 1e-3);
}

// A posted receive of another length fails when the transfer arrives, as a delivery then would,
// its destination unchanged; with and without a pool.
TEST(SimPayload, AnOwnedBufferOfAnotherLengthFailsTheReceivePostedFirst) {
  for (const int threads : {1, 2}) {
    constexpr std::size_t n = 100000;
    std::vector<float> got(n + 1, -3.0f);
    std::string error;
    double sent_at = -1, failed_at = -1;
    sim::World world({.size = 2, .cluster = testing::star_cluster(2), .compute_threads = threads});
    world.run([&](Context& ctx) {
      if (ctx.rank() == 0) {
        ctx.sleep(0.1);
        sent_at = ctx.now();
        ctx.send_owned(1, kTag, std::make_shared<const core::Buffer>(n, core::DType::f32)).wait();
        return;
      }
      try {
        ctx.recv(0, kTag, mview(got)).wait();
      } catch (const core::InvalidArgument& e) {
        error = e.what();
        failed_at = ctx.now();
      }
    });
    EXPECT_NE(error.find("sent 100000 x f32, receiver expects 100001 x f32"), std::string::npos) << error;
    EXPECT_GT(failed_at, sent_at + 1e-3) << threads;
    EXPECT_EQ(got, std::vector<float>(n + 1, -3.0f)) << threads;
  }
}

}  // namespace owned

}  // namespace
}  // namespace fast::runtime
