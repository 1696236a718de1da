#pragma once
// Checks of a table of environment variables (core/env.hpp), generated from its declarations:
// shared by the test of core's table and the test of every layer's (tests/settings/config_test.cpp).

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"

namespace fast::core {

// Every entry is a FAST_ variable with a description.
inline void check_described(EnvTable table) {
  for (const EnvVar& v : table) {
    EXPECT_EQ(v.name.substr(0, 5), "FAST_");
    EXPECT_FALSE(v.description.empty()) << v.name;
  }
}

// Generated from a table: every integer variable, given a value beyond 32 or 64 bits, one past
// either end of its declared range, -1 or a float, refuses it naming the variable and the value as
// given, unless the value lies in its range (2^32 + 3 bytes of shared memory), where it reads back
// unchanged: nothing wraps. Its two bounds and its default read back.
inline int check_integer_variables(EnvTable table) {
  int integers = 0;
  for (const EnvVar& v : table) {
    if (v.type != EnvType::integer) continue;
    ++integers;
    const std::string name(v.name);
    EXPECT_LE(v.min, v.max) << name;
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
        const long long got = env_int(table, name);
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
      EXPECT_EQ(env_int(table, name), bound) << name;
    }
    ::unsetenv(name.c_str());
    const long long by_default = env_int(table, name);  // the default lies in the range too
    EXPECT_TRUE(by_default >= v.min && by_default <= v.max) << name << " defaults to " << by_default;
  }
  return integers;
}

}  // namespace fast::core
