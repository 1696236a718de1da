// engine::BufferPool: reuse of returned buffers (best fit), the cap on idle memory, alignment, and
// buffers that outlive the pool's last other owner.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "buffer_pool.hpp"

using fast::runtime::engine::BufferPool;

namespace {
bool aligned(const std::byte* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }
}  // namespace

TEST(BufferPool, AReturnedBufferIsTakenAgainByTheSmallestRequestItFits) {
  auto pool = std::make_shared<BufferPool>();
  std::byte* small = nullptr;
  std::byte* large = nullptr;
  {
    auto a = pool->take(1000);
    auto b = pool->take(4000);
    small = a.get();
    large = b.get();
    EXPECT_TRUE(aligned(small));
    EXPECT_TRUE(aligned(large));
    std::memset(a.get(), 1, 1000);
    std::memset(b.get(), 2, 4000);
  }  // both back in the pool
  auto c = pool->take(900);  // fits both: the smaller one
  EXPECT_EQ(c.get(), small);
  auto d = pool->take(1001);  // only the larger one fits
  EXPECT_EQ(d.get(), large);
  auto e = pool->take(10);  // none idle: a new one
  EXPECT_NE(e.get(), small);
  EXPECT_NE(e.get(), large);
}

TEST(BufferPool, IdleBuffersBeyondTheCapAreFreedNotKept) {
  auto pool = std::make_shared<BufferPool>(1500);
  std::byte* first = nullptr;
  {
    auto a = pool->take(1000);
    auto b = pool->take(1000);
    first = a.get();
    a.reset();  // kept: 1000 of 1500
    EXPECT_EQ(pool->idle_bytes(), 1000u);
    b.reset();  // 2000 > 1500: freed
    EXPECT_EQ(pool->idle_bytes(), 1000u);
  }
  auto c = pool->take(1000);
  EXPECT_EQ(c.get(), first);
  EXPECT_EQ(pool->idle_bytes(), 0u);
}

TEST(BufferPool, ABufferKeepsItsPoolAlive) {
  auto pool = std::make_shared<BufferPool>();
  auto buffer = pool->take(0);  // at least one byte
  ASSERT_NE(buffer.get(), nullptr);
  *buffer = std::byte{7};
  std::weak_ptr<BufferPool> watch = pool;
  pool.reset();
  EXPECT_FALSE(watch.expired());
  buffer.reset();  // returned to the pool, which then goes
  EXPECT_TRUE(watch.expired());
}
