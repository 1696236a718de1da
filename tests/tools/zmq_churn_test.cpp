// Churn and restarts under `fast launch -n 4 -- fast train --runtime zmq`: a worker of an
// asynchronous run killed at 30% of the run and started again rejoins, and the run ends with 4 live
// workers; `fast launch --restart` starts it again by itself, process 0 included (the batch budget
// and a ps shard move on); a synchronous run is started again as a group and resumes from its
// checkpoint; a process that claims a live rank is refused. Each test bounds its time and kills
// what it started, by pid.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <regex>
#include <sstream>
#include <string_view>
#include <thread>

#include "common/metrics_records.hpp"
#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"

#include "zmq_cli_common.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;
using fast::testing::slurp;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

using namespace fast::testing::zmq_cli;  // NOLINT(google-build-using-namespace): the shared helpers

// The percentage of worker 0's last progress line ("[0] epoch E | step S/T (P%)"), or -1.
int progress_percent(const std::string& log) {
  static const std::regex line("\\[0\\] epoch [0-9]+ \\| step [0-9]+/[0-9]+ \\(([0-9]+)%\\)");
  int percent = -1;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) percent = std::stoi((*it)[1]);
  return percent;
}

// adpsgd (the run), acid, easgd, gosgd and ps in mode ssp: a rejoining worker takes a live
// neighbour's model (acid: as x and x~), the centre (easgd), a live peer's replica with mass 1
// (gosgd) or the servers' shards, with the push count the servers give it (ps; worker 0 serves).
class ZmqChurn : public ::testing::TestWithParam<std::string> {};

TEST_P(ZmqChurn, KilledWorkerStartedAgainRejoinsAndTheRunEndsWithFourLiveWorkers) {
  const std::string strategy = GetParam();
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "churn_" + strategy.substr(0, strategy.find(' ')));
  // 3 epochs of mlp; every worker paced (--slowdown) so that the run outlasts the kill, the loss's
  // detection and the new process's start-up by far (the restart comes before 90% of the run).
  const std::string train = kFast + " train --runtime zmq" + kPeerTimeoutFlag + " --summary s.json --metrics m.jsonl" +
                            kTrainShown + "--strategy " + strategy + " --batch 64 --epochs 3 --slowdown 6,6,6,6";
  const int scale = fast::testing::kRunTimeScale;
  Launched l = fast::testing::spawn_in_group(dir,
                                             kFast + " launch -n 4 --grace " + std::to_string(200 * scale) +
                                                 " --timeout " + std::to_string(300 * scale) + " -- " + train,
                                             "launch.log");
  const int victim = 2;
  const pid_t pid = worker_pid(l, victim);
  ASSERT_GT(pid, 0) << slurp(l.log);
  const fast::testing::RemovesSocketFiles killed{pid};
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  const auto started = clock_type::now();
  while (progress_percent(slurp(l.log)) < 30 && clock_type::now() - started < std::chrono::seconds(200))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(progress_percent(slurp(l.log)), 30) << slurp(l.log);
  const std::vector<std::string> env = environment_of(pid);
  ASSERT_FALSE(env.empty());
  kill(pid, SIGKILL);
  // Started again once the survivors count it lost (a process that claims a live rank is refused):
  // worker 0's metrics record the loss after the peer timeout.
  const auto killed_at = clock_type::now();
  while (slurp(dir / "m.rank0.jsonl").find("\"change\":\"lost\"") == std::string::npos &&
         clock_type::now() - killed_at < std::chrono::seconds(60 * scale))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int percent_at_restart = progress_percent(slurp(l.log));
  std::string command = "env -i";
  for (const std::string& e : env) command += " " + shell_quoted(e);
  Launched again = fast::testing::spawn_in_group(dir, command + " " + train, "rejoin.log");

  const int launch_status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const int again_status = fast::testing::wait_or_kill_group(again, 60 * scale);
  const std::string log = slurp(l.log) + "\n--- the process started again:\n" + slurp(again.log);
  ASSERT_NE(launch_status, -1) << "fast launch did not end; output:\n" << log;
  ASSERT_NE(again_status, -1) << "the process started again did not end; output:\n" << log;
  EXPECT_LT(percent_at_restart, 90) << "the run was nearly over when the process came back; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(again_status) && WEXITSTATUS(again_status) == 0) << log;
  EXPECT_NE(slurp(again.log).find("rejoined the run at step"), std::string::npos) << log;
  if (strategy.starts_with("ps")) {
    EXPECT_NE(
        slurp(l.log).find(
            "ps: server of shard 0: worker 2 joined (a new process, or the shard moved here); its pushes count from"),
        std::string::npos)
        << log;
  }
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({victim})) << s.dump();
  EXPECT_FALSE(s.contains("lost_workers")) << s.dump();
  EXPECT_GE(s["final_accuracy"].get<double>(), 0.85) << s.dump() << "\n" << log;
  // The metrics of worker 0's process record the loss, then the rejoin.
  std::vector<std::string> changes;
  for (const json& r : fast::testing::records_of(dir / "m.rank0.jsonl", "membership"))
    if (r["worker"] == victim) changes.push_back(r["change"].get<std::string>());
  EXPECT_EQ(changes, (std::vector<std::string>{"lost", "joined"})) << slurp(dir / "m.rank0.jsonl");
  std::cout << strategy << ": restarted at " << percent_at_restart << "%, final accuracy " << s["final_accuracy"]
            << std::endl;
  if (!HasFailure()) fs::remove_all(dir);  // kept for a look otherwise
}

