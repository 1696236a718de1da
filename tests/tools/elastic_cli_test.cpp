// Elastic synchronous training (`fast train --elastic`, docs/faults.md "Elastic synchronous
// training"): a worker lost mid-run leaves the survivors training to the end of the run with fewer
// workers, every survivor's parameters equal bit for bit (param_hash_per_worker), a `membership`
// record naming the loss, the step the survivors went on from and their number, and a final
// accuracy within a point of the same run without the loss. Under `sim` the loss is a host failure
// of the cluster file (deterministic); under `zmq` a process of `fast launch -n 4` is SIGKILLed at
// 30% of the run. Every command runs in a process group of its own, bounded in time and killed as a
// group.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/lossy_cluster_file.hpp"
#include "common/metrics_records.hpp"
#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"
#include "common/test_dir.hpp"

namespace {

namespace fs = std::filesystem;
using fast::testing::dir_name;
using fast::testing::records_of;
using fast::testing::slurp;
using nlohmann::json;

const std::string kFast = std::string(FAST_TEST_BIN_DIR) + "/fast";
const std::string kTrain = " --model mlp --seed 11 --batch 32 --epochs 2 --eval-every 0 ";

std::vector<json> membership_records(const fs::path& metrics) { return records_of(metrics, "membership"); }

// What every elastic run that lost worker `victim` of 4 must show in its summary `s` and in the
// metrics file of its first member, `metrics`; `reference`: the summary of the run without the loss.
void expect_survivors_finished(const json& s, const json& reference, int victim, const fs::path& metrics) {
  EXPECT_EQ(s["lost_workers"], json::array({victim})) << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  ASSERT_EQ(hashes.size(), 4u) << s.dump();
  // Strategies whose replicas are identical (their consensus_distance is 0 by declaration, not
  // measured: allreduce, local-sgd) end with equal parameters; dpsgd's replicas differ by design.
  const bool identical = s["consensus_distance"].get<double>() == 0;
  for (int w = 0; w < 4; ++w) {
    if (w == victim) {
      EXPECT_TRUE(hashes[w].is_null()) << s.dump();
      continue;
    }
    if (identical) {
      EXPECT_EQ(hashes[w], hashes[victim == 0 ? 1 : 0])
          << "worker " << w << " ended with other parameters: " << s.dump();
    }
  }
  EXPECT_EQ(s["steps"], reference["steps"]) << "the survivors did not train to the end: " << s.dump();
  EXPECT_NEAR(s["final_accuracy"].get<double>(), reference["final_accuracy"].get<double>(), 0.01)
      << "with the loss " << s.dump() << "\nwithout " << reference.dump();
  const std::vector<json> records = membership_records(metrics);
  ASSERT_EQ(records.size(), 1u) << "metrics " << metrics;
  EXPECT_EQ(records[0]["change"], "lost");
  EXPECT_EQ(records[0]["worker"], victim);
  EXPECT_EQ(records[0]["workers"], 3);
  EXPECT_GT(records[0]["step"].get<std::int64_t>(), 0);
  EXPECT_FALSE(records[0]["detail"].get<std::string>().empty()) << records[0].dump();  // where it ran, why lost
}

#ifdef FAST_TEST_SIM

// lossy.toml, with host 2 turned off at `off` simulated seconds, or whole.toml (off <= 0).
fs::path cluster_file(const fs::path& dir, double off) {
  return fast::testing::lossy_cluster_file(dir, off > 0 ? "lossy.toml" : "whole.toml", off);
}

class SimElastic : public ::testing::TestWithParam<std::string> {};

TEST_P(SimElastic, SurvivorsOfAFailedHostFinishTheRun) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "sim_" + dir_name(GetParam()));
  const std::string args = " --runtime sim --workers 4 --strategy " + GetParam() + kTrain;
  const auto whole = fast::testing::run_fast_in(
      dir, "train" + args + "--summary whole.json --cluster " + cluster_file(dir, 0).string());
  ASSERT_EQ(whole.code, 0) << whole.output;
  // About a third of the way: the whole run takes about 50 simulated seconds.
  const auto lossy = fast::testing::run_fast_in(
      dir, "train" + args + "--elastic --summary s.json --metrics m.jsonl --cluster " + cluster_file(dir, 15).string());
  ASSERT_EQ(lossy.code, 0) << lossy.output;
  EXPECT_NE(lossy.output.find("elastic: worker(s) 2 lost; 3 workers go on from step"), std::string::npos)
      << lossy.output;
  expect_survivors_finished(json::parse(slurp(dir / "s.json")), json::parse(slurp(dir / "whole.json")), 2,
                            dir / "m.jsonl");
  EXPECT_EQ(membership_records(dir / "m.jsonl").at(0)["detail"], "host host-2: host host-2 turned off");
  fs::remove_all(dir);
}

