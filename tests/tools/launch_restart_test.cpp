// End-to-end tests of `fast launch --restart` (docs/launch.md, "Restarts"): scripts that fail in
// chosen ways under a launch that starts them again; every run is bounded in time and killed if it
// overruns.

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <regex>
#include <string>

#include "common/run_fast.hpp"
#include "launch_common.hpp"

namespace {

using namespace fast::testing::launch_cli;  // NOLINT(google-build-using-namespace): the shared helpers

// --restart (docs/launch.md, "Restarts"): a process killed every time it starts is restarted alone
// once; then the restarts are spent and its failure is the run's, as without --restart.
TEST(Launch, RestartStartsAKilledProcessAgainUntilTheRestartsAreSpent) {
  const FastDone r = run_fast(
      "restart_spent",
      launch_sh({"-n", "2", "--grace", "1", "--restart", "1"},
                "echo pid=$$; if [ $FAST_PROCESS_RANK = 1 ]; then sleep 0.2; kill -KILL $$; fi; exec sleep 60"));
  EXPECT_EQ(r.code, exit_code::killed_by(SIGKILL)) << r.err;
  EXPECT_EQ(fast::testing::count_of(r.err,
                                    "starting it again with its rank and environment (--restart: 1 of 1 "
                                    "restarts spent, 0 left)"),
            1)
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(process 1 \(pid \d+\) failed first: killed by signal SIGKILL)")))
      << r.err;
  const auto pids = printed_pids(r.out);
  EXPECT_EQ(pids.size(), 3u) << r.out;  // process 0, process 1 twice
  expect_none_alive(pids);
}

// Process 0 too is started again alone, and only a process started again alone has
// FAST_RESTARTED=1 (the rendezvous's server is then a survivor of an elastic run: docs/faults.md).
TEST(Launch, RestartStartsProcessZeroAgainAloneMarkedRestarted) {
  const FastDone r = run_fast("restart_zero", launch_sh({"-n", "2", "--restart", "1"},
                                                        "echo start $FAST_PROCESS_RANK ${FAST_RESTARTED:-unset}; "
                                                        "if [ $FAST_PROCESS_RANK = 0 ] && [ -z \"$FAST_RESTARTED\" ]; "
                                                        "then sleep 0.2; kill -KILL $$; fi; sleep 1"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(fast::testing::count_of(r.out, "start 0 unset"), 1) << r.out;
  EXPECT_EQ(fast::testing::count_of(r.out, "start 1 unset"), 1) << r.out;
  EXPECT_EQ(fast::testing::count_of(r.out, "start 0 1"), 1) << r.out;
  EXPECT_EQ(fast::testing::count_of(r.out, "start "), 3) << r.out;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(process 0 \(pid \d+\) failed: killed by signal SIGKILL; )"
                                                  R"(starting it again with its rank and environment)")))
      << r.err;
}

// A lost peer (exit code 3) restarts the whole group at a new rendezvous port; the second start
// ends with 0 everywhere, which is never restarted: launch exits with 0. Each process counts its
// starts in a file (process 1 fails once process 0 has counted its first: the file holds the count,
// not only exists, since a process 0 stopped between creating and writing it would leave it empty).
TEST(Launch, RestartOfTheWholeGroupAfterALostPeerAndCleanExitsAreFinal) {
  const fs::path dir = temp_dir("restart_group");
  for (const char* f : {"starts0", "starts1"}) fs::remove(dir / f);
  const FastDone r = wait_fast(start_fast(
      dir, launch_sh({"-n", "2", "--restart", "2"},
                     "f=starts$FAST_PROCESS_RANK; n=$(($(cat $f 2>/dev/null || echo 0) + 1)); echo $n > $f; "
                     "echo \"start=$n rdv=$FAST_RENDEZVOUS\"; if [ $n = 1 ]; then "
                     "if [ $FAST_PROCESS_RANK = 1 ]; then while [ ! -s starts0 ]; do sleep 0.05; done; exit 3; fi; "
                     "exec sleep 60; fi; exit 0")));
  EXPECT_EQ(r.code, exit_code::ok) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(process 1 \(pid \d+\) failed: exit code 3; stopping the 1 )"
                                                  R"(process still running and starting all 2 again \(--restart: )"
                                                  R"(1 of 2 restarts spent, 1 left\))")))
      << r.err;
  EXPECT_TRUE(contains(r.err, "started the 2 processes again")) << r.err;
  std::smatch first, second;
  ASSERT_TRUE(std::regex_search(r.out, first, std::regex(R"(\[1\] start=1 rdv=(\S+))"))) << r.out;
  ASSERT_TRUE(std::regex_search(r.out, second, std::regex(R"(\[0\] start=2 rdv=(\S+))"))) << r.out;
  EXPECT_NE(first[1].str(), second[1].str()) << "the new start meets at a new port";
  EXPECT_TRUE(contains(r.out, "[1] start=2 rdv=" + second[1].str())) << r.out;
  EXPECT_FALSE(contains(r.out, "start=3")) << r.out;
}

// A process started again alone that still runs once the others ended with 0 (it came back too
// late to join) is stopped 10 s later, and its end is no failure: launch exits with 0.
TEST(Launch, RestartedProcessStillRunningAfterTheRunFinishedIsStoppedAndNoFailure) {
  const auto start = std::chrono::steady_clock::now();
  const FastDone r = run_fast(
      "restart_late", launch_sh({"-n", "2", "--restart", "1"},
                                "if [ $FAST_PROCESS_RANK = 1 ]; then if [ -z \"$FAST_RESTARTED\" ]; then sleep 0.2; "
                                "kill -KILL $$; fi; exec sleep 60; fi; sleep 3; exit 0"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.code, exit_code::ok) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "the run's other processes ended; waiting up to 10 s for the 1 process started again alone "
                       "(one that joined the run ends with it; one that did not can no longer join, and is stopped "
                       "then)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "sending SIGTERM to the 1 process still running")) << r.err;
  EXPECT_FALSE(contains(r.err, "failed first")) << r.err;
  EXPECT_LT(seconds, 30) << r.err;
}

// Bad input (exit code 2) fails again the same way, and a signal to launch is no failure: neither
// is restarted.
TEST(Launch, RestartLeavesBadInputAndForwardedSignalsAlone) {
  const FastDone bad = run_fast("restart_bad", launch_sh({"-n", "2", "--restart", "3"}, "exit 2"));
  EXPECT_EQ(bad.code, exit_code::bad_input) << bad.err;
  EXPECT_FALSE(contains(bad.err, "starting it again")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "exited with code 2 (bad input): not started again (--restart)")) << bad.err;
  const fs::path dir = temp_dir("restart_signal");
  const FastRun run = start_fast(dir, launch_sh({"-n", "2", "--restart", "3"}, "echo ready; exec sleep 60"));
  ASSERT_TRUE(wait_for_text(run.out, "ready", 2));
  ::kill(run.pid, SIGTERM);
  const FastDone r = wait_fast(run);
  EXPECT_EQ(r.code, exit_code::killed_by(SIGTERM)) << r.err;
  EXPECT_FALSE(contains(r.err, "again")) << r.err;
}

}  // namespace