// adpsgd (pairwise gossip) and ps ssp (a rejoining worker's pushes counted by the servers) in every
// `make test`; the other gossip strategies labelled long (`make test-all`).
INSTANTIATE_TEST_SUITE_P(Strategies, ZmqChurn, ::testing::Values("adpsgd", "ps --mode ssp"));
INSTANTIATE_TEST_SUITE_P(LongStrategies, ZmqChurn, ::testing::Values("acid", "easgd", "gosgd"));

// A run of `strategy` (4 processes) under `fast launch --restart 2` (mlp, 3 epochs, every worker
// paced so that the run outlasts the kill and the restart), `outputs` its --summary and --metrics
// flags, whose process `victim` the test SIGKILLs at 30% of the run; then launch's end.
struct RestartedRun {
  pid_t killed = -1;         // the process killed
  int percent_at_kill = -1;  // worker 0's last progress percentage before the kill
  int status = -1;           // launch's wait status; -1: it did not end within its bound
  std::string log;           // launch's output
};

void kill_under_restart(const fs::path& dir, const std::string& outputs, int victim, RestartedRun& run,
                        const std::string& strategy = "adpsgd") {
  const int scale = fast::testing::kRunTimeScale;
  const std::string train = kFast + " train --runtime zmq" + kPeerTimeoutFlag + outputs + kTrainShown + "--strategy " +
                            strategy + " --batch 64 --epochs 3 --slowdown 6,6,6,6";
  Launched l = fast::testing::spawn_in_group(
      dir, kFast + " launch -n 4 --restart 2 --timeout " + std::to_string(300 * scale) + " -- " + train, "launch.log");
  run.killed = worker_pid(l, victim);
  ASSERT_GT(run.killed, 0) << slurp(l.log);
  const fast::testing::RemovesSocketFiles killed{run.killed};
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  ASSERT_TRUE(fast::testing::poll_until([&] { return progress_percent(slurp(l.log)) >= 30; }, 200)) << slurp(l.log);
  run.percent_at_kill = progress_percent(slurp(l.log));
  kill(run.killed, SIGKILL);
  run.status = fast::testing::wait_or_kill_group(l, 240 * scale);
  run.log = slurp(l.log);
}