// local-sgd, dpsgd and allreduce with a codec regroup as allreduce does (tests/strategy/elastic_test.cpp;
// with a codec, the zmq restart below too): labelled long. ps with a server on every worker: host
// 2's loss takes the server of shard 2 with it.
INSTANTIATE_TEST_SUITE_P(Strategies, SimElastic, ::testing::Values("allreduce", "ps --mode sync --servers 4"),
                         [](const auto& info) { return dir_name(info.param); });
INSTANTIATE_TEST_SUITE_P(LongStrategies, SimElastic,
                         ::testing::Values("local-sgd --period 4", "dpsgd", "allreduce --compress fp16"),
                         [](const auto& info) { return dir_name(info.param); });

// dpsgd on a hypercube of 4: the loss of host 2 leaves 3 workers, which no hypercube fits; the
// run ends with exit code 5 (exit_code::failed) and an error that names the loss and the topology,
// not with the topology's bad-input error of exit code 2.
TEST(SimElasticBounds, ATopologyThatDoesNotFitTheSurvivorsEndsTheRunNamingTheLoss) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "sim_hypercube");
  const auto lossy = fast::testing::run_fast_in(dir,
                                                "train --runtime sim --workers 4 --strategy dpsgd --topology "
                                                "hypercube --elastic --cluster " +
                                                    cluster_file(dir, 5).string() + kTrain);
  EXPECT_EQ(lossy.code, 5) << lossy.output;
  EXPECT_NE(lossy.output.find("dpsgd: the 3 workers left after a loss cannot regroup on their topology: topology "
                              "'hypercube': a hypercube needs a power of two of workers"),
            std::string::npos)
      << lossy.output;
  fs::remove_all(dir);
}

// --min-workers 4: the loss of host 2 leaves 3 workers, and the run ends at the step the survivors
// agreed on (the membership record's), with its checkpoint there when --checkpoint-dir is given, and
// exit code 6 (exit_code::below_min_workers).
TEST(SimElasticBounds, ALossBelowMinWorkersEndsTheRunWithItsCheckpoint) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "below_min");
  const std::string args = " --runtime sim --workers 4 --strategy allreduce --elastic --min-workers 4" + kTrain +
                           "--cluster " + cluster_file(dir, 15).string();
  const auto run =
      fast::testing::run_fast_in(dir, "train" + args + " --summary s.json --metrics m.jsonl --checkpoint-dir ck");
  ASSERT_EQ(run.code, fast::core::exit_code::below_min_workers) << run.output;
  const std::vector<json> records = membership_records(dir / "m.jsonl");
  ASSERT_EQ(records.size(), 1u) << run.output;
  const std::int64_t step = records[0]["step"].get<std::int64_t>();
  EXPECT_EQ(records[0]["workers"], 3);
  const std::string reason =
      "elastic: 3 workers left, below --min-workers 4: the run ended at step " + std::to_string(step) + " of ";
  EXPECT_NE(run.output.find(reason), std::string::npos) << run.output;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["below_min_workers"], true) << s.dump();
  EXPECT_EQ(s["min_workers"], 4) << s.dump();
  EXPECT_EQ(s["ended_at_step"], step) << s.dump();
  EXPECT_EQ(s["live_workers"], 3) << s.dump();
  EXPECT_EQ(s["checkpoint_step"], step) << s.dump();
  EXPECT_LT(step, s["steps"].get<std::int64_t>()) << s.dump();
  const fs::path folder = s["checkpoint"].get<std::string>();
  std::array<char, 32> name{};
  std::snprintf(name.data(), name.size(), "step-%012lld", static_cast<long long>(step));
  EXPECT_EQ(folder.filename(), name.data());
  const json manifest = json::parse(slurp(dir / folder / "manifest.json"));
  EXPECT_EQ(manifest["step"], step);
  EXPECT_EQ(manifest["workers"], 3);
  // The survivors' parameters are equal (one state after the regrouping).
  EXPECT_EQ(s["param_hash_per_worker"][0], s["param_hash_per_worker"][1]) << s.dump();
  EXPECT_EQ(s["param_hash_per_worker"][0], s["param_hash_per_worker"][3]) << s.dump();

  const auto bare = fast::testing::run_fast_in(dir, "train" + args);
  ASSERT_EQ(bare.code, fast::core::exit_code::below_min_workers) << bare.output;
  EXPECT_NE(bare.output.find(reason), std::string::npos) << bare.output;
  EXPECT_NE(bare.output.find("no checkpoint written (see --checkpoint-dir)"), std::string::npos) << bare.output;
  fs::remove_all(dir);
}

