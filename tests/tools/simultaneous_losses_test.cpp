// Two processes of an elastic allreduce run under `fast launch -n 4 --restart 2` SIGKILLed at once:
// launch starts both again together, and their two rejoins reach the rendezvous's server at the
// same time. It takes them back one after the other (docs/faults.md, "Restarts without a person"),
// so that each newcomer knows the other: both join at a step boundary, and SIGTERM to launch then
// stops the four at one step with equal parameters. A process killed again during its rejoin is
// replaced by its next start. A rank lost twice counts the steps of its three holders, and a summary
// writer that joined later counts the losses before its join. Every command runs in a process group
// of its own, bounded in time and killed as a group.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

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

// Paced so that the run outlasts the losses and joins; the tests stop it by a signal. An evaluation
// every 40 steps marks the run's progress in the log ("eval after step").
const std::string kElasticRun =
    "--strategy allreduce --elastic" + kPeerTimeoutFlag +
    " --summary s.json --model mlp --seed 11 --progress auto --eval-every 40 --batch 32 --epochs 20 "
    "--slowdown 4,4,4,4";

// The elastic losses and joins of a launch log, by rank, in order: the step the members went on from
// without the rank, and the step they admitted its new process at (the leading member's lines).
struct Changes {
  std::map<int, std::vector<std::int64_t>> lost, joined;
};
Changes membership_changes(const std::string& log) {
  Changes c;
  const std::regex lost_line("elastic: worker\\(s\\) ([0-9, ]+) lost; [0-9]+ workers go on from step ([0-9]+)");
  for (std::sregex_iterator it(log.begin(), log.end(), lost_line), end; it != end; ++it) {
    std::istringstream ranks(std::regex_replace((*it)[1].str(), std::regex(","), " "));
    for (int r; ranks >> r;) c.lost[r].push_back(std::stoll((*it)[2]));
  }
  const std::regex joined_line("elastic: worker ([0-9]+) joined at step ([0-9]+)");
  for (std::sregex_iterator it(log.begin(), log.end(), joined_line), end; it != end; ++it)
    c.joined[std::stoi((*it)[1])].push_back(std::stoll((*it)[2]));
  return c;
}

// The steps of a rank whose processes were lost at lost[k] and taken back at joined[k], the last
// one held to the end of `all` steps: the first process's steps up to its loss, then each later
// one's from its join to its loss, or to the end. -1 where the log lacks a loss or a join.
std::int64_t steps_of_holders(const std::vector<std::int64_t>& lost, const std::vector<std::int64_t>& joined,
                              std::int64_t all) {
  if (lost.empty() || lost.size() != joined.size()) return -1;
  std::int64_t steps = lost[0];
  for (std::size_t k = 1; k < lost.size(); ++k) steps += lost[k] - joined[k - 1];
  return steps + all - joined.back();
}

TEST(ZmqSimultaneousLosses, TwoProcessesKilledTogetherAreStartedAgainAndBothRejoin) {
  const fs::path dir = fast::testing::test_dir("fast_simultaneous_losses", "two");
  const int scale = fast::testing::kRunTimeScale;
  Launched l = launch_zmq(dir, "-n 4 --restart 2", kElasticRun);
  const pid_t first = worker_pid(l, 1);
  const pid_t second = worker_pid(l, 2);
  ASSERT_GT(first, 0) << slurp(l.log);
  ASSERT_GT(second, 0) << slurp(l.log);
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  ::kill(first, SIGKILL);
  ::kill(second, SIGKILL);
  const bool joined = fast::testing::file_contains_all_within(
      l.log, {"[0] [fast warn] elastic: worker 1 joined at step", "[0] [fast warn] elastic: worker 2 joined at step"},
      120 * scale, std::chrono::milliseconds(20));
  ::kill(l.pid, SIGTERM);
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_TRUE(joined) << "not both killed processes joined again within the time limit; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << log;
  // No process counted a newcomer lost: each knew the other.
  for (const int rank : {1, 2}) {
    std::smatch m;
    const std::regex newcomer("process " + std::to_string(rank) + " on host [^,]+, pid ([0-9]+) runs workers");
    ASSERT_TRUE(std::regex_search(log, m, newcomer)) << log;
    EXPECT_EQ(log.find("pid " + m[1].str() + ") lost"), std::string::npos) << log;
  }
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  json rejoined = s["rejoined_workers"];
  std::sort(rejoined.begin(), rejoined.end());
  EXPECT_EQ(rejoined, json::array({1, 2})) << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  ASSERT_EQ(hashes.size(), 4u) << s.dump();
  for (int w = 1; w < 4; ++w) EXPECT_EQ(hashes[w], hashes[0]) << "worker " << w << ": " << s.dump();
  // Workers 0 and 3 took every step; each rank taken back, the steps of its lost process (up to the
  // step the members went on from) and those of its new one (from its join), as the log says.
  const json& steps = s["steps_per_worker"];
  EXPECT_EQ(steps[3], steps[0]) << s.dump();
  Changes c = membership_changes(log);
  for (const int w : {1, 2})
    EXPECT_EQ(steps[w].get<std::int64_t>(), steps_of_holders(c.lost[w], c.joined[w], steps[0].get<std::int64_t>()))
        << "worker " << w << ": " << s.dump() << "\n"
        << log;
  if (!HasFailure()) fs::remove_all(dir);
}

