// A run that grows (`fast train --elastic --max-workers N`, docs/faults.md "Growing a run"): under
// `fast launch -n 2` with --max-workers 4, ranks 2 and 3 start vacant; a process started during
// the run with FAST_RESTARTED=1 and the same command takes rank 2 at a step boundary; SIGTERM to
// launch then stops every member at one step, and the run ends with 3 workers whose parameters
// are equal bit for bit, rank 3 still vacant (not lost), and a `membership` record of the join
// (allreduce, ps in mode sync, dpsgd, local-sgd). Two processes started together take ranks 2 and 3.
// The settings a run that grows needs are refused, naming them, before any data is read. Every
// command runs in a process group of its own, bounded in time and killed as a group.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/metrics_records.hpp"
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

// A run of `fast launch -n 2` that may grow to 4 workers, paced so that it outlasts the joins (the
// tests stop it by a signal), once it trains; and the command of a process that joins it: the
// rendezvous and keys of the run, no rank of its own (it takes the lowest vacant one).
struct GrowingRun {
  Launched launch;
  std::string train;   // the members' command, which a joiner runs too
  std::string joiner;  // the joiner's environment, to put before `train`
};
// extra: more `fast train` flags. Fails the test (ASSERT) when the run does not start training.
void start_growing_run(const fs::path& dir, const std::string& strategy, const std::string& extra, GrowingRun& run) {
  const std::string flags = "--elastic --max-workers 4" + kPeerTimeoutFlag + " --summary s.json " + extra +
                            kTrainShown + "--strategy " + strategy + " --batch 32 --epochs 20 --slowdown 6,6,6,6";
  run.train = kFast + " train --runtime zmq " + flags;
  run.launch = launch_zmq(dir, "-n 2 --grace 200", flags);
  const pid_t pid = worker_pid(run.launch, 0);
  ASSERT_GT(pid, 0) << slurp(run.launch.log);
  ASSERT_TRUE(training_started(run.launch)) << slurp(run.launch.log);
  run.joiner = "env -i FAST_RESTARTED=1";
  for (const std::string& e : environment_of(pid))
    if (!e.starts_with("FAST_PROCESS_RANK=")) run.joiner += " " + shell_quoted(e);
}

struct Growth {
  std::string name;
  std::string strategy;
  bool equal_replicas = true;  // dpsgd's and local-sgd's replicas differ by design
};
void PrintTo(const Growth& g, std::ostream* os) { *os << g.name; }

class ZmqElasticGrowth : public ::testing::TestWithParam<Growth> {};

