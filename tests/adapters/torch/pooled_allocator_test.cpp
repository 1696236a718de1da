#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include <c10/core/CPUAllocator.h>
#include <torch/types.h>

#include "fast/adapters/torch/models.hpp"
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

  // libtorch's raw interface (used by some of its kernels): the block is its own context, and the
  // one raw deleter frees both kinds.
  c10::Allocator* cpu = c10::GetCPUAllocator();
  for (const std::size_t n : {kPooledTensorBytes + 100, std::size_t{100}}) {
    void* raw = cpu->raw_allocate(n);
    ASSERT_NE(raw, nullptr) << n;
    std::memset(raw, 1, n);
    cpu->raw_deallocate(raw);
  }
  void* again = core::take_pooled_pages(kPooledTensorBytes + 100);  // the large raw block went back whole
  core::give_pooled_pages(again, kPooledTensorBytes + 100);

  // An allocation the kernel refuses fails as without the pooled allocator: libtorch's error naming
  // the size.
  std::string what;
  try {
    (void)::torch::empty({std::int64_t{1} << 62}, ::torch::kUInt8);
  } catch (const c10::Error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("you tried to allocate 4611686018427387904 bytes"), std::string::npos) << what;

  // The built-in models run forward and backward on it (a convolution's kernels take raw blocks).
  for (const std::string name : {"mlp", "cnn", "resnet"}) {
    Model model = make_model(name);
    const ::torch::Tensor y = model.forward(::torch::rand({16, 1, 28, 28}));
    EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{16, 10})) << name;
    y.sum().backward();
  }
}

}  // namespace
}  // namespace fast::torch