// --elastic-lr linear under a constant schedule: the train records of the first member show lr
// 0.05 up to the loss of 1 of 4 workers and 0.05 * 3 / 4 after it.
TEST(SimElasticBounds, LinearLrScalesTheRecordedRate) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "linear_lr");
  const auto run = fast::testing::run_fast_in(
      dir,
      "train --runtime sim --workers 4 --strategy allreduce --elastic --elastic-lr linear --optimizer sgd --lr 0.05 "
      "--schedule constant --log-every 10" +
          kTrain + "--metrics m.jsonl --cluster " + cluster_file(dir, 15).string());
  ASSERT_EQ(run.code, 0) << run.output;
  const std::vector<json> lost = membership_records(dir / "m.jsonl");
  ASSERT_EQ(lost.size(), 1u) << run.output;
  const std::int64_t step = lost[0]["step"].get<std::int64_t>();
  int before = 0, after = 0;
  for (const json& r : records_of(dir / "m.jsonl", "train")) {
    if (r["worker"] != 0) continue;
    // A record's rate is that of its last step (step - 1, 0-based): scaled from `step` on.
    const bool scaled = r["step"].get<std::int64_t>() > step;
    EXPECT_DOUBLE_EQ(r["lr"].get<double>(), scaled ? 0.05 * 3 / 4 : 0.05) << r.dump();
    ++(scaled ? after : before);
  }
  EXPECT_GT(before, 0);
  EXPECT_GT(after, 0);
  fs::remove_all(dir);
}

TEST(ElasticSettings, RefusedWithAReasonBeforeAnyDataIsRead) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "refusals");
  const auto threads = fast::testing::run_fast_in(dir, "train --runtime threads --workers 2 --elastic" + kTrain);
  EXPECT_EQ(threads.code, 2) << threads.output;
  EXPECT_NE(threads.output.find("elastic: set with runtime 'threads', whose workers cannot be lost"), std::string::npos)
      << threads.output;
  const auto ps = fast::testing::run_fast_in(
      dir, "train --runtime sim --workers 4 --elastic --strategy ps --mode sync --compress int8" + kTrain);
  EXPECT_EQ(ps.code, 2) << ps.output;
  EXPECT_NE(ps.output.find("compress = 'int8' keeps a reply link per worker on each server"), std::string::npos)
      << ps.output;
  const auto codec = fast::testing::run_fast_in(
      dir, "train --runtime sim --workers 4 --elastic --strategy dpsgd --compress int8" + kTrain);
  EXPECT_EQ(codec.code, 2) << codec.output;
  EXPECT_NE(codec.output.find("compress = 'int8' keeps CHOCO-gossip references"), std::string::npos) << codec.output;
  const auto robust =
      fast::testing::run_fast_in(dir, "train --runtime sim --workers 4 --elastic --aggregate median" + kTrain);
  EXPECT_EQ(robust.code, 2) << robust.output;
  EXPECT_NE(robust.output.find("aggregate = 'median' is sized for the whole world's gradients"), std::string::npos)
      << robust.output;
  // elastic_lr and min_workers: only with --elastic, and at most the run's workers.
  const std::vector<std::pair<std::string, std::string>> bounds{
      {"--elastic-lr linear", "elastic_lr: set to 'linear' without elastic"},
      {"--elastic-lr square", "unknown value 'square'; expected one of: keep, linear"},
      {"--min-workers 3", "min_workers: set to 3 without elastic"},
      {"--elastic --min-workers 5", "min_workers: expected at most the run's 4 workers, got 5"},
      {"--elastic --min-workers 0", "--min-workers: expected"},
      {"--fault-inject exit-while-admitting@1",
       "fault_inject 'exit-while-admitting@1': exit-while-admitting set "
       "without elastic; expected elastic = true"},
      {"--fault-inject exit-while-agreeing@2",
       "fault_inject 'exit-while-agreeing@2': exit-while-agreeing set without elastic; expected elastic = true"},
      {"--fault-inject exit-while-checkpointing@1",
       "fault_inject 'exit-while-checkpointing@1': exit-while-checkpointing set without checkpoint_dir; expected a "
       "folder to write checkpoints to (--checkpoint-dir)"},
      {"--fault-inject exit-while-ending@1",
       "fault_inject 'exit-while-ending@1': exit-while-ending set without elastic for the synchronous strategy "
       "'allreduce'; expected elastic = true (--elastic) or an asynchronous strategy"},
      {"--fault-inject exit-while-crashing@1", "unknown kind 'exit-while-crashing'"},
      // Past those checks, a kind that kills a process is refused where every worker shares one.
      {"--elastic --fault-inject exit-while-admitting@1",
       "fault_inject 'exit-while-admitting@1': exit-while-admitting kills the worker's process, and under runtime "
       "'sim' every worker runs in this one process (all would end); expected a runtime of processes: "},
      {"--elastic --fault-inject exit-while-ending@1", "exit-while-ending kills the worker's process"},
      {"--strategy adpsgd --fault-inject exit-while-ending@1", "exit-while-ending kills the worker's process"},
      {"--fault-inject exit-while-checkpointing@1 --checkpoint-dir ck",
       "exit-while-checkpointing kills the worker's process"}};
  for (const auto& [flags, message] : bounds) {
    const auto refused =
        fast::testing::run_fast_in(dir, "train --runtime sim --workers 4 --data-dir missing " + flags + kTrain);
    EXPECT_EQ(refused.code, 2) << flags << "\n" << refused.output;
    EXPECT_NE(refused.output.find(message), std::string::npos) << flags << "\n" << refused.output;
  }
  const auto one_process = fast::testing::run_fast_in(
      dir,
      "train --runtime threads --workers 4 --data-dir missing --fault-inject exit-while-checkpointing@1 "
      "--checkpoint-dir ck" +
          kTrain);
  EXPECT_EQ(one_process.code, 2) << one_process.output;
  EXPECT_NE(one_process.output.find("under runtime 'threads' every worker runs in this one process"), std::string::npos)
      << one_process.output;
  EXPECT_FALSE(fs::exists(dir / "ck")) << "refused before any folder is made";
  fs::remove_all(dir);
}