// fast launch --restart (docs/launch.md, "Restarts"): worker 2 of an adpsgd run, SIGKILLed by the
// test at 30% of the run, is started again by launch itself with its rank and environment; it
// rejoins, and launch ends with the run's exit code 0 and 4 live workers.
TEST(ZmqRestart, AKilledWorkerOfAnAsynchronousRunIsStartedAgainAndRejoins) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "restart_async");
  RestartedRun run;
  ASSERT_NO_FATAL_FAILURE(kill_under_restart(dir, " --summary s.json", 2, run));
  const int status = run.status;
  const std::string& log = run.log;
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  EXPECT_NE(log.find("fast launch: process 2 (pid " + std::to_string(run.killed) +
                     ") failed: killed by signal SIGKILL; starting it again with its rank and environment "
                     "(--restart: 1 of 2 restarts spent, 1 left)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("rejoined the run at step"), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({2})) << s.dump();
  EXPECT_GE(s["final_accuracy"].get<double>(), 0.85) << s.dump() << "\n" << log;
  if (!HasFailure()) fs::remove_all(dir);
}

// Process 0 of an adpsgd run (the rendezvous and the shared batch budget), SIGKILLed by the test at
// 30% of the run: process 1 serves the rendezvous and worker 1 holds the budget from the count the
// survivors saw claimed; launch starts process 0 again, which takes rank 0 back through process 1,
// reads the budget's count from worker 1 and trains on. The run ends with 4 live workers, every
// batch of the budget trained about once, the accuracy of a run without the loss, and launch's 0.
TEST(ZmqRestart, ProcessZeroOfAnAsynchronousRunIsLostAndStartedAgainAndTheBudgetGoesOn) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "restart_async_rank0");
  RestartedRun run;
  ASSERT_NO_FATAL_FAILURE(kill_under_restart(dir, " --summary s.json --metrics m.jsonl", 0, run));
  const int status = run.status;
  const std::string& log = run.log;
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  EXPECT_NE(log.find("process 1 serves the rendezvous now"), std::string::npos) << log;
  // Process 1 may end its work before the new process 0 ends its final evaluation: the address is not
  // taken over again at the end of the run.
  EXPECT_EQ(log.find("process 0 serves the rendezvous now"), std::string::npos) << log;
  EXPECT_NE(log.find("worker 0, which held the shared batch budget, was lost; worker 1 holds it from now on"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("held by worker 1)"), std::string::npos) << log;  // the new process 0's rejoin line
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({0})) << s.dump();
  // The budget is 702 steps x 4 workers. What was trained: the survivors' steps, the new process's
  // from its rejoin step S on (worker 0's entry counts from S), and the lost process's, about the
  // percentage of the run at the kill (the workers are paced alike). Had the survivors claimed the
  // budget again from 0, the sum would be a fifth more or above; had each raised the new host's
  // count by what it saw, half of it or less.
  std::smatch rejoined;
  ASSERT_TRUE(std::regex_search(log, rejoined, std::regex("worker 0 rejoined the run at step ([0-9]+) of"))) << log;
  const auto done = s["steps_per_worker"].get<std::vector<std::int64_t>>();
  const std::int64_t lost_process = 702 * run.percent_at_kill / 100;
  const std::int64_t trained =
      std::accumulate(done.begin(), done.end(), std::int64_t{0}) - std::stoll(rejoined[1].str()) + lost_process;
  EXPECT_LE(std::abs(trained - 702 * 4), 702 * 4 / 20)
      << "rejoined at step " << rejoined[1] << ", killed at " << run.percent_at_kill << "%; " << s.dump();
  EXPECT_GE(s["final_accuracy"].get<double>(), 0.85) << s.dump() << "\n" << log;
  // The budget's new host leads: its process's metrics record the loss and the rejoin.
  EXPECT_NE(slurp(dir / "m.rank1.jsonl").find("\"change\":\"lost\""), std::string::npos);
  EXPECT_NE(slurp(dir / "m.rank1.jsonl").find("\"change\":\"joined\""), std::string::npos);
  if (!HasFailure()) fs::remove_all(dir);
}

