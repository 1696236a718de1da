// A process frozen past the peer timeout (SIGSTOP, then SIGCONT: what a virtual machine's pause or a
// swap storm does) under `fast launch -n 3 -- fast train --runtime zmq`: the others count it lost
// and go on; when it runs again it asks them whether they still count it in, is told it is not,
// and leaves the run with exit code 5 naming why, instead of counting them lost in turn and
// training on alone (docs/faults.md, "A process frozen past the peer timeout"). With `fast launch
// --restart 1` it is then started again and takes its rank back; when the others ended while it
// was frozen, nobody answers and it leaves likewise, without writing over their summary. Every
// command runs in a process group of its own, bounded in time and killed as a group.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"
#include "common/test_dir.hpp"
#include "zmq_cli_common.hpp"

namespace {

namespace fs = std::filesystem;
using fast::testing::slurp;
using nlohmann::json;
using namespace fast::testing::zmq_cli;  // NOLINT(google-build-using-namespace): the shared helpers

const int kScale = fast::testing::kRunTimeScale;
// How long the process is stopped: three peer timeouts, so that the others count it lost.
const auto kFrozen = std::chrono::seconds(3 * kPeerTimeout);

// Stops process `pid` for kFrozen; sends SIGCONT however the test ends (a stopped process would
// outlive the group's SIGKILL only as a zombie, but never run again).
class Freeze {
 public:
  explicit Freeze(pid_t pid) : pid_(pid) { ::kill(pid_, SIGSTOP); }
  void thaw() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }
  ~Freeze() { thaw(); }
  Freeze(const Freeze&) = delete;
  Freeze& operator=(const Freeze&) = delete;

 private:
  pid_t pid_;
};

const char* const kLeaves = "was counted lost by the run and leaves it";