#endif  // FAST_TEST_SIM

#ifdef FAST_TEST_ZMQ

// The percentage of worker 0's last progress line ("[0] epoch E | step S/T (P%)"), or -1.
int progress_percent(const fs::path& log) {
  static const std::regex line("\\[0\\] epoch [0-9]+ \\| step [0-9]+/[0-9]+ \\(([0-9]+)%\\)");
  const std::string text = slurp(log);
  int percent = -1;
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) percent = std::stoi((*it)[1]);
  return percent;
}

// pid of process `rank` of a fast launch, from its "[rank] ... pid P listens on" line.
pid_t worker_pid(const fs::path& log, int rank) {
  return fast::testing::launched_pid(log, rank, fast::testing::kStartBound);
}

// What a run under `fast launch` left after process `rank` was SIGKILLed at 30% of the run.
struct Killed {
  bool reached = false;  // the run reached 30% and the kill happened there
  int status = -1;       // launch's wait status; -1: killed after the time limit
  std::string log;
  double seconds_after_kill = 0;  // from the kill to launch's end
};

// Starts `fast launch LAUNCH -- fast train --runtime zmq --elastic ... TRAIN` in `dir` (a peer
// timeout of 2 s, every worker paced by --slowdown 6 so that the kill lands mid-run), SIGKILLs
// process `rank` once worker 0's progress line reaches 30%, and waits for launch (bounded).
Killed kill_at_30_percent(const fs::path& dir, const std::string& launch, const std::string& train, int rank) {
  const std::string peer_timeout = std::to_string(2 * fast::testing::kRunTimeScale);
  const auto l = fast::testing::spawn_in_group(
      dir,
      kFast + " launch -n 4 " + launch + " --grace 200 --timeout 300 -- " + kFast +
          " train --runtime zmq --elastic --peer-timeout " + peer_timeout +
          " --progress auto --summary s.json --metrics m.jsonl --slowdown 6,6,6,6" + train,
      "launch.log");
  Killed k;
  const pid_t victim = worker_pid(l.log, rank);
  if (victim > 0) {
    const fast::testing::RemovesSocketFiles killed{victim};
    k.reached = fast::testing::poll_until([&] { return progress_percent(l.log) >= 30; },
                                          60 * fast::testing::kRunTimeScale, std::chrono::milliseconds(10));
    ::kill(victim, SIGKILL);
  }
  const auto killed_at = std::chrono::steady_clock::now();
  k.status = fast::testing::wait_or_kill_group(l, 240 * fast::testing::kRunTimeScale);
  k.seconds_after_kill = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  k.log = slurp(l.log);
  return k;
}

