// LoopTurn (src/runtime/zmq/loop_turn.hpp): the warning about a long turn of the zmq runtime's I/O
// loop, fed explicit times.
#include <gtest/gtest.h>

#include "loop_turn.hpp"

namespace fast::runtime::zmq {
namespace {

TEST(LoopTurn, ATurnWithinTheLimitIsNotReported) {
  LoopTurn turn(2);  // peer timeout 2 s: turns up to 0.5 s pass
  turn.begin(10.0);
  turn.step("poll", 10.02);
  turn.step("receive", 10.3);
  turn.step("check peers", 10.5);  // exactly the limit: 0.5 s
  EXPECT_FALSE(turn.report().has_value());
}

TEST(LoopTurn, ALongTurnNamesItsLongestStepAndTheTimes) {
  LoopTurn turn(4);  // peer timeout 4 s: turns up to 1 s pass
  turn.begin(100.0);
  turn.step("poll", 100.02);
  turn.step("receive", 103.52);  // 3.5 s
  turn.step("heartbeats", 103.62);
  const std::optional<std::string> text = turn.report();
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("took 3.6 s, 3.5 s of it in receive"), std::string::npos) << *text;
  EXPECT_NE(text->find("silent for 4 s (--peer-timeout)"), std::string::npos) << *text;
}

TEST(LoopTurn, EachTurnStartsAfresh) {
  LoopTurn turn(2);
  turn.begin(0.0);
  turn.step("rejoins", 2.0);
  ASSERT_TRUE(turn.report().has_value());
  turn.begin(2.0);
  turn.step("poll", 2.02);
  turn.step("check peers", 2.1);
  EXPECT_FALSE(turn.report().has_value());
  turn.begin(3.0);
  turn.step("poll", 4.0);  // the thread was not running: poll waits 20 ms at most
  turn.step("receive", 4.1);
  const std::optional<std::string> text = turn.report();
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("took 1.1 s, 1.0 s of it in poll"), std::string::npos) << *text;
}

}  // namespace
}  // namespace fast::runtime::zmq
