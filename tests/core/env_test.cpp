#include <gtest/gtest.h>

#include <cstdlib>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"

namespace fast::core {
namespace {

TEST(Env, DefaultsComeFromTheTable) {
  ::unsetenv("FAST_OP_TIMEOUT");
  EXPECT_DOUBLE_EQ(env_number("FAST_OP_TIMEOUT"), 600.0);
}

TEST(Env, WrongTypeNamesVariableAndValue) {
  ::setenv("FAST_TORCH_THREADS", "two", 1);
  try {
    env_int("FAST_TORCH_THREADS");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("FAST_TORCH_THREADS"), std::string::npos);
    EXPECT_NE(what.find("'two'"), std::string::npos);
  }
  ::setenv("FAST_TORCH_THREADS", "3", 1);
  EXPECT_EQ(env_int("FAST_TORCH_THREADS"), 3);
  ::unsetenv("FAST_TORCH_THREADS");
}

TEST(Env, UnknownVariableIsUsageError) { EXPECT_THROW(env_string("FAST_NOT_A_VARIABLE"), InvalidUsage); }

TEST(Env, EveryEntryIsDescribed) {
  for (const EnvVar& v : env_table()) {
    EXPECT_EQ(v.name.substr(0, 5), "FAST_");
    EXPECT_FALSE(v.description.empty()) << v.name;
  }
}

}  // namespace
}  // namespace fast::core