struct Loss {
  std::string strategy;
  int victim;  // the process (and worker) killed
};

void PrintTo(const Loss& l, std::ostream* os) { *os << l.strategy << ", process " << l.victim << " killed"; }

class ZmqElastic : public ::testing::TestWithParam<Loss> {};

TEST_P(ZmqElastic, SurvivorsOfAKilledProcessFinishTheRun) {
  const Loss& loss = GetParam();
  const fs::path dir =
      fast::testing::test_dir("fast_elastic_cli", "zmq_" + dir_name(loss.strategy) + "_" + std::to_string(loss.victim));
  const std::string train = " --strategy " + loss.strategy + kTrain;
  // The run without the loss: under threads, whose synchronous runs end as zmq's do (zmq_cli_test).
  const auto whole =
      fast::testing::run_fast_in(dir, "train --runtime threads --workers 4 --summary whole.json" + train);
  ASSERT_EQ(whole.code, 0) << whole.output;
  const Killed k = kill_at_30_percent(dir, "", train, loss.victim);
  const std::string& log = k.log;
  ASSERT_TRUE(k.reached) << log;
  ASSERT_NE(k.status, -1) << "fast launch did not end:\n" << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  EXPECT_NE(log.find("elastic: worker(s) " + std::to_string(loss.victim) + " lost; 3 workers go on from step"),
            std::string::npos)
      << log;
  // The first survivor's process writes the records of the regrouping and the summary.
  const std::string first = loss.victim == 0 ? "1" : "0";
  expect_survivors_finished(json::parse(slurp(dir / "s.json")), json::parse(slurp(dir / "whole.json")), loss.victim,
                            dir / ("m.rank" + first + ".jsonl"));
  fs::remove_all(dir);
}

// --min-workers 4: the survivors of process 2's loss end the run at the step they agreed on, with
// its checkpoint and the summary, each process saying why; launch reports the first failure (the
// SIGKILLed process).
TEST(ZmqElasticBounds, SurvivorsBelowMinWorkersEndTheRunWithItsCheckpoint) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "zmq_below_min");
  const Killed k = kill_at_30_percent(dir, "", " --strategy allreduce --min-workers 4 --checkpoint-dir ck" + kTrain, 2);
  const std::string& log = k.log;
  ASSERT_TRUE(k.reached) << log;
  ASSERT_NE(k.status, -1) << "fast launch did not end:\n" << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["below_min_workers"], true) << s.dump();
  EXPECT_EQ(s["live_workers"], 3) << s.dump();
  const std::int64_t step = s["ended_at_step"].get<std::int64_t>();
  EXPECT_EQ(s["checkpoint_step"], step) << s.dump();
  EXPECT_EQ(json::parse(slurp(dir / s["checkpoint"].get<std::string>() / "manifest.json"))["workers"], 3);
  for (int survivor : {0, 1, 3})
    EXPECT_NE(log.find("[" + std::to_string(survivor) +
                       "] elastic: 3 workers left, below --min-workers 4: the run "
                       "ended at step " +
                       std::to_string(step)),
              std::string::npos)
        << "process " << survivor << ":\n"
        << log;
  fs::remove_all(dir);
}

std::string loss_name(const ::testing::TestParamInfo<Loss>& info) {
  return dir_name(info.param.strategy) + "_process_" + std::to_string(info.param.victim);
}

// Worker 0 (the rendezvous, the first member) lost too, with every synchronous strategy; with ps,
// worker 0 also hosts the server of shard 0. local-sgd, dpsgd and allreduce with dgc regroup as
// allreduce does (tests/strategy/elastic_test.cpp): labelled long (`make test-all`).
INSTANTIATE_TEST_SUITE_P(Strategies, ZmqElastic,
                         ::testing::Values(Loss{"allreduce", 2}, Loss{"allreduce", 0},
                                           Loss{"ps --mode sync --servers 2", 0}),
                         loss_name);
