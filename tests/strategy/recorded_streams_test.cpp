// The seeded draws of every user of core/random, pinned: the values below were recorded with the
// code before core/random existed (commit 0af6427, where each user had its own copy of SplitMix64),
// so they check that moving to the one header changed no number, and they keep recorded
// experiments reproducible from here on. A change here changes the results of seeded runs.

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/compress/codec.hpp"
#include "fast/compress/powersgd.hpp"
#include "fast/core/buffer.hpp"
#include "fast/runtime/cluster.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/acid.hpp"
#include "fast/strategy/adpsgd.hpp"
#include "fast/strategy/gosgd.hpp"
#include "fast/strategy/strategy.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/schedule.hpp"

namespace fast::strategy {
namespace {

// "u-v" for every edge u -> v, in node then neighbour order.
std::string edges(int n, const auto& out_of) {
  std::string s;
  for (int i = 0; i < n; ++i)
    for (int j : out_of(i)) s += (s.empty() ? "" : " ") + std::to_string(i) + "-" + std::to_string(j);
  return s;
}

TEST(RecordedStreams, RandomRegularGraph) {
  const topology::Graph g = topology::random_regular(10, 3, 42);
  EXPECT_EQ(edges(10, [&](int i) { return g.neighbors_out(i); }),
            "0-1 0-2 0-4 1-0 1-3 1-7 2-0 2-8 2-9 3-1 3-5 3-9 4-0 4-5 4-7 5-3 5-4 5-6 6-5 6-7 6-8 7-1 7-4 7-6 8-2 8-6 "
            "8-9 9-2 9-3 9-8");
}

TEST(RecordedStreams, RandomSchedules) {
  const auto matching = topology::make_schedule("random-matching", 7, 5);
  EXPECT_EQ(edges(7, [&](int i) { return matching.out_neighbors(i, 0); }), "0-3 1-6 3-0 4-5 5-4 6-1");
  EXPECT_EQ(edges(7, [&](int i) { return matching.out_neighbors(i, 1); }), "0-2 1-6 2-0 3-4 4-3 6-1");
  const auto peer = topology::make_schedule("random-peer", 7, 0);
  EXPECT_EQ(edges(7, [&](int i) { return peer.out_neighbors(i, 0); }), "0-3 1-6 2-0 3-4 4-2 5-4 6-2");
}

TEST(RecordedStreams, GossipPeersAndCoins) {
  std::string adpsgd, coins, peers;
  for (int t = 0; t < 20; ++t) adpsgd += std::to_string(AdpsgdStrategy::pick_neighbor({1, 2, 3, 4, 5}, 9, 0, t));
  EXPECT_EQ(adpsgd, "22533232243352214113");
  for (int t = 0; t < 40; ++t) coins += GosgdStrategy::gossips(0.3, 9, 1, t) ? '1' : '0';
  EXPECT_EQ(coins, "0010100000100010001010001001000101011100");
  const auto complete = topology::make_schedule("complete", 6, 0);
  for (int t = 0; t < 20; ++t) peers += std::to_string(GosgdStrategy::pick_peer(complete, 4, 3, t));
  EXPECT_EQ(peers, "40142045114002515252");
}

TEST(RecordedStreams, AcidEvents) {
  std::mutex mutex;
  std::vector<std::vector<AcidEvent>> rank0;
  runtime::threads::World world({.size = 4});
  world.run([&](runtime::Context& ctx) {
    collective::Communicator comm(ctx);
    const auto strategy = make_strategy({.name = "acid", .seed = 11, .comm_rate = 3.0}, comm);
    if (ctx.rank() != 0) return;
    const auto& acid = dynamic_cast<const AcidStrategy&>(*strategy);
    std::lock_guard lock(mutex);
    for (int t = 0; t < 3; ++t) rank0.push_back(acid.events(t));
  });
  ASSERT_EQ(rank0.size(), 3u);
  ASSERT_EQ(rank0[0].size(), 1u);
  EXPECT_EQ(rank0[0][0].time, 0x1.3562f63911c14p-4);
  EXPECT_EQ(rank0[0][0].peer, 1);
  ASSERT_EQ(rank0[1].size(), 2u);
  EXPECT_EQ(rank0[1][0].time, 0x1.0821699e98bfp-1);
  EXPECT_EQ(rank0[1][0].peer, 1);
  EXPECT_EQ(rank0[1][1].time, 0x1.349f8dad3dcdp-1);
  EXPECT_EQ(rank0[1][1].peer, 3);
  EXPECT_TRUE(rank0[2].empty());
}

TEST(RecordedStreams, PowerSgdInitialQ) {
  const core::Layout layout{{.offset = 0, .numel = 30, .rows = 6, .shape = {6, 5}, .name = "w"},
                            {.offset = 30, .numel = 21, .rows = 7, .shape = {7, 3}, .name = "v"}};
  compress::PowerSgdState state(layout, 51, {.rank = 2, .seed = 77});
  const std::vector<float> first{0x1.8e94b8p-2f, -0x1.8605f4p+0f, -0x1.ad6368p-3f, -0x1.15b9cp-3f, 0x1.6ea328p-4f};
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(state.q()[i], first[i]) << i;
  state.reset_q();
  const std::vector<float> second{-0x1.a6663ep-3f, -0x1.bf9914p-1f, 0x1.f690d2p-4f};
  for (std::size_t i = 0; i < second.size(); ++i) EXPECT_EQ(state.q()[i], second[i]) << i;
}

TEST(RecordedStreams, RandkIndices) {
  auto codec = compress::make_codec("randk:k=10", 123);
  std::vector<float> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  std::vector<std::string> kept;
  for (int message = 0; message < 2; ++message) {
    core::Buffer payload;
    codec->encode(core::ConstView(std::span<const float>(x)), payload);
    std::vector<float> y(x.size());
    codec->decode(std::as_const(payload).view(), core::MutableView(std::span<float>(y)));
    std::string s;
    for (std::size_t i = 0; i < y.size(); ++i)
      if (y[i] != 0) s += (s.empty() ? "" : " ") + std::to_string(i);
    kept.push_back(s);
  }
  EXPECT_EQ(kept[0], "0 18 34 42 50 56 70 72 88 94");
  EXPECT_EQ(kept[1], "4 7 13 54 61 72 75 84 86 92");
}

TEST(RecordedStreams, ClusterHostFactors) {
  const runtime::Cluster c =
      runtime::parse_cluster("[hosts]\ncount = 4\nspeed = 1e9\ndistribution = \"uniform:1-5\"\nseed = 9\n", "c.toml");
  ASSERT_EQ(c.speeds.size(), 4u);
  EXPECT_EQ(c.speeds[0], 0x1.bc95cf77d4fbcp+31);
  EXPECT_EQ(c.speeds[1], 0x1.dd2b2367aa8ep+31);
  EXPECT_EQ(c.speeds[2], 0x1.eb73248996414p+30);
  EXPECT_EQ(c.speeds[3], 0x1.ed7007e3b8854p+31);
}

}  // namespace
}  // namespace fast::strategy