// Worker 1 of an adpsgd run, SIGKILLed by the test at 30% of the run, is started again and rejoins;
// then process 0 (the rendezvous and the batch budget) is SIGKILLed. The budget moves to worker 2:
// worker 1 was lost once, and its new process knows it from the rendezvous (before it did not, took
// the budget itself as worker 0's successor, and trained a budget of its own beside worker 2's).
// The new process 1 serves the rendezvous, process 0 rejoins through it, and the run ends with 4
// live workers, every batch of the budget trained about once, and launch's 0.
TEST(ZmqRestart, ANewProcessKnowsTheLossesBeforeItCameAndTheBudgetMovesPastIt) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "restart_twice");
  const int scale = fast::testing::kRunTimeScale;
  const std::string train = kFast + " train --runtime zmq" + kPeerTimeoutFlag + " --summary s.json" + kTrainShown +
                            "--strategy adpsgd --batch 64 --epochs 3 --slowdown 6,6,6,6";
  Launched l = fast::testing::spawn_in_group(
      dir, kFast + " launch -n 4 --restart 2 --timeout " + std::to_string(300 * scale) + " -- " + train, "launch.log");
  const pid_t first = worker_pid(l, 1), zero = worker_pid(l, 0);
  ASSERT_GT(first, 0) << slurp(l.log);
  ASSERT_GT(zero, 0) << slurp(l.log);
  const fast::testing::RemovesSocketFiles first_files{first}, zero_files{zero};
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  ASSERT_TRUE(fast::testing::poll_until([&] { return progress_percent(slurp(l.log)) >= 30; }, 200)) << slurp(l.log);
  const int first_percent = progress_percent(slurp(l.log));
  kill(first, SIGKILL);
  ASSERT_TRUE(fast::testing::poll_until(
      [&] { return slurp(l.log).find("worker 1 rejoined the run at step") != std::string::npos; }, 200))
      << slurp(l.log);
  const int rejoined_percent = progress_percent(slurp(l.log));
  ASSERT_TRUE(fast::testing::poll_until([&] { return progress_percent(slurp(l.log)) >= rejoined_percent + 10; }, 200))
      << slurp(l.log);
  const int zero_percent = progress_percent(slurp(l.log));
  kill(zero, SIGKILL);
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  EXPECT_NE(log.find("worker 0, which held the shared batch budget, was lost; worker 2 holds it from now on"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("worker 1 holds it from now on"), std::string::npos) << log;
  EXPECT_NE(log.find("process 1 serves the rendezvous now"), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({1, 0})) << s.dump();
  // As in the test above, with two new processes: each one's entry counts from its rejoin step, and
  // each lost process trained about the percentage of the run at its kill.
  std::smatch one, nought;
  ASSERT_TRUE(std::regex_search(log, one, std::regex("worker 1 rejoined the run at step ([0-9]+) of"))) << log;
  ASSERT_TRUE(std::regex_search(log, nought, std::regex("worker 0 rejoined the run at step ([0-9]+) of"))) << log;
  const auto done = s["steps_per_worker"].get<std::vector<std::int64_t>>();
  const std::int64_t trained = std::accumulate(done.begin(), done.end(), std::int64_t{0}) - std::stoll(one[1].str()) -
                               std::stoll(nought[1].str()) + 702 * first_percent / 100 + 702 * zero_percent / 100;
  EXPECT_LE(std::abs(trained - 702 * 4), 702 * 4 / 20)
      << "killed at " << first_percent << "% and " << zero_percent << "%; " << s.dump();
  EXPECT_GE(s["final_accuracy"].get<double>(), 0.85) << s.dump() << "\n" << log;
  if (!HasFailure()) fs::remove_all(dir);
}

// Process 0 of a ps async run serves the one shard: SIGKILLed by the test at 30% of the run, worker 1
// serves the shard from its last pull, the others join it, and the new process 0 takes rank 0 back
// without a server (docs/faults.md, "A lost ps server"). The run ends with 4 live workers, the
// accuracy of a run without the loss, and launch's 0.
TEST(ZmqRestart, ProcessZeroOfAPsAsyncRunIsLostAndItsShardMovesToWorkerOne) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "restart_ps_rank0");
  RestartedRun run;
  ASSERT_NO_FATAL_FAILURE(kill_under_restart(dir, " --summary s.json", 0, run, "ps --mode async"));
  const std::string& log = run.log;
  ASSERT_NE(run.status, -1) << "fast launch did not end; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << log;
  EXPECT_NE(log.find("ps: the server of shard 0 (on worker 0) was lost; worker 1 serves it from here on"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("ps: server of shard 0: worker 0 joined"), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({0})) << s.dump();
  EXPECT_GE(s["final_accuracy"].get<double>(), 0.85) << s.dump() << "\n" << log;
  if (!HasFailure()) fs::remove_all(dir);
}