INSTANTIATE_TEST_SUITE_P(LongStrategies, ZmqElastic,
                         ::testing::Values(Loss{"local-sgd --period 4", 2}, Loss{"local-sgd --period 4", 0},
                                           Loss{"dpsgd", 2}, Loss{"dpsgd", 0},
                                           Loss{"allreduce --dgc --compress topk:ratio=0.01", 2}),
                         loss_name);

// fast launch --restart 1: the killed process is started again, takes its rank back and joins the
// survivors at a step boundary with their state; the run ends with 4 workers, every step of the run
// without a loss (under threads), a final accuracy within 1 point of it, equal parameters where the
// strategy's replicas are identical, and launch with exit code 0.
class ZmqElasticRestart : public ::testing::TestWithParam<Loss> {};

TEST_P(ZmqElasticRestart, TheRestartedProcessJoinsAndTheRunEndsWithEveryWorker) {
  const std::string& strategy = GetParam().strategy;
  const int victim = GetParam().victim;
  const fs::path dir =
      fast::testing::test_dir("fast_elastic_cli", "zmq_join_" + dir_name(strategy) + "_" + std::to_string(victim));
  const std::string train = " --strategy " + strategy + kTrain;
  const auto whole =
      fast::testing::run_fast_in(dir, "train --runtime threads --workers 4 --summary whole.json" + train);
  ASSERT_EQ(whole.code, 0) << whole.output;
  const Killed k = kill_at_30_percent(dir, "--restart 1", train, victim);
  const std::string& log = k.log;
  ASSERT_TRUE(k.reached) << log;
  ASSERT_TRUE(k.status != -1 && WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << log;
  EXPECT_NE(log.find("elastic: worker " + std::to_string(victim) + " joined the run at step"), std::string::npos)
      << log;
  if (victim == 0) {
    EXPECT_NE(log.find("[1] [fast warn] zmq runtime: process 1 serves the rendezvous now"), std::string::npos) << log;
  }
  EXPECT_EQ(log.find("final test accuracy"), log.rfind("final test accuracy")) << "one final line:\n" << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  const json reference = json::parse(slurp(dir / "whole.json"));
  // The run's training time is the longest a member trained, from before the kill (at 30%): more
  // than what followed the kill (a restarted process 0, which writes the summary, trained less).
  EXPECT_GT(s["wall_seconds"].get<double>(), k.seconds_after_kill) << s.dump();
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({victim})) << s.dump();
  EXPECT_EQ(s["steps"], reference["steps"]) << s.dump();
  EXPECT_NEAR(s["final_accuracy"].get<double>(), reference["final_accuracy"].get<double>(), 0.01)
      << "with the loss and the join " << s.dump() << "\nwithout " << reference.dump();
  const json& hashes = s["param_hash_per_worker"];
  ASSERT_EQ(hashes.size(), 4u) << s.dump();
  // dpsgd's replicas differ by design (consensus_distance measured, not 0 by declaration).
  const bool identical = s["consensus_distance"].get<double>() == 0;
  for (int w = 0; w < 4; ++w) {
    EXPECT_TRUE(hashes[w].is_string()) << s.dump();
    if (identical) {
      EXPECT_EQ(hashes[w], hashes[0]) << s.dump();
    }
  }
  // The group's first member writes the records: worker 1 while worker 0 is out.
  const std::vector<json> records = membership_records(dir / (victim == 0 ? "m.rank1.jsonl" : "m.rank0.jsonl"));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["change"], "lost");
  EXPECT_EQ(records[0]["workers"], 3);
  EXPECT_EQ(records[1]["change"], "joined");
  EXPECT_EQ(records[1]["worker"], victim);
  EXPECT_EQ(records[1]["workers"], 4);
  EXPECT_GE(records[1]["step"].get<std::int64_t>(), records[0]["step"].get<std::int64_t>());
  fs::remove_all(dir);
}

// Process 2 with a codec (the survivors' all-reduce and the newcomer's residuals start afresh at
// each change), and process 0, which served the rendezvous: process 1, the lowest survivor on its
// host, serves it in its place, and the restarted process 0 (FAST_RESTARTED=1) asks it to take rank
// 0 back; the summary comes from process 0 again (one writer).
INSTANTIATE_TEST_SUITE_P(Strategies, ZmqElasticRestart,
                         ::testing::Values(Loss{"allreduce --compress int8", 2}, Loss{"allreduce", 0}), loss_name);
