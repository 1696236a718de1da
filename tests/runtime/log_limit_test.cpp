// LogLimit (src/runtime/zmq/log_limit.hpp): at most `burst` lines per window; the rest counted and
// reported, with their number, before the first line of a later window.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "log_limit.hpp"

namespace fast::runtime::zmq {
namespace {

using std::chrono::seconds;
using Lines = std::vector<std::string>;

TEST(LogLimit, ShowsTheBurstThenCountsAndReportsTheRestInTheNextWindow) {
  LogLimit limit(3, seconds(10), "refused");
  const LogLimit::Clock::time_point t0{};
  for (int k = 0; k < 3; ++k) EXPECT_EQ(limit.admit("line", t0 + seconds(k)), Lines{"line"}) << k;
  // 1000 more within the window: none shown, all counted.
  for (int k = 0; k < 1000; ++k) EXPECT_TRUE(limit.admit("flood", t0 + seconds(5)).empty());
  EXPECT_EQ(limit.hidden(), 1000u);
  EXPECT_TRUE(limit.admit("late", t0 + seconds(9)).empty());  // the window is [t0, t0 + 10 s)
  // The next window: the count first, then the line; the count starts again.
  EXPECT_EQ(limit.admit("next", t0 + seconds(10)),
            (Lines{"refused: 1001 more not shown (at most 3 per 10 s)", "next"}));
  EXPECT_EQ(limit.hidden(), 0u);
  EXPECT_EQ(limit.admit("a", t0 + seconds(11)), Lines{"a"});
  EXPECT_EQ(limit.admit("b", t0 + seconds(12)), Lines{"b"});
  EXPECT_TRUE(limit.admit("c", t0 + seconds(13)).empty());
  // A quiet window after it: the one hidden line is reported with the next.
  EXPECT_EQ(limit.admit("d", t0 + seconds(60)), (Lines{"refused: 1 more not shown (at most 3 per 10 s)", "d"}));
}

}  // namespace
}  // namespace fast::runtime::zmq