TEST_P(ZmqElasticGrowth, AProcessStartedDuringTheRunTakesAVacantRankAndTheRunEndsWithIt) {
  const Growth& g = GetParam();
  const fs::path dir = fast::testing::test_dir("fast_elastic_growth", "join_" + g.name);
  const int scale = fast::testing::kRunTimeScale;
  GrowingRun run;
  start_growing_run(dir, g.strategy, "--metrics m.jsonl", run);
  if (HasFatalFailure()) return;
  const Launched& l = run.launch;
  Launched joiner = fast::testing::spawn_in_group(dir, run.joiner + " " + run.train, "joiner.log");
  const bool joined = fast::testing::file_contains_within(l.log, "elastic: worker 2 joined at step", 120 * scale,
                                                          std::chrono::milliseconds(20));
  ::kill(l.pid, SIGTERM);  // launch passes it on; the members agree on a last step, the new one included

  const int launch_status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const int joiner_status = fast::testing::wait_or_kill_group(joiner, 60 * scale);
  const std::string log = slurp(l.log) + "\n--- the process that joined:\n" + slurp(joiner.log);
  ASSERT_NE(launch_status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_NE(joiner_status, -1) << "the process that joined did not end; output:\n" << log;
  ASSERT_TRUE(joined) << "no join within the time limit; output:\n" << log;
  // Interrupted by SIGTERM: every process exits with 128 + 15, the one that joined too.
  EXPECT_TRUE(WIFEXITED(launch_status) && WEXITSTATUS(launch_status) == 128 + SIGTERM) << log;
  EXPECT_TRUE(WIFEXITED(joiner_status) && WEXITSTATUS(joiner_status) == 128 + SIGTERM) << log;
  EXPECT_NE(log.find("elastic: the run starts with 2 of 4 workers; ranks 2, 3 join when processes take them"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("zmq runtime: worker 2 joined the run"), std::string::npos) << log;

  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["interrupted"], true) << s.dump();
  EXPECT_EQ(s["workers"], 4) << s.dump();
  EXPECT_EQ(s["live_workers"], 3) << s.dump();
  EXPECT_EQ(s["vacant_workers"], json::array({3})) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({2})) << s.dump();
  EXPECT_FALSE(s.contains("lost_workers")) << "a vacant rank is not a lost worker: " << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  ASSERT_EQ(hashes.size(), 4u) << s.dump();
  if (g.equal_replicas) {
    EXPECT_EQ(hashes[1], hashes[0]) << s.dump();
    EXPECT_EQ(hashes[2], hashes[0]) << "the worker that joined ended with other parameters: " << s.dump();
  }
  EXPECT_FALSE(hashes[2].is_null()) << s.dump();
  EXPECT_TRUE(hashes[3].is_null()) << s.dump();
  // The members stopped at one step; the new one took the steps from its join to there.
  const json& steps = s["steps_per_worker"];
  EXPECT_EQ(steps[1], steps[0]) << s.dump();
  EXPECT_EQ(steps[3], 0) << s.dump();
  // The join, recorded once by the first member, at a step boundary before the end.
  const std::vector<json> records = fast::testing::records_of(dir / "m.rank0.jsonl", "membership");
  ASSERT_EQ(records.size(), 1u) << slurp(dir / "m.rank0.jsonl");
  EXPECT_EQ(records[0]["change"], "joined");
  EXPECT_EQ(records[0]["worker"], 2);
  EXPECT_EQ(records[0]["workers"], 3);
  EXPECT_EQ(records[0]["detail"], "took a vacant rank");
  EXPECT_GT(records[0]["step"].get<std::int64_t>(), 0);
  EXPECT_LE(records[0]["step"].get<std::int64_t>(), steps[0].get<std::int64_t>());
  EXPECT_EQ(steps[2].get<std::int64_t>(), steps[0].get<std::int64_t>() - records[0]["step"].get<std::int64_t>())
      << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

// A process started with other settings than the run's (another batch: it would call its collectives
// at other steps) is refused at its hello, with exit code 2 naming the setting, and the run goes on
// without it (it was admitted, and a member or the whole run failed).
TEST(ZmqElasticGrowthRefusal, AProcessOfOtherSettingsIsRefusedAndTheRunGoesOn) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_growth", "other_settings");
  const int scale = fast::testing::kRunTimeScale;
  GrowingRun run;
  start_growing_run(dir, "allreduce", "", run);
  if (HasFatalFailure()) return;
  const Launched& l = run.launch;
  Launched joiner = fast::testing::spawn_in_group(dir, run.joiner + " " + run.train + " --batch 16", "joiner.log");
  const int joiner_status = fast::testing::wait_or_kill_group(joiner, 60 * scale);
  ::kill(l.pid, SIGTERM);
  const int launch_status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log) + "\n--- the process refused:\n" + slurp(joiner.log);
  ASSERT_NE(joiner_status, -1) << "the process of other settings was not refused; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(joiner_status) && WEXITSTATUS(joiner_status) == 2) << log;
  EXPECT_NE(slurp(joiner.log)
                .find("the run refused this process: it was started with other settings than the run: "
                      "batch = 16 in that process, 32 in the run"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("joined at step"), std::string::npos) << log;
  ASSERT_NE(launch_status, -1) << "fast launch did not end; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(launch_status) && WEXITSTATUS(launch_status) == 128 + SIGTERM) << log;
  if (!HasFailure()) fs::remove_all(dir);
}

// ps places its servers again for the grown group; dpsgd builds its ring and weights for 3; local-sgd
// admits at a period's boundary.
INSTANTIATE_TEST_SUITE_P(Strategies, ZmqElasticGrowth,
                         ::testing::Values(Growth{"allreduce", "allreduce"}, Growth{"ps", "ps --mode sync --servers 2"},
                                           Growth{"dpsgd", "dpsgd", false},
                                           Growth{"local_sgd", "local-sgd --period 4", false}),
                         [](const ::testing::TestParamInfo<Growth>& info) { return info.param.name; });
// With a codec: allreduce's and local-sgd's all-reduces among the members, local-sgd's first step
// averaging the initial replicas of the 2 starting members (ranks 2 and 3 vacant). Labelled long.
INSTANTIATE_TEST_SUITE_P(LongCodecs, ZmqElasticGrowth,
                         ::testing::Values(Growth{"allreduce_int8", "allreduce --compress int8"},
                                           Growth{"local_sgd_int8", "local-sgd --period 4 --compress int8", false}),
                         [](const ::testing::TestParamInfo<Growth>& info) { return info.param.name; });