// ps: the restarted process hosted the server of shard 1; the survivors placed it on worker 2, and
// the admission places the servers again on workers 0 and 1. local-sgd and dpsgd join as allreduce
// does. Labelled long (`make test-all`).
INSTANTIATE_TEST_SUITE_P(LongStrategies, ZmqElasticRestart,
                         ::testing::Values(Loss{"allreduce", 2}, Loss{"ps --mode sync --servers 2", 1},
                                           Loss{"local-sgd --period 4", 2},
                                           Loss{"local-sgd --period 4 --compress int8", 2}, Loss{"dpsgd", 2}),
                         loss_name);

// A join racing a loss: process 2 is SIGKILLed at 30% and started again (--restart 1); when the
// members agree to admit it, process `fault` kills itself (fault_inject `kind`: exit-while-admitting
// after the agreement, before it sends anything; exit-while-agreeing inside the agreement).
// Whatever the newcomer answers, the run must end with the 3 workers left (no TimeoutError), at
// every step of the run (`whole.json`: the same run under threads), with equal parameters, worker 2
// rejoined. Returns launch's log; `dir` keeps the run's files.
std::string expect_join_survives_a_loss(const fs::path& dir, const std::string& kind, int fault) {
  const std::string train = " --strategy allreduce" + kTrain;
  const auto whole =
      fast::testing::run_fast_in(dir, "train --runtime threads --workers 4 --summary whole.json" + train);
  EXPECT_EQ(whole.code, 0) << whole.output;
  const Killed k =
      kill_at_30_percent(dir, "--restart 1", " --fault-inject " + kind + "@" + std::to_string(fault) + train, 2);
  const std::string& log = k.log;
  EXPECT_TRUE(k.reached) << log;
  EXPECT_NE(k.status, -1) << "fast launch did not end:\n" << log;
  const std::size_t fired = log.find("fault_inject: worker " + std::to_string(fault) + " kills itself");
  EXPECT_NE(fired, std::string::npos) << log;
  EXPECT_NE(log.find("worker 2 (" + kind + ")", fired), std::string::npos) << log;
  EXPECT_NE(log.find("elastic: worker 2 joined the run at step"), std::string::npos) << log;
  EXPECT_EQ(log.find("TimeoutError"), std::string::npos) << log;
  EXPECT_EQ(log.find("did not complete within"), std::string::npos) << log;
  if (!fs::exists(dir / "s.json") || !fs::exists(dir / "whole.json")) {
    ADD_FAILURE() << "no summary:\n" << log;
    return log;
  }
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["steps"], json::parse(slurp(dir / "whole.json"))["steps"]) << s.dump();
  EXPECT_EQ(s["live_workers"], 3) << s.dump();
  EXPECT_EQ(s["rejoined_workers"], json::array({2})) << s.dump();
  const json& hashes = s["param_hash_per_worker"];
  EXPECT_EQ(hashes.size(), 4u) << s.dump();
  const int first = fault == 0 ? 1 : 0;
  for (int w = 0; w < 4 && hashes.size() == 4u; ++w) {
    if (w == fault)
      EXPECT_TRUE(hashes[w].is_null()) << s.dump();
    else
      EXPECT_TRUE(hashes[w].is_string() && hashes[w] == hashes[first]) << "worker " << w << ": " << s.dump();
  }
  return log;
}

// The first member (worker 0, the source of the state) lost: the newcomer calls the admission off,
// the members regroup without worker 0 and admit worker 2 later with worker 1's state; worker 1,
// leading then, records the loss of 0 (2 workers left) and the join (3).
TEST(ZmqElasticJoin, TheFirstMemberLostWhileAdmittingCallsTheJoinOff) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "zmq_join_race_first");
  const std::string log = expect_join_survives_a_loss(dir, "exit-while-admitting", 0);
  EXPECT_NE(
      log.find("elastic: worker 0 lost before worker 2 had the state of worker 0; it waits for the next admission"),
      std::string::npos)
      << log;
  const std::vector<json> records = membership_records(dir / "m.rank1.jsonl");
  ASSERT_EQ(records.size(), 2u) << log;
  EXPECT_EQ(records[0]["change"], "lost");
  EXPECT_EQ(records[0]["worker"], 0);
  EXPECT_EQ(records[0]["workers"], 2);
  EXPECT_EQ(records[1]["change"], "joined");
  EXPECT_EQ(records[1]["worker"], 2);
  EXPECT_EQ(records[1]["workers"], 3);
  EXPECT_GE(records[1]["step"].get<std::int64_t>(), records[0]["step"].get<std::int64_t>());
  fs::remove_all(dir);
}

