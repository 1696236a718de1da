// The end of an elastic synchronous run survives a loss (src/training/run_end.hpp; docs/faults.md,
// "Elastic synchronous training"): `fast train --runtime sim --elastic` with host 2 turned off at
// instants around the run's last step, the final checkpoint, the final evaluation, the totals and
// the closing barrier (found from the same run without a loss: its simulated length). Every run
// ends with exit code 0, every step, the final checkpoint, equal parameters on the workers that
// finished, the accuracy of the run without a loss, one `eval` record per evaluation, and a
// `membership` record exactly when the summary counts the loss. Before the end survived losses,
// each of these runs ended with PeerLost (exit code 3) and no summary. An asynchronous run's end
// (after its strategy's finish) likewise. Under `zmq` (`fast launch
// -n 4`) a process kills itself after the final evaluation (fault_inject exit-while-ending); every
// command runs in a process group of its own, bounded in time and killed as a group.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdint>
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
using fast::testing::slurp;
using nlohmann::json;

const std::string kFast = std::string(FAST_TEST_BIN_DIR) + "/fast";

using fast::testing::lossy_cluster_file;

int count_records(const fs::path& metrics, const std::string& event) {
  return static_cast<int>(fast::testing::records_of(metrics, event).size());
}

#ifdef FAST_TEST_SIM

// The run of `args` without a loss, whose end the lossy runs are placed against.
struct Lossless {
  fast::testing::FastResult run;
  json summary;         // empty when the run failed
  double end = 0;       // its simulated seconds
  int evaluations = 0;  // its `eval` records
};

Lossless run_lossless(const fs::path& dir, const std::string& args) {
  Lossless out{.run = fast::testing::run_fast_in(dir, args + "--summary whole.json --metrics whole.jsonl --cluster " +
                                                          lossy_cluster_file(dir, "whole.toml", 0).string())};
  if (out.run.code != 0) return out;
  out.summary = json::parse(slurp(dir / "whole.json"));
  out.end = out.summary["simulated_seconds"].get<double>();
  out.evaluations = count_records(dir / "whole.jsonl", "eval");
  return out;
}

TEST(SimElasticEnd, ALossWhileTheRunEndsLeavesEveryResult) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_end", "allreduce");
  const std::string args =
      "train --runtime sim --workers 4 --strategy allreduce --elastic --model mlp --seed 11 --batch 32 --steps 100 "
      "--eval-every 0 --checkpoint-dir ck ";
  const Lossless whole = run_lossless(dir, args);
  ASSERT_EQ(whole.run.code, 0) << whole.run.output;
  const json& reference = whole.summary;
  const double end = whole.end;
  const std::int64_t steps = reference["steps"].get<std::int64_t>();
  const int evaluations = whole.evaluations;
  // Seconds before the end: in the last step and the final evaluation (the survivors regroup from
  // the last step), and in the closing barrier (every member had every result). The instants move
  // with the simulated costs; the coverage checks below say when they must be chosen again.
  bool after_last_step = false, in_barrier = false;
  for (const double before : {0.001, 0.0004, 0.0002}) {
    SCOPED_TRACE("host 2 off " + std::to_string(before) + " s before the end");
    fs::remove_all(dir / "ck");
    const auto run = fast::testing::run_fast_in(dir, args + "--summary s.json --metrics m.jsonl --cluster " +
                                                         lossy_cluster_file(dir, "lossy.toml", end - before).string());
    ASSERT_EQ(run.code, 0) << run.output;
    const json s = json::parse(slurp(dir / "s.json"));
    EXPECT_EQ(s["steps"], reference["steps"]) << s.dump();
    // Every worker took every step, the lost one included (the step the survivors went on from).
    EXPECT_EQ(s["steps_per_worker"], json::array({steps, steps, steps, steps})) << s.dump();
    EXPECT_EQ(s["epochs"], reference["epochs"]) << s.dump();
    EXPECT_EQ(s["checkpoint_step"], steps) << s.dump();
    EXPECT_TRUE(fs::exists(dir / "ck" / fs::path(s["checkpoint"].get<std::string>()).filename() / "manifest.json"));
    EXPECT_EQ(s["final_accuracy"], reference["final_accuracy"]) << s.dump();
    const json& hashes = s["param_hash_per_worker"];
    for (int w = 0; w < 4; ++w) {
      if (!hashes[w].is_null()) {
        EXPECT_EQ(hashes[w], reference["param_hash"]) << "worker " << w << ": " << s.dump();
      }
    }
    EXPECT_EQ(count_records(dir / "m.jsonl", "eval"), evaluations);
    const int live = s["live_workers"].get<int>();
    EXPECT_EQ(count_records(dir / "m.jsonl", "membership"), 4 - live) << run.output;
    after_last_step = after_last_step || run.output.find("workers go on from step " + std::to_string(steps) +
                                                         " with") != std::string::npos;
    in_barrier = in_barrier || run.output.find("ended their run or were lost while it ended") != std::string::npos;
  }
  EXPECT_TRUE(after_last_step) << "no loss found after the last step: choose the instants again";
  EXPECT_TRUE(in_barrier) << "no loss found in the closing barrier: choose the instants again";
  fs::remove_all(dir);
}