// Process 2 SIGKILLed, started again by launch, and SIGKILLed again once its hello reached the
// rendezvous's server (before it took the rank back): the third start's hello replaces the second's,
// which the server would otherwise wait for, and refuse the third start (exit code 2, which makes
// launch start the whole group again from the beginning). It joins, and the run goes on.
TEST(ZmqSimultaneousLosses, AProcessKilledDuringItsRejoinIsReplacedByTheNextStart) {
  const fs::path dir = fast::testing::test_dir("fast_simultaneous_losses", "again");
  const int scale = fast::testing::kRunTimeScale;
  // A peer timeout far longer than a start of the process: both starts' hellos reach the server
  // while the first start is not yet counted lost, and wait there (a rank is taken back only once
  // it is lost).
  Launched l = launch_zmq(dir, "-n 4 --restart 2",
                          "--strategy allreduce --elastic --peer-timeout " + std::to_string(4 * kPeerTimeout) +
                              " --summary s.json" + kTrainShown + "--batch 32 --epochs 20 --slowdown 4,4,4,4");
  const pid_t pid = worker_pid(l, 2);
  ASSERT_GT(pid, 0) << slurp(l.log);
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  ::kill(pid, SIGKILL);
  // The second start's hello, seen by the server before the first start is counted lost.
  const std::optional<std::string> second =
      fast::testing::first_match(l.log, std::regex("zmq runtime: pid ([0-9]+) on \\S+ asks for rank 2"), 60 * scale);
  if (second) ::kill(std::stoi(*second), SIGKILL);
  const bool replaced = second && appears(l.log, "which pid " + *second + " on");
  const bool joined = replaced && fast::testing::file_contains_within(
                                      l.log, "[0] [fast warn] elastic: worker 2 joined at", 120 * scale);
  ::kill(l.pid, SIGTERM);
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_TRUE(second) << "the second start of process 2 did not ask for its rank; output:\n" << log;
  ASSERT_TRUE(replaced) << "the third start did not replace the second; output:\n" << log;
  ASSERT_TRUE(joined) << "the third start did not join; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << log;
  EXPECT_EQ(log.find("starting all 4 again"), std::string::npos) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  ASSERT_EQ(hashes.size(), 4u) << s.dump();
  for (int w = 1; w < 4; ++w) EXPECT_EQ(hashes[w], hashes[0]) << "worker " << w << ": " << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

// Every "[RANK] ... pid P listens on" of fast launch's log in order: one per start of the process.
std::vector<pid_t> started_pids(const fs::path& log, int rank) {
  const std::string text = slurp(log);
  const std::regex line("\\[" + std::to_string(rank) + "\\][^\\n]*pid ([0-9]+) listens on");
  std::vector<pid_t> pids;
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it)
    pids.push_back(static_cast<pid_t>(std::stol((*it)[1])));
  return pids;
}

// How often `text` occurs in `log`.
std::size_t occurrences(const fs::path& log, const std::string& text) {
  const std::string all = slurp(log);
  std::size_t n = 0;
  for (std::size_t at = all.find(text); at != std::string::npos; at = all.find(text, at + text.size())) ++n;
  return n;
}

