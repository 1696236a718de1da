// Periodic checkpoints of asynchronous runs (docs/faults.md, "Periodic checkpoints of asynchronous
// runs"): each worker writes its own file every checkpoint_every of its own steps, without waiting
// for the others; a run killed with SIGKILL (no signal handler, no final checkpoint) resumes from
// the newest step folder in which every worker's file is in place. Every command runs in a process
// group of its own, bounded in time and killed as a group.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <functional>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "resume_runs.hpp"

namespace {

namespace fs = std::filesystem;
using fast::testing::slurp;
using nlohmann::json;
using namespace fast::testing::resume_runs;

// The steps of the complete checkpoints (step folders with a manifest) of `ck`, newest first.
std::vector<std::int64_t> complete_steps(const fs::path& ck) {
  std::vector<std::int64_t> steps;
  for (const auto& entry : fs::directory_iterator(ck)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("step-") && fs::exists(entry.path() / "manifest.json"))
      steps.push_back(std::stoll(name.substr(5)));
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

// Starts `fast train ARGS` of 4 workers under threads, waits until `ready()` (at most 240 s), then
// SIGKILLs its process group. Returns the log; the run must have been killed before its summary.
std::string kill_when(const fs::path& dir, const std::string& args, const std::function<bool()>& ready) {
  fs::remove(dir / "s.json");
  const auto s = fast::testing::spawn_in_group(dir, command("threads", args, 4));
  const bool reached = fast::testing::poll_until(ready, 240);
  ::kill(-s.pid, SIGKILL);
  const int status = fast::testing::wait_or_kill_group(s, 30);
  const std::string log = slurp(s.log);
  EXPECT_TRUE(reached) << log;
  EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << log;
  EXPECT_FALSE(fs::exists(dir / "s.json")) << "the run ended before the kill:\n" << log;
  return log;
}

// adpsgd, 4 workers, 600 steps each, a checkpoint every 50 of each worker's own steps; SIGKILL once
// step 150 is complete. The newest complete folder K holds every worker's file; the same command
// with --resume-if-present resumes from K (the log and resumed_from_step say so) and ends the run.
TEST(AsynchronousPeriodic, ASigkilledRunResumesFromTheNewestFolderEveryWorkerWrote) {
  const fs::path dir = fast::testing::test_dir("fast_periodic_resume", "adpsgd_kill");
  fs::remove_all(dir / "ck");
  const std::string args = "--strategy adpsgd --steps 600 --checkpoint-dir ck --checkpoint-every 50 ";
  const std::string log =
      kill_when(dir, args, [&] { return fs::exists(dir / "ck" / "step-000000000150" / "manifest.json"); });
  ASSERT_FALSE(HasFailure());
  const std::vector<std::int64_t> complete = complete_steps(dir / "ck");
  ASSERT_FALSE(complete.empty()) << log;
  const std::int64_t newest = complete.front();
  EXPECT_GE(newest, 150);
  EXPECT_EQ(newest % 50, 0);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_TRUE(fs::exists(dir / "ck" / fmt::format("step-{:012d}", newest) / fmt::format("worker-{}.ckpt", rank)));
  const Ran resumed = run(dir, "threads", args + "--resume-if-present", 4);
  ASSERT_TRUE(ok(resumed)) << resumed.log;
  EXPECT_NE(resumed.log.find(fmt::format("resume: continuing from 'ck/step-{:012d}' (step {})", newest, newest)),
            std::string::npos)
      << resumed.log;
  EXPECT_EQ(resumed.summary["resumed_from_step"], newest);
  EXPECT_EQ(resumed.summary["steps"], 600);
  EXPECT_EQ(resumed.summary["checkpoint_step"], 600) << resumed.summary.dump();
  EXPECT_FALSE(resumed.summary["diverged"].get<bool>()) << resumed.summary.dump();
  EXPECT_GT(resumed.summary["final_accuracy"].get<double>(), 0.7) << resumed.summary.dump();
}

// Every asynchronous strategy writes periodic checkpoints with its own state (gosgd's numerator and
// mass, acid's x~, easgd's centre, a ps server's shard and optimizer) and resumes from one: 4
// workers, 200 steps, a checkpoint every 50 of each worker's own steps; with the final checkpoint
// removed, --resume takes the newest complete periodic one (as listed here) and trains to the end.
class PeriodicStrategies : public ::testing::TestWithParam<std::string> {};

TEST_P(PeriodicStrategies, ResumeFromTheNewestCompletePeriodicCheckpoint) {
  const fs::path dir = fast::testing::test_dir("fast_periodic_resume", fast::testing::dir_name(GetParam()));
  fs::remove_all(dir / "ck");
  const std::string args = "--strategy " + GetParam() + " --steps 200 --schedule constant ";
  const Ran whole = run(dir, "threads", args + "--checkpoint-dir ck --checkpoint-every 50 --checkpoint-keep 10", 4);
  ASSERT_TRUE(ok(whole)) << whole.log;
  EXPECT_EQ(whole.summary["checkpoint_step"], 200) << whole.summary.dump();
  fs::remove_all(dir / "ck" / "step-000000000200");
  const std::vector<std::int64_t> complete = complete_steps(dir / "ck");
  ASSERT_FALSE(complete.empty()) << whole.log;
  EXPECT_EQ(complete.front() % 50, 0);
  const Ran resumed = run(dir, "threads", args + "--resume ck", 4);
  ASSERT_TRUE(ok(resumed)) << resumed.log;
  EXPECT_EQ(resumed.summary["resumed_from_step"], complete.front());
  EXPECT_EQ(resumed.summary["steps"], 200);
  EXPECT_FALSE(resumed.summary["diverged"].get<bool>()) << resumed.summary.dump();
  EXPECT_GT(resumed.summary["final_accuracy"].get<double>(), 0.5) << resumed.summary.dump();
}

INSTANTIATE_TEST_SUITE_P(Strategies, PeriodicStrategies,
                         ::testing::Values("gosgd", "acid", "easgd", "ps --mode async", "ps --mode ssp --servers 2"),
                         [](const auto& info) { return fast::testing::dir_name(info.param); });

// The acceptance of periodic checkpoints: adpsgd, 4 workers, 3 epochs of mlp (1404 steps each)
// under the cosine schedule, a checkpoint every 100 of each worker's own steps, SIGKILLed at about
// half of the run (the mean of the workers' latest logged steps at 700), resumed to the end with
// --resume-if-present: the accuracy is within 1 point of the run straight (the three runs took 37 s
// on a loaded 2-core machine).
TEST(AsynchronousPeriodicAccuracy, ASigkilledRunResumedReachesTheAccuracyOfTheRunStraight) {
  const fs::path dir = fast::testing::test_dir("fast_periodic_resume", "adpsgd_accuracy");
  fs::remove_all(dir / "ck");
  fs::remove(dir / "m.jsonl");
  const std::string length = "--strategy adpsgd --epochs 3 ";
  const std::string periodic = "--checkpoint-dir ck --checkpoint-every 100 ";
  kill_when(dir, length + periodic + "--log-every 20 --metrics m.jsonl",
            [&] { return mean_latest_step({dir / "m.jsonl"}) >= 700; });
  ASSERT_FALSE(HasFailure());
  const Ran resumed = run(dir, "threads", length + periodic + "--resume-if-present", 4);
  ASSERT_TRUE(ok(resumed)) << resumed.log;
  ASSERT_TRUE(resumed.summary["resumed_from_step"].is_number()) << resumed.summary.dump();
  const std::int64_t from = resumed.summary["resumed_from_step"].get<std::int64_t>();
  EXPECT_GE(from, 400) << resumed.summary.dump();
  const Ran straight = run(dir, "threads", length, 4);
  ASSERT_TRUE(ok(straight)) << straight.log;
  std::cout << "adpsgd threads: killed, resumed from step " << from
            << " of each worker: " << resumed.summary["final_accuracy"] << ", straight "
            << straight.summary["final_accuracy"] << std::endl;
  EXPECT_GE(resumed.summary["final_accuracy"].get<double>(), straight.summary["final_accuracy"].get<double>() - 0.01)
      << "resumed " << resumed.summary.dump() << "\nstraight " << straight.summary.dump();
}

}  // namespace
