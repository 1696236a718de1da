#include <gtest/gtest.h>

#include <cstdint>

#include <unistd.h>

#include <torch/types.h>

#include "fast/adapters/torch/pooled_allocator.hpp"
#include "fast/core/page_pool.hpp"

namespace fast::torch {
namespace {

// Once installed (as a simulated run does), libtorch's CPU tensors of kPooledTensorBytes or more
// lie in page runs of FAST's pool: page-aligned, and a freed one goes back to the pool whole, so
// that the pool's next run of that length is the same memory. Smaller ones do not come from the
// pool (what the pool hands out next is not theirs). One test per process: the allocator stays.
TEST(PooledCpuAllocator, LargeTensorsAreRunsOfThePoolReusedWholeAndSmallOnesAreNot) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_FALSE(pooled_cpu_allocator_in_use());
  use_pooled_cpu_allocator();
  use_pooled_cpu_allocator();  // idempotent
  EXPECT_TRUE(pooled_cpu_allocator_in_use());

  const std::int64_t large = static_cast<std::int64_t>(kPooledTensorBytes / sizeof(float)) + 1000;  // not whole pages
  const void* first = nullptr;
  {
    ::torch::Tensor t = ::torch::ones({large});
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % page, 0U);
    EXPECT_EQ(t.sum().item<float>(), static_cast<float>(large));
  }
  // The same length from the pool directly: the run the tensor gave back.
  const std::size_t bytes = static_cast<std::size_t>(large) * sizeof(float);
  void* run = core::take_pooled_pages(bytes);
  EXPECT_EQ(run, first);
  core::give_pooled_pages(run, bytes);

  const void* small = nullptr;
  {
    ::torch::Tensor t = ::torch::zeros({1000});
    small = t.data_ptr();
  }
  void* other = core::take_pooled_pages(4000);
  EXPECT_NE(other, small);
  core::give_pooled_pages(other, 4000);
}

}  // namespace
}  // namespace fast::torch