// A synchronous run cannot take a process back: worker 1 of an allreduce run, SIGKILLed by the test
// once the checkpoint of step 50 is complete, is started again alone (the one restart spent), its
// survivor ends with a lost peer (exit 3), and launch starts the whole group again (that restart
// continued, nothing more spent). With --checkpoint-dir and --resume-if-present the new start
// resumes from the newest complete checkpoint and ends with exit 0 and the param_hash of the same
// run straight under threads (allreduce resumes bit for bit).
TEST(ZmqRestart, ASynchronousRunIsStartedAgainAsAGroupAndResumesFromItsCheckpoint) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "restart_sync");
  fs::remove_all(dir / "ck");
  const int scale = fast::testing::kRunTimeScale;
  const std::string args = " --strategy allreduce --batch 32 --steps 400 --slowdown 3,3 ";
  Launched l = fast::testing::spawn_in_group(dir,
                                             kFast + " launch -n 2 --restart 1 --timeout " +
                                                 std::to_string(300 * scale) + " -- " + kFast + " train --runtime zmq" +
                                                 kPeerTimeoutFlag + " --summary s.json" + kTrainShown + args +
                                                 "--checkpoint-dir ck --checkpoint-every 50 --resume-if-present",
                                             "launch.log");
  const pid_t pid = worker_pid(l, 1);
  ASSERT_GT(pid, 0) << slurp(l.log);
  const fast::testing::RemovesSocketFiles killed{pid};
  ASSERT_TRUE(fast::testing::poll_until([&] { return fs::exists(dir / "ck/step-000000000050/manifest.json"); },
                                        fast::testing::kStartBound))
      << slurp(l.log);
  kill(pid, SIGKILL);
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  EXPECT_NE(log.find("starting it again with its rank and environment (--restart: 1 of 1 restarts spent, 0 left)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("failed: exit code 3; stopping the "), std::string::npos) << log;
  EXPECT_NE(log.find("started the 2 processes again"), std::string::npos) << log;
  EXPECT_NE(log.find("resume: continuing from"), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json z = json::parse(slurp(dir / "s.json"));
  ASSERT_TRUE(z["resumed_from_step"].is_number()) << z.dump();
  const auto from = z["resumed_from_step"].get<std::int64_t>();
  EXPECT_GE(from, 50) << z.dump();
  EXPECT_EQ(from % 50, 0) << z.dump();
  EXPECT_EQ(z["steps"], 400) << z.dump();
  const auto straight =
      fast::testing::run_fast_in(dir, "train --runtime threads --workers 2 --summary t.json" + kTrain + args);
  ASSERT_EQ(straight.code, exit_code::ok) << straight.output;
  EXPECT_EQ(z["param_hash"], json::parse(slurp(dir / "t.json"))["param_hash"]) << log;
  if (!HasFailure()) fs::remove_all(dir);
}

// A process that claims the rank of a live worker is refused (exit 2, naming the rank) once the
// rank stayed live for the peer timeout + 2 s; the run goes on with its 4 workers untouched. The run
// must outlast the refusal (about 4 s after the claim, which comes 2-3 s after training started)
// by far: several times the refusal's delay (a shorter run let the refusal come late in the run,
// later still under load: the claim waits for the extra process to start);
// the --slowdown factor barely moves an mlp step, whose time is not compute. The progress is read
// when the refusal is printed, not when the refused process has exited, seconds later.
TEST(ZmqChurnRefusal, ProcessClaimingALiveRankIsRefused) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "churn_refused");
  const int scale = fast::testing::kRunTimeScale;  // more steps under TSan, and the bounds to match
  // Long enough that the refusal (peer timeout + 2 s after the hello) comes well before the end.
  const std::string steps = std::to_string(960 * scale);
  const std::string train = kFast + " train --runtime zmq" + kPeerTimeoutFlag + " --summary s.json" + kTrainShown +
                            "--strategy adpsgd --batch 64 --slowdown 12,12,12,12 --steps " + steps;
  Launched l = fast::testing::spawn_in_group(dir,
                                             kFast + " launch -n 4 --grace " + std::to_string(200 * scale) +
                                                 " --timeout " + std::to_string(300 * scale) + " -- " + train,
                                             "launch.log");
  const pid_t pid = worker_pid(l, 1);
  ASSERT_GT(pid, 0) << slurp(l.log);
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  std::string command = "env -i";
  for (const std::string& e : environment_of(pid)) command.append(" ").append(shell_quoted(e));
  Launched intruder = fast::testing::spawn_in_group(dir, command + " " + train, "intruder.log");
  // The run's progress when the refusal is printed (the process takes seconds more to exit).
  const int percent_at_refusal = appears(intruder.log, "refused this process") ? progress_percent(slurp(l.log)) : -1;
  const int intruder_status = fast::testing::wait_or_kill_group(intruder, 60 * scale);
  const int launch_status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log) + "\n--- the extra process:\n" + slurp(intruder.log);
  ASSERT_NE(intruder_status, -1) << log;
  EXPECT_LT(percent_at_refusal, 90) << "the run was nearly over when the extra process was refused; output:\n" << log;
  std::cout << "refused at " << percent_at_refusal << "% of the run" << std::endl;
  EXPECT_TRUE(WIFEXITED(intruder_status) && WEXITSTATUS(intruder_status) == exit_code::bad_input) << log;
  EXPECT_NE(slurp(intruder.log).find("rank 1 is live"), std::string::npos) << log;
  ASSERT_NE(launch_status, -1) << log;
  EXPECT_TRUE(WIFEXITED(launch_status) && WEXITSTATUS(launch_status) == 0) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array()) << s.dump();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
