// core::counted and core::processes (core/counted.hpp): the noun in the singular for 1 only.
#include <gtest/gtest.h>

#include "fast/core/counted.hpp"

namespace fast::core {
namespace {

TEST(Counted, OneTakesTheSingularEveryOtherCountThePlural) {
  EXPECT_EQ(counted(1, "worker"), "1 worker");
  EXPECT_EQ(counted(0, "worker"), "0 workers");
  EXPECT_EQ(counted(2, "step"), "2 steps");
  EXPECT_EQ(counted(-1, "step"), "-1 steps");
  EXPECT_EQ(processes(1), "1 process");
  EXPECT_EQ(processes(4), "4 processes");
}

}  // namespace
}  // namespace fast::core