// An asynchronous run (adpsgd, no --elastic: its survivors always go on) loses host 2 after its
// strategy's finish: 4 and 0.2 ms of simulated time before the end of the same run without a loss,
// in the final evaluation or the totals, and in the closing barrier. Each run ends with exit code
// 0 and its summary (the loss counted where the totals were gathered again without it), the
// accuracy of the run without a loss within a point, and one `eval` record per evaluation.
TEST(SimAsynchronousEnd, ALossAfterTheStrategysFinishLeavesEveryResult) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_end", "adpsgd");
  const std::string args =
      "train --runtime sim --workers 4 --strategy adpsgd --model mlp --seed 11 --batch 32 --steps 150 --eval-every 0 ";
  const Lossless whole = run_lossless(dir, args);
  ASSERT_EQ(whole.run.code, 0) << whole.run.output;
  const json& reference = whole.summary;
  const double end = whole.end;
  const int evaluations = whole.evaluations;
  bool regrouped = false, in_barrier = false;
  for (const double before : {0.004, 0.0002}) {
    SCOPED_TRACE("host 2 off " + std::to_string(before) + " s before the end");
    const auto run = fast::testing::run_fast_in(dir, args + "--summary s.json --metrics m.jsonl --cluster " +
                                                         lossy_cluster_file(dir, "lossy.toml", end - before).string());
    ASSERT_EQ(run.code, 0) << run.output;
    const json s = json::parse(slurp(dir / "s.json"));
    const int live = s["live_workers"].get<int>();
    if (live == 3) {
      EXPECT_EQ(s["lost_workers"], json::array({2})) << s.dump();
    } else {
      EXPECT_EQ(live, 4) << s.dump();
    }
    EXPECT_NEAR(s["final_accuracy"].get<double>(), reference["final_accuracy"].get<double>(), 0.01) << s.dump();
    EXPECT_EQ(count_records(dir / "m.jsonl", "eval"), evaluations);
    regrouped =
        regrouped || run.output.find("worker(s) 2 lost while the run ended; 3 workers end it") != std::string::npos;
    in_barrier = in_barrier || run.output.find("ended their run or were lost while it ended") != std::string::npos;
  }
  EXPECT_TRUE(regrouped) << "no loss found in the end before its barrier: choose the instants again";
  EXPECT_TRUE(in_barrier) << "no loss found in the closing barrier: choose the instants again";
  fs::remove_all(dir);
}

#endif  // FAST_TEST_SIM

#ifdef FAST_TEST_ZMQ

