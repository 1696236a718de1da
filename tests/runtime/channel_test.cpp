#include <gtest/gtest.h>

#include "fast/runtime/channel.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::runtime {
namespace {

TEST(Channel, ProducerActivityToConsumerInOrderWithBackpressure) {
  threads::World world({.size = 1});
  world.run([](Context& ctx) {
    Channel<int> ch(ctx, 2);
    Work producer = ctx.spawn("producer", [&] {
      for (int i = 0; i < 100; ++i) ch.push(i);
      ch.close();
    });
    int expected = 0;
    while (auto v = ch.pop()) EXPECT_EQ(*v, expected++);
    EXPECT_EQ(expected, 100);
    producer.wait();
    EXPECT_FALSE(ch.try_pop().has_value());
    EXPECT_THROW(ch.push(1), core::InvalidUsage);
  });
}

TEST(Channel, ZeroCapacityIsRejected) {
  threads::World world({.size = 1});
  world.run([](Context& ctx) { EXPECT_THROW(Channel<int>(ctx, 0), core::InvalidArgument); });
}

}  // namespace
}  // namespace fast::runtime