// Another member (worker 1) lost: whether the newcomer had worker 0's state first (it joins, then
// the group regroups without worker 1) or not (it calls the admission off and joins later), the
// run ends with workers 0, 2, 3. Labelled long (`make test-all`): the first member's case above
// runs in every `make test`.
TEST(LongZmqElasticJoin, AnotherMemberLostWhileAdmittingLeavesTheOthersAgreeing) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "zmq_join_race_other");
  const std::string log = expect_join_survives_a_loss(dir, "exit-while-admitting", 1);
  EXPECT_NE(log.find("elastic: worker(s) 1 lost"), std::string::npos) << log;
  fs::remove_all(dir);
}

// A loss inside the agreement to admit: process 1 kills itself once its first message of the
// agreement's all-gather left (exit-while-agreeing), so the all-gather completes on worker 0 (the
// source of the state) and fails on worker 3, which regroups. The newcomer waits for the header of
// every member it is to join: worker 3 sends none, so it calls the admission off once it sees worker
// 1 lost, the members regroup without 1 and admit worker 2 later (before, the newcomer joined worker
// 0 alone, the regrouping counted it out, and its process ended with TimeoutError). Labelled long
// (`make test-all`), as the other member's case above.
TEST(LongZmqElasticJoin, ALossInsideTheAgreementToAdmitCallsTheJoinOff) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "zmq_join_race_agreement");
  const std::string log = expect_join_survives_a_loss(dir, "exit-while-agreeing", 1);
  EXPECT_NE(log.find("elastic: worker 1 lost before worker 2 had the state of worker 0; it waits for the next "
                     "admission"),
            std::string::npos)
      << log;
  fs::remove_all(dir);
}

// A loss during a checkpoint write: process 2 kills itself once its file of the checkpoint at step
// 300 is in place (fault_inject exit-while-checkpointing), before the workers check together that
// every file was written. The survivors find the loss in that check, regroup at step 300 (the last
// step that completed) and finish the run; the checkpoint of step 300 never gets its manifest (a
// resume passes it over) and the next complete write removes it; the later ones hold the 3
// survivors' files.
TEST(ZmqElasticCheckpoint, ALossDuringACheckpointWriteLeavesItIncompleteAndTheSurvivorsGoOn) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_cli", "zmq_checkpoint_loss");
  const std::string train = " --strategy allreduce" + kTrain;
  const auto whole =
      fast::testing::run_fast_in(dir, "train --runtime threads --workers 4 --summary whole.json" + train);
  ASSERT_EQ(whole.code, 0) << whole.output;
  const int scale = fast::testing::kRunTimeScale;
  auto l = fast::testing::spawn_in_group(
      dir,
      kFast + " launch -n 4 --grace 200 --timeout 300 -- " + kFast + " train --runtime zmq --elastic --peer-timeout " +
          std::to_string(2 * scale) +
          " --summary s.json --metrics m.jsonl --checkpoint-dir ck --checkpoint-every 300 "
          "--fault-inject exit-while-checkpointing@2" +
          train,
      "launch.log");
  const fast::testing::RemovesSocketFiles killed{worker_pid(l.log, 2)};
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end:\n" << log;
  EXPECT_NE(log.find("fault_inject: worker 2 kills itself while writing the checkpoint of step 300"), std::string::npos)
      << log;
  EXPECT_NE(log.find("elastic: worker(s) 2 lost; 3 workers go on from step 300 "), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  expect_survivors_finished(json::parse(slurp(dir / "s.json")), json::parse(slurp(dir / "whole.json")), 2,
                            dir / "m.rank0.jsonl");
  const std::vector<json> records = membership_records(dir / "m.rank0.jsonl");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["step"], 300);
  EXPECT_FALSE(fs::exists(dir / "ck" / "step-000000000300")) << "the incomplete checkpoint was not removed";
  for (const char* step : {"step-000000000900", "step-000000000936"}) {
    const fs::path manifest = dir / "ck" / step / "manifest.json";
    ASSERT_TRUE(fs::exists(manifest)) << manifest;
    EXPECT_EQ(json::parse(slurp(manifest))["workers"], 3) << manifest;
    EXPECT_FALSE(fs::exists(dir / "ck" / step / "worker-2.ckpt")) << step;
  }
  fs::remove_all(dir);
}

#endif  // FAST_TEST_ZMQ

}  // namespace