// Process 2 of 4 kills itself once the final evaluation is done, before it sends its totals
// (fault_inject exit-while-ending), in an elastic allreduce run and in an asynchronous adpsgd run.
// The others find the loss in the gathering of the totals or in the closing barrier (after the
// peer timeout), regroup there, gather the totals again among themselves and end with a summary:
// the loss in `lost_workers`, one `eval` record per evaluation and one `membership` record;
// allreduce: equal parameters and the accuracy of the same run under `threads` within a point.
class ZmqEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(ZmqEnd, AProcessLostAfterTheFinalEvaluationLeavesTheOthersTheirSummary) {
  const bool asynchronous = GetParam() == "adpsgd";
  const fs::path dir = fast::testing::test_dir("fast_elastic_end", "zmq_" + GetParam());
  const std::string train =
      " --strategy " + GetParam() + " --model mlp --seed 11 --batch 64 --epochs 1 --eval-every 0 ";
  const auto whole = fast::testing::run_fast_in(
      dir, "train --runtime threads --workers 4 --summary whole.json --metrics whole.jsonl" + train);
  ASSERT_EQ(whole.code, 0) << whole.output;
  const json reference = json::parse(slurp(dir / "whole.json"));
  const int scale = fast::testing::kRunTimeScale;
  const auto l = fast::testing::spawn_in_group(
      dir,
      kFast + " launch -n 4 --grace 200 --timeout 300 -- " + kFast + " train --runtime zmq" +
          (asynchronous ? "" : " --elastic") + " --peer-timeout " + std::to_string(2 * scale) +
          " --summary s.json --metrics m.jsonl --fault-inject exit-while-ending@2" + train,
      "launch.log");
  const fast::testing::RemovesSocketFiles killed{fast::testing::launched_pid(l.log, 2, fast::testing::kStartBound)};
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end:\n" << log;
  EXPECT_NE(log.find("fault_inject: worker 2 kills itself at the end of the run"), std::string::npos) << log;
  const std::string steps = std::to_string(reference["steps"].get<std::int64_t>());
  const std::string regrouped = asynchronous
                                    ? "asynchronous training: worker(s) 2 lost while the run ended; 3 workers end it"
                                    : "elastic: worker(s) 2 lost; 3 workers go on from step " + steps + " ";
  EXPECT_NE(log.find(regrouped), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["lost_workers"], json::array({2})) << s.dump();
  EXPECT_EQ(s["live_workers"], 3) << s.dump();
  EXPECT_TRUE(s["param_hash_per_worker"][2].is_null()) << s.dump();
  if (!asynchronous) {
    EXPECT_EQ(s["steps"], reference["steps"]) << s.dump();
    EXPECT_NEAR(s["final_accuracy"].get<double>(), reference["final_accuracy"].get<double>(), 0.01) << s.dump();
    for (int w : {0, 1, 3}) EXPECT_EQ(s["param_hash_per_worker"][w], s["param_hash"]) << s.dump();
  }
  EXPECT_EQ(count_records(dir / "m.rank0.jsonl", "eval"), count_records(dir / "whole.jsonl", "eval"));
  EXPECT_EQ(count_records(dir / "m.rank0.jsonl", "membership"), 1);
  fs::remove_all(dir);
}

// Process 0, the summary's writer, kills itself once the end's closing barrier is passed, before
// its process writes its outputs (fault_inject exit-after-ending): the others leave at once, and the
// summary file is there, written before that barrier, with every worker live; so is the model file
// of --save-model (it was written after the barrier, and lost).
TEST_P(ZmqEnd, TheSummarysWriterLostAfterTheClosingBarrierHasWrittenIt) {
  const bool asynchronous = GetParam() == "adpsgd";
  const fs::path dir = fast::testing::test_dir("fast_elastic_end", "zmq_after_" + GetParam());
  const int scale = fast::testing::kRunTimeScale;
  const auto l = fast::testing::spawn_in_group(
      dir,
      kFast + " launch -n 4 --grace 200 --timeout 300 -- " + kFast + " train --runtime zmq" +
          (asynchronous ? "" : " --elastic") + " --peer-timeout " + std::to_string(2 * scale) +
          " --summary s.json --save-model final.npy --fault-inject exit-after-ending@0 --strategy " + GetParam() +
          " --model mlp --seed 11 --batch 64 --steps 40 --eval-every 0",
      "launch.log");
  const fast::testing::RemovesSocketFiles killed{fast::testing::launched_pid(l.log, 0, fast::testing::kStartBound)};
  const int status = fast::testing::wait_or_kill_group(l, 240 * scale);
  const std::string log = slurp(l.log);
  ASSERT_NE(status, -1) << "fast launch did not end:\n" << log;
  EXPECT_NE(log.find("fault_inject: worker 0 kills itself after the end's closing barrier"), std::string::npos) << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL) << log;  // launch: the first failure's
  ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
  EXPECT_TRUE(fs::exists(dir / "final.npy")) << log;
  const json s = json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(s["live_workers"], 4) << s.dump();
  EXPECT_EQ(s.value("lost_workers", json::array()), json::array()) << s.dump();
  if (!asynchronous) {
    for (int w = 1; w < 4; ++w) EXPECT_EQ(s["param_hash_per_worker"][w], s["param_hash"]) << s.dump();
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Strategies, ZmqEnd, ::testing::Values("allreduce", "adpsgd"),
                         [](const auto& info) { return info.param; });

#endif  // FAST_TEST_ZMQ

}  // namespace
