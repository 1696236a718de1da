// RestartPolicy (fast launch --restart, docs/launch.md "Restarts"): which ends are restarted, alone
// or with the whole group, and how the N restarts are spent.
#include <gtest/gtest.h>

#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "restart_policy.hpp"

namespace {

using fast::cli::RestartAction;
using fast::cli::RestartPolicy;
namespace exit_code = fast::core::exit_code;
constexpr int kKilled = exit_code::killed_by(9);  // SIGKILL

TEST(RestartPolicy, AProcessThatDiedIsRestartedAloneUntilTheRestartsAreSpent) {
  RestartPolicy policy(2);
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::one);
  EXPECT_EQ(policy.on_exit(1, 7, false), RestartAction::one);
  EXPECT_EQ(policy.spent(), 2);
  EXPECT_EQ(policy.left(), 0);
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::none);
  EXPECT_EQ(policy.spent(), 2);
}

TEST(RestartPolicy, ALostPeerRestartsTheWholeGroup) {
  RestartPolicy policy(3);
  EXPECT_EQ(policy.on_exit(3, exit_code::io_or_peer_lost, false), RestartAction::all);
  policy.group_started();
  EXPECT_EQ(policy.on_exit(0, exit_code::io_or_peer_lost, false), RestartAction::all);
  EXPECT_EQ(policy.spent(), 2);
}

// Process 0 too is started again alone (a survivor of an elastic run serves the rendezvous in its
// place); a run that cannot take it back ends with a lost peer, and the group restart that follows
// continues the same restart.
TEST(RestartPolicy, ProcessZeroIsRestartedAloneLikeTheOthers) {
  RestartPolicy policy(2);
  EXPECT_EQ(policy.on_exit(0, kKilled, false), RestartAction::one);
  EXPECT_EQ(policy.on_exit(2, exit_code::io_or_peer_lost, false), RestartAction::all);
  EXPECT_EQ(policy.spent(), 1);
}

// A synchronous run: the killed process is restarted alone (one restart spent); the survivors then
// end with a lost peer, and the group restart that follows continues that restart for free. The
// next failure of the new start spends the next restart.
TEST(RestartPolicy, TheGroupRestartAfterALoneRestartTheRunCouldNotTakeBackSpendsNothing) {
  RestartPolicy policy(1);
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::one);
  EXPECT_EQ(policy.on_exit(1, exit_code::io_or_peer_lost, false), RestartAction::all);
  EXPECT_EQ(policy.spent(), 1);
  policy.group_started();
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::none);  // spent: the failure stands
  EXPECT_EQ(policy.on_exit(1, exit_code::io_or_peer_lost, false), RestartAction::none);
}

// A process started again alone that the run refuses (exit code 2: a ps server's rank, a codec): the
// group starts again, continuing the same restart. Exit code 2 of any other process stays final.
TEST(RestartPolicy, AProcessTheRunRefusesRestartsTheGroupWithinTheSameRestart) {
  RestartPolicy policy(2);
  EXPECT_EQ(policy.on_exit(3, kKilled, false), RestartAction::one);
  EXPECT_EQ(policy.on_exit(1, exit_code::bad_input, false), RestartAction::none);
  EXPECT_EQ(policy.on_exit(3, exit_code::bad_input, false), RestartAction::all);
  EXPECT_EQ(policy.spent(), 1);
  policy.group_started();
  EXPECT_EQ(policy.on_exit(3, exit_code::bad_input, false), RestartAction::none);
}

TEST(RestartPolicy, CleanExitsBadInputAndLaunchsOwnStopsAreNeverRestarted) {
  RestartPolicy policy(5);
  EXPECT_EQ(policy.on_exit(1, exit_code::bad_input, false), RestartAction::none);
  EXPECT_EQ(policy.on_exit(1, kKilled, true), RestartAction::none);  // a forwarded signal, --timeout, the grace
  EXPECT_EQ(policy.on_exit(1, exit_code::ok, false), RestartAction::none);
  // Once a process of this start finished, the run is ending: nothing more is restarted...
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::none);
  EXPECT_EQ(policy.spent(), 0);
  // ...until the group starts again.
  policy.group_started();
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::one);
}

// A process started again alone that ends with 0 (the run told it that it ends without it) does
// not make the run finishing: a survivor's exit code 3 reaped after it still restarts the group,
// as it does when reaped first, and spends nothing more.
TEST(RestartPolicy, ALoneRestartsCleanExitHidesNoSurvivorsFailure) {
  for (const bool newcomer_first : {true, false}) {
    RestartPolicy policy(1);
    EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::one);
    if (newcomer_first) {
      EXPECT_EQ(policy.on_exit(2, exit_code::ok, false), RestartAction::none);
    }
    EXPECT_FALSE(policy.finishing());
    EXPECT_EQ(policy.on_exit(1, exit_code::io_or_peer_lost, false), RestartAction::all) << newcomer_first;
    EXPECT_EQ(policy.spent(), 1);
  }
  // The others' clean exits still finish the run.
  RestartPolicy policy(1);
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::one);
  EXPECT_EQ(policy.on_exit(2, exit_code::ok, false), RestartAction::none);
  EXPECT_EQ(policy.on_exit(0, exit_code::ok, false), RestartAction::none);
  EXPECT_TRUE(policy.finishing());
  EXPECT_EQ(policy.on_exit(1, kKilled, false), RestartAction::none);
}

// An elastic run below its --min-workers ends on purpose (exit code 6): neither its survivors nor
// process 0 are started again, and nothing more is restarted in this start.
TEST(RestartPolicy, AnElasticRunBelowMinWorkersIsFinishing) {
  RestartPolicy policy(5);
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::one);  // the loss: restarted alone
  EXPECT_EQ(policy.on_exit(1, exit_code::below_min_workers, false), RestartAction::none);
  EXPECT_EQ(policy.on_exit(0, exit_code::below_min_workers, false), RestartAction::none);
  EXPECT_EQ(policy.on_exit(2, kKilled, false), RestartAction::none);
  EXPECT_EQ(policy.spent(), 1);
}

TEST(RestartPolicy, WithoutRestartsNothingIsRestartedAndANegativeCountIsRefused) {
  RestartPolicy none(0);
  EXPECT_EQ(none.on_exit(2, kKilled, false), RestartAction::none);
  EXPECT_EQ(none.on_exit(0, kKilled, false), RestartAction::none);
  EXPECT_THROW(RestartPolicy(-1), fast::core::InvalidArgument);
}

}  // namespace