// SIGKILLs the latest start of process `rank` once the run printed 3 more evaluations (so that it
// trained), and waits until the members admit its next start (launch --restart starts it).
// Returns what failed, or an empty string once the next start joined.
std::string kill_and_await_join(const Launched& l, int rank) {
  const int scale = fast::testing::kRunTimeScale;
  const std::string join = "elastic: worker " + std::to_string(rank) + " joined at step";
  const std::size_t joins = occurrences(l.log, join), lines = occurrences(l.log, "] eval after step ");
  if (!fast::testing::poll_until([&] { return occurrences(l.log, "] eval after step ") >= lines + 3; }, 30 * scale,
                                 std::chrono::milliseconds(20)))
    return "the run printed no 3 more evaluations before process " + std::to_string(rank) + "'s kill";
  const std::vector<pid_t> pids = started_pids(l.log, rank);
  // One start per loss of the rank so far, and the first.
  const std::size_t starts = 1 + occurrences(l.log, "elastic: worker " + std::to_string(rank) + " joined at step");
  if (pids.size() != starts)
    return "process " + std::to_string(rank) + " has " + std::to_string(pids.size()) + " starts in the log, expected " +
           std::to_string(starts);
  ::kill(pids.back(), SIGKILL);
  if (!fast::testing::poll_until([&] { return occurrences(l.log, join) > joins; }, 120 * scale,
                                 std::chrono::milliseconds(20)))
    return "the next start of process " + std::to_string(rank) + " did not join";
  return {};
}

// The summary of a run whose processes `victims` were SIGKILLed one after another, each once taken
// back (kill_and_await_join), then stopped by SIGTERM to launch: every worker live with equal
// parameters, and each victim's steps_per_worker those of its holders (steps_of_holders, from the
// log), the other ranks' every step. Returns the summary.
json expect_steps_of_every_holder(const fs::path& dir, const std::vector<int>& victims) {
  const int scale = fast::testing::kRunTimeScale;
  Launched l = launch_zmq(dir, "-n 4 --restart " + std::to_string(victims.size()), kElasticRun);
  const bool started = training_started(l);
  std::string failed;
  for (std::size_t k = 0; k < victims.size() && started && failed.empty(); ++k)
    failed = kill_and_await_join(l, victims[k]);
  ::kill(l.pid, SIGTERM);
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  EXPECT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  EXPECT_TRUE(started) << "the run did not start training; output:\n" << log;
  EXPECT_EQ(failed, "") << "output:\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << log;
  if (!fs::exists(dir / "s.json")) {
    ADD_FAILURE() << "no summary; output:\n" << log;
    return {};
  }
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  const json& steps = s["steps_per_worker"];
  if (hashes.size() != 4u || steps.size() != 4u) {
    ADD_FAILURE() << s.dump();
    return s;
  }
  for (int w = 1; w < 4; ++w) EXPECT_EQ(hashes[w], hashes[0]) << "worker " << w << ": " << s.dump();
  const int steady = [&] {  // a rank never lost: it took every step
    for (int w = 0; w < 4; ++w)
      if (std::find(victims.begin(), victims.end(), w) == victims.end()) return w;
    return 0;
  }();
  const std::int64_t all = steps[steady].get<std::int64_t>();
  Changes c = membership_changes(log);
  for (int w = 0; w < 4; ++w)
    if (std::find(victims.begin(), victims.end(), w) == victims.end())
      EXPECT_EQ(steps[w].get<std::int64_t>(), all) << "worker " << w << ": " << s.dump();
    else
      EXPECT_EQ(steps[w].get<std::int64_t>(), steps_of_holders(c.lost[w], c.joined[w], all))
          << "worker " << w << ": " << s.dump() << "\n"
          << log;
  return s;
}

// Process 2 SIGKILLed, started again by launch and taken back, SIGKILLed again once it trained, and
// taken back by its third start: worker 2's steps in the summary are its first holder's (up to the
// first loss), its second holder's (from its join to the second loss) and its third's (from its
// join to the end), each step as the first member's log says; the rank is listed once among the
// rejoined workers.
TEST(ZmqSimultaneousLosses, ARankLostTwiceCountsTheStepsOfItsThreeHolders) {
  const fs::path dir = fast::testing::test_dir("fast_simultaneous_losses", "twice");
  const json s = expect_steps_of_every_holder(dir, {2, 2});
  EXPECT_EQ(s.value("rejoined_workers", json()), json::array({2})) << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

// Process 2 lost and taken back, then process 0, which writes the summary: its new process, which
// joined after worker 2's loss, reports worker 2's first holder's steps as the members present from
// the start saw them (and its own rank's, lost before it came), not from step 0.
TEST(ZmqSimultaneousLosses, TheSummaryOfAWriterThatJoinedLaterCountsTheLossesBeforeIt) {
  const fs::path dir = fast::testing::test_dir("fast_simultaneous_losses", "later_writer");
  const json s = expect_steps_of_every_holder(dir, {2, 0});
  json rejoined = s.value("rejoined_workers", json::array());
  std::sort(rejoined.begin(), rejoined.end());
  EXPECT_EQ(rejoined, json::array({0, 2})) << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
