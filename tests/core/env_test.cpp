#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

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

// Generated from the table: every integer variable, given a value beyond 32 or 64 bits, one past
// either end of its declared range, -1 or a float, refuses it naming the variable and the value as
// given, unless the value lies in its range (2^32 + 3 bytes of shared memory), where it reads back
// unchanged: nothing wraps. Its two bounds and its default read back.
TEST(Env, EveryIntegerVariableRefusesValuesOutsideItsDeclaredRange) {
  int integers = 0;
  for (const EnvVar& v : env_table()) {
    if (v.type != EnvType::integer) continue;
    ++integers;
    const std::string name(v.name);
    ASSERT_LE(v.min, v.max) << name;
    const std::vector<std::string> hostile = {
        "4294967299", "4294967296", "9223372036854775808",     "18446744073709551617",   "-1", "1.5", "1e3",
        "",           "0x10",       std::to_string(v.max + 1), std::to_string(v.min - 1)};
    for (const std::string& value : hostile) {
      ::setenv(name.c_str(), value.c_str(), 1);
      // In range: what the text says, as a wider integer (128 bits hold every value above).
      __int128 wide = 0;
      bool digits = !value.empty();
      for (std::size_t i = value[0] == '-' ? 1 : 0; i < value.size(); ++i) {
        digits = digits && value[i] >= '0' && value[i] <= '9';
        if (digits) wide = wide * 10 + (value[i] - '0');
      }
      if (!value.empty() && value[0] == '-') wide = -wide;
      const bool in_range = digits && wide >= v.min && wide <= v.max;
      try {
        const long long got = env_int(name);
        EXPECT_TRUE(in_range) << name << " took '" << value << "' as " << got;
        EXPECT_EQ(static_cast<__int128>(got), wide) << name << " read '" << value << "' as " << got;
      } catch (const InvalidArgument& e) {
        const std::string what = e.what();
        EXPECT_FALSE(in_range) << name << " refused '" << value << "': " << what;
        EXPECT_NE(what.find("environment variable " + name), std::string::npos) << what;
        EXPECT_NE(what.find(value), std::string::npos) << what;
      }
    }
    for (const long long bound : {v.min, v.max}) {
      ::setenv(name.c_str(), std::to_string(bound).c_str(), 1);
      EXPECT_EQ(env_int(name), bound) << name;
    }
    ::unsetenv(name.c_str());
    const long long by_default = env_int(name);  // the default lies in the range too
    EXPECT_TRUE(by_default >= v.min && by_default <= v.max) << name << " defaults to " << by_default;
  }
  EXPECT_GE(integers, 8);
}

}  // namespace
}  // namespace fast::core
