#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/env_checks.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"

namespace fast::core {
namespace {

// A table of this test's own, as a layer declares its variables.
constexpr std::array kTestTable{
    EnvVar{"FAST_TEST_SECONDS", EnvType::number, "600", "A number with a default."},
    EnvVar{"FAST_TEST_THREADS", EnvType::integer, "0", "An integer in [0, 1024].", 0, 1024},
    EnvVar{"FAST_TEST_BYTES", EnvType::integer, "-1", "An integer in [-1, 2^36].", -1, 64LL << 30},
};

TEST(Env, DefaultsComeFromTheTable) {
  ::unsetenv("FAST_TEST_SECONDS");
  EXPECT_DOUBLE_EQ(env_number(kTestTable, "FAST_TEST_SECONDS"), 600.0);
  ::unsetenv("FAST_LOG_LEVEL");
  EXPECT_EQ(env_string("FAST_LOG_LEVEL"), "info");
}

TEST(Env, WrongTypeNamesVariableAndValue) {
  ::setenv("FAST_TEST_THREADS", "two", 1);
  try {
    env_int(kTestTable, "FAST_TEST_THREADS");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("FAST_TEST_THREADS"), std::string::npos);
    EXPECT_NE(what.find("'two'"), std::string::npos);
  }
  ::setenv("FAST_TEST_THREADS", "3", 1);
  EXPECT_EQ(env_int(kTestTable, "FAST_TEST_THREADS"), 3);
  ::unsetenv("FAST_TEST_THREADS");
}

// A variable is read from the table of the layer that declares it, and only from it.
TEST(Env, UnknownVariableIsUsageError) {
  EXPECT_THROW(env_string("FAST_NOT_A_VARIABLE"), InvalidUsage);
  EXPECT_THROW(env_string("FAST_TEST_SECONDS"), InvalidUsage);
  EXPECT_THROW(env_string(kTestTable, "FAST_LOG_LEVEL"), InvalidUsage);
}

TEST(Env, EveryEntryIsDescribed) {
  check_described(env_table());
  check_described(kTestTable);
}

TEST(Env, EveryIntegerVariableRefusesValuesOutsideItsDeclaredRange) {
  EXPECT_EQ(check_integer_variables(kTestTable), 2);
}

}  // namespace
}  // namespace fast::core