struct Case {
  std::string name;
  std::string strategy;
  int frozen = 2;      // the process stopped
  std::string joined;  // the line that tells the process started again is back in the run
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class FrozenProcess : public ::testing::TestWithParam<Case> {};

// Frozen at the start of training, thawed, told it is out, started again by launch: it takes its
// rank back; SIGTERM to launch then stops the three, whose parameters are equal (allreduce) and
// whose summary counts 3 live workers and the rejoin. Process 0 served the rendezvous and holds
// its address until it leaves: process 1 then serves it, and process 0 started again asks it.
TEST_P(FrozenProcess, ItLeavesTheRunWhenItRunsAgainAndLaunchStartsItAgain) {
  const Case& c = GetParam();
  const fs::path dir = fast::testing::test_dir("fast_frozen_process", c.name);
  Launched l = launch_zmq(
      dir, "-n 3 --restart 1",
      c.strategy + kPeerTimeoutFlag + " --summary s.json" + kTrainShown + "--batch 32 --epochs 20 --slowdown 4,4,4");
  const int v = c.frozen;
  const int observer = v == 0 ? 1 : 0;
  const pid_t pid = worker_pid(l, v);
  ASSERT_GT(pid, 0) << slurp(l.log);
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  Freeze freeze(pid);
  const bool counted =
      appears(l.log, fmt::format("[{}] [fast warn] zmq runtime: worker {} (process {}", observer, v, v));
  std::this_thread::sleep_for(kFrozen);
  freeze.thaw();
  const bool left = appears(l.log, kLeaves);
  const bool back = left && fast::testing::file_contains_within(l.log, c.joined, 120 * kScale);
  ::kill(l.pid, SIGTERM);
  const int status = fast::testing::wait_or_kill_group(l, 240 * kScale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_TRUE(counted) << "the others did not count process " << v << " lost; output:\n" << log;
  ASSERT_TRUE(left) << "process " << v << " did not leave the run once it ran again; output:\n" << log;
  ASSERT_TRUE(back) << "process " << v << " started again did not rejoin; output:\n" << log;
  EXPECT_NE(log.find(fmt::format("[{}] [fast warn] zmq runtime: this process's I/O thread was held up for", v)),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("counts it out of the run (lost: no message or heartbeat"), std::string::npos) << log;
  EXPECT_NE(log.find(fmt::format("fast launch: process {} (pid {}) failed: exit code 5; starting it again", v, pid)),
            std::string::npos)
      << log;
  // It never counted the others lost, nor served the rendezvous in their place.
  EXPECT_EQ(log.find(fmt::format("[{}] [fast warn] zmq runtime: worker {} (", v, observer)), std::string::npos) << log;
  EXPECT_EQ(log.find(fmt::format("process {} serves the rendezvous now", v)), std::string::npos) << log;
  if (v == 0) {
    EXPECT_NE(log.find("process 1 serves the rendezvous now"), std::string::npos) << log;
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << log;

  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 3) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({v})) << s.dump();
  if (c.name == "allreduce") {
    const json& hashes = s["param_hash_per_worker"];
    ASSERT_EQ(hashes.size(), 3u) << s.dump();
    EXPECT_EQ(hashes[1], hashes[0]) << s.dump();
    EXPECT_EQ(hashes[2], hashes[0]) << s.dump();
  }
  if (!HasFailure()) fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Strategies, FrozenProcess,
                         ::testing::Values(Case{"allreduce", "--strategy allreduce --elastic", 2,
                                                "[0] [fast warn] elastic: worker 2 joined at"},
                                           Case{"allreduce_process_0", "--strategy allreduce --elastic", 0,
                                                "[1] [fast warn] elastic: worker 0 joined at"},
                                           // The new process's own line: it trains.
                                           Case{"adpsgd", "--strategy adpsgd", 2,
                                                "[2] [fast warn] worker 2 rejoined the run at step"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Frozen until the others ended: nobody answers its question, and it leaves without a summary of its
// own (the others' stays as they wrote it).
TEST(FrozenProcessAlone, ItLeavesWhenNobodyAnswersAndWritesNothingOverTheOthersSummary) {
  const fs::path dir = fast::testing::test_dir("fast_frozen_process", "alone");
  Launched l = launch_zmq(dir, "-n 3 --grace 200",
                          "--strategy allreduce --elastic" + kPeerTimeoutFlag + " --summary s.json" + kTrainShown +
                              "--batch 64 --epochs 2");
  const pid_t pid = worker_pid(l, 2);
  ASSERT_GT(pid, 0) << slurp(l.log);
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  Freeze freeze(pid);
  // Each process's last line: its metrics file; then the summary's, by the process that wrote it.
  const bool ended = fast::testing::file_contains_within(l.log, "[1] metrics:", 120 * kScale) &&
                     fast::testing::file_contains_within(l.log, "[0] summary:", 120 * kScale);
  const std::string summary = slurp(dir / "s.json");
  freeze.thaw();
  const int status = fast::testing::wait_or_kill_group(l, 120 * kScale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_TRUE(ended) << "the others did not end while process 2 was stopped; output:\n" << log;
  EXPECT_NE(log.find(kLeaves), std::string::npos) << log;
  EXPECT_NE(log.find("none of the 2 other processes answered"), std::string::npos) << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 5) << log;
  EXPECT_EQ(log.find("[2] final test accuracy"), std::string::npos) << log;
  EXPECT_EQ(slurp(dir / "s.json"), summary) << "process 2 wrote over the others' summary";
  const json s = json::parse(summary);
  EXPECT_EQ(s["live_workers"], 2) << s.dump();
  EXPECT_EQ(s["lost_workers"], json::array({2})) << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

// A process frozen within a peer timeout far longer than the operation time limit: the first
// process whose receive waits past --op-timeout (from the frozen one, or from a process that waits
// for it) ends with TimeoutError (exit code 4, "fast: timeout: recv ..."), not with the loss that
// its failure's echo brings back from another process ("peer lost: worker 0 failed: worker 2
// failed: recv ...", exit code 3).
TEST(FrozenProcessOpTimeout, TheProcessWhoseReceiveTimedOutEndsWithTimeoutError) {
  const fs::path dir = fast::testing::test_dir("fast_frozen_process", "op_timeout");
  const std::string op_timeout = std::to_string(3 * kScale);
  Launched l = launch_zmq(dir, "-n 3 --grace 60",
                          "--strategy allreduce --peer-timeout " + std::to_string(120 * kScale) + " --op-timeout " +
                              op_timeout + kTrainShown + "--batch 64 --epochs 2");
  const pid_t pid = worker_pid(l, 1);
  ASSERT_GT(pid, 0) << slurp(l.log);
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  Freeze freeze(pid);
  const std::regex timed_out(
      "\\[([0-2])\\] fast: timeout: recv from rank [0-2] to rank [0-2] .*did not complete "
      "within " +
      op_timeout + " s");
  const std::optional<std::string> rank = fast::testing::first_match(l.log, timed_out, 60 * kScale);
  freeze.thaw();
  const int status = fast::testing::wait_or_kill_group(l, 120 * kScale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_TRUE(rank) << "no process ended with the receive's TimeoutError; output:\n" << log;
  EXPECT_EQ(log.find("[" + *rank + "] fast: peer lost"), std::string::npos) << log;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