// Two processes started at once during the run: each takes a vacant rank of its own (2 and 3, in
// either order), both are admitted, and the run ends with 4 workers whose parameters are equal.
TEST(ZmqElasticGrowthTwice, TwoProcessesStartedTogetherTakeTheTwoVacantRanks) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_growth", "two");
  const int scale = fast::testing::kRunTimeScale;
  GrowingRun run;
  start_growing_run(dir, "allreduce", "", run);
  if (HasFatalFailure()) return;
  const Launched& l = run.launch;
  Launched first = fast::testing::spawn_in_group(dir, run.joiner + " " + run.train, "first.log");
  Launched second = fast::testing::spawn_in_group(dir, run.joiner + " " + run.train, "second.log");
  const bool joined = fast::testing::file_contains_all_within(
      l.log, {"elastic: worker 2 joined at step", "elastic: worker 3 joined at step"}, 120 * scale,
      std::chrono::milliseconds(20));
  ::kill(l.pid, SIGTERM);
  const int launch_status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const int first_status = fast::testing::wait_or_kill_group(first, 60 * scale);
  const int second_status = fast::testing::wait_or_kill_group(second, 60 * scale);
  const std::string log = slurp(l.log) + "\n--- the first new process:\n" + slurp(first.log) +
                          "\n--- the second new process:\n" + slurp(second.log);
  ASSERT_NE(launch_status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_NE(first_status, -1) << log;
  ASSERT_NE(second_status, -1) << log;
  ASSERT_TRUE(joined) << "not both joined within the time limit; output:\n" << log;
  for (const int status : {launch_status, first_status, second_status})
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_FALSE(s.contains("vacant_workers") && !s["vacant_workers"].empty()) << s.dump();
  json rejoined = s["rejoined_workers"];
  std::sort(rejoined.begin(), rejoined.end());
  EXPECT_EQ(rejoined, json::array({2, 3})) << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  ASSERT_EQ(hashes.size(), 4u) << s.dump();
  for (int w = 1; w < 4; ++w) EXPECT_EQ(hashes[w], hashes[0]) << "worker " << w << ": " << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

// SIGTERM to the run and to a process that is joining it, together: the members agree on a last
// step, write their checkpoint and summary, and end; the new process ends too, whether the stop
// came before its admission (it has nothing to save: "interrupted by SIGTERM before worker 2 joined
// the run") or after (it stops with the members). Nothing waits for anything that never comes: the
// members' end waits for every process, the new one's admission for the members.
TEST(ZmqElasticGrowthStop, AStopWhileAProcessJoinsEndsEveryProcess) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_growth", "stop");
  const int scale = fast::testing::kRunTimeScale;
  GrowingRun run;
  start_growing_run(dir, "allreduce", "--checkpoint-dir ck", run);
  if (HasFatalFailure()) return;
  const Launched& l = run.launch;
  Launched joiner = fast::testing::spawn_in_group(dir, run.joiner + " " + run.train, "joiner.log");
  const bool joining = fast::testing::file_contains_within(joiner.log, "rejoining the run under way", 60 * scale,
                                                           std::chrono::milliseconds(5));
  ::kill(l.pid, SIGTERM);
  ::kill(joiner.pid, SIGTERM);  // the shell exec'd env, which exec'd fast: the same process
  // Far below the operation time limit (600 s) that a wait for what never comes would last.
  const int launch_status = fast::testing::wait_or_kill_group(l, 60 * scale);
  const int joiner_status = fast::testing::wait_or_kill_group(joiner, 60 * scale);
  const std::string log = slurp(l.log) + "\n--- the process that joined:\n" + slurp(joiner.log);
  ASSERT_TRUE(joining) << log;
  ASSERT_NE(launch_status, -1) << "the members did not end; output:\n" << log;
  ASSERT_NE(joiner_status, -1) << "the process that joined did not end; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(launch_status) && WEXITSTATUS(launch_status) == 128 + SIGTERM) << log;
  EXPECT_TRUE(WIFEXITED(joiner_status) && WEXITSTATUS(joiner_status) == 128 + SIGTERM) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["interrupted"], true) << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  EXPECT_EQ(hashes[1], hashes[0]) << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

// Each refused before any data is read (exit code 2, --data-dir names a folder that does not exist).
TEST(ElasticGrowthSettings, RefusedWithAReasonBeforeAnyDataIsRead) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_growth", "refusals");
  const std::string zmq = "train --runtime zmq --world-size 2 --data-dir missing --model mlp ";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"train --runtime threads --workers 2 --elastic --max-workers 4 --data-dir missing",
       "max_workers: set to 4 with runtime 'threads', in which no process can join a run under way"},
      {zmq + "--max-workers 4", "max_workers: set to 4 without elastic; expected elastic = true"},
      {zmq + "--elastic --strategy adpsgd --max-workers 4",
       "max_workers: set to 4 with the asynchronous strategy 'adpsgd'"},
      {zmq + "--elastic --max-workers 1", "max_workers: expected at least the 2 workers the run starts with"},
      {zmq + "--elastic --workers-per-process 2 --max-workers 5",
       "max_workers: expected a multiple of workers_per_process (2"},
      {zmq + "--elastic --max-workers 4 --min-workers 3",
       "min_workers: expected at most the 2 workers the run starts with, got 3"},
      {zmq + "--elastic --max-workers 4 --checkpoint-dir ck --resume-if-present",
       "max_workers: set to 4 with resume_if_present; expected no resume"},
      {zmq + "--elastic --max-workers 258", "max_workers: expected at most 128 processes' workers (128"},
      {"train --runtime zmq --world-size 3 --data-dir missing --model mlp --elastic --max-workers 4 --strategy dpsgd "
       "--topology hypercube",
       "max_workers: the run starts with 3 of its 4 workers, and topology 'hypercube': a hypercube needs a power of "
       "two "
       "of workers (2, 4, 8, ...), got n = 3"}};
  for (const auto& [command, message] : cases) {
    const auto refused = fast::testing::run_fast_in(dir, command);
    EXPECT_EQ(refused.code, 2) << command << "\n" << refused.output;
    EXPECT_NE(refused.output.find(message), std::string::npos) << command << "\n" << refused.output;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
