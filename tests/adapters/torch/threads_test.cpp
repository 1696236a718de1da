#include <gtest/gtest.h>

#include <cstdlib>

#include <ATen/Parallel.h>

#include "fast/adapters/torch/threads.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

TEST(TorchThreads, EnvironmentValueWins) {
  ::setenv("FAST_TORCH_THREADS", "3", 1);
  EXPECT_EQ(configure_torch_threads(8), 3);
  EXPECT_EQ(::at::get_num_threads(), 3);
  ::unsetenv("FAST_TORCH_THREADS");
}

TEST(TorchThreads, DefaultSharesTheCoresAmongWorkers) {
  ::unsetenv("FAST_TORCH_THREADS");
  const int cores = available_cores();
  ASSERT_GE(cores, 1);
  EXPECT_EQ(configure_torch_threads(1), cores);
  EXPECT_EQ(::at::get_num_threads(), cores);
  EXPECT_EQ(configure_torch_threads(2), std::max(1, cores / 2));
  EXPECT_EQ(configure_torch_threads(cores + 1), 1);
  EXPECT_EQ(::at::get_num_interop_threads(), 1);
}

TEST(TorchThreads, RejectsFewerThanOneWorker) { EXPECT_THROW(configure_torch_threads(0), InvalidArgument); }

}  // namespace
}  // namespace fast::torch
